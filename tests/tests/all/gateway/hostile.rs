//! Clients that misbehave on purpose: garbage and hostile JSON, heads over the
//! limit, connections that trickle bytes (slowloris). Each gets a clear error or a
//! closed connection of its own, the gateway does not panic, and the well-behaved
//! client next to it is answered throughout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use mcpbox_tests::gateway::{HttpResponse, TOKEN, http, serve_http};
use mcpbox_tests::http::ServerProcess;
use mcpbox_tests::stdio::StdioPeer;
use serde_json::{Value, json};

use crate::{POST, config, meta, stateless_call, stdio_gateway, text};

/// JSON nested far deeper than any parser's recursion limit.
fn deep_nesting() -> String {
    let depth = 100_000;
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// A well-behaved client's call still gets its answer.
fn still_answers(gateway: &ServerProcess, what: &str) {
    let r = http(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(99, "fx__echo", json!({"text": "still here"})),
    );
    assert_eq!(r.status, 200, "after {what}: {r:?}");
    assert_eq!(
        text(&r.messages()[0]["result"]),
        "still here",
        "after {what}"
    );
}

/// The JSON-RPC error code of the single answer of `r`.
fn error_code(r: &HttpResponse) -> Value {
    let messages = r.messages();
    assert_eq!(messages.len(), 1, "{r:?}");
    messages[0]["error"]["code"].clone()
}

#[test]
fn garbage_over_http_gets_json_rpc_errors_and_the_gateway_goes_on() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    // Not JSON, or cut short: a parse error.
    for body in [
        "not json",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"",
        "\u{0}\u{1}",
    ] {
        let r = http(&gateway.url, "POST", &POST, body);
        assert_eq!(r.status, 400, "{body:?}: {r:?}");
        assert_eq!(error_code(&r), -32700, "{body:?}: {r:?}");
        still_answers(&gateway, body);
    }
    // Nested past any recursion limit: refused, and the guest's stack survives.
    let r = http(&gateway.url, "POST", &POST, &deep_nesting());
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(error_code(&r), -32700, "{r:?}");
    still_answers(&gateway, "deep nesting");
    // JSON, but not a JSON-RPC message.
    for body in [
        "42",
        "null",
        "\"tools/call\"",
        "[]",
        "{}",
        r#"{"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"}"#,
    ] {
        let r = http(&gateway.url, "POST", &POST, body);
        assert_eq!(r.status, 400, "{body:?}: {r:?}");
        assert_eq!(error_code(&r), -32600, "{body:?}: {r:?}");
        still_answers(&gateway, body);
    }
    // A request with parameters of the wrong type: invalid params, named.
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": 5, "_meta": meta()}});
    let r = http(&gateway.url, "POST", &POST, &wrong.to_string());
    assert_eq!(error_code(&r), -32602, "{r:?}");
    // A method name of 3 MiB (under the body limit) is only an unknown method.
    let huge = json!({"jsonrpc": "2.0", "id": 4, "method": "x".repeat(3 << 20),
        "params": {"_meta": meta()}});
    let r = http(
        &gateway.url,
        "POST",
        &[POST[0], POST[1], POST[2], ("Mcp-Method", "x")],
        &huge.to_string(),
    );
    assert!(r.status == 400 || r.status == 200, "{r:?}");
    assert!(r.messages()[0]["error"]["code"].is_i64(), "{r:?}");
    still_answers(&gateway, "a huge method name");
    // A body that is not UTF-8 is refused by the host before the guest sees it.
    let mut stream = TcpStream::connect(authority(&gateway)).expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\n\
         Connection: close\r\nContent-Length: 4\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(&[0xff, 0xfe, 0x7b, 0x7d]).expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("not UTF-8"), "{answer}");
    still_answers(&gateway, "a body that is not UTF-8");
}

/// Sends `head` (ended by an empty line, no body) on a connection of its own and
/// reads the answer. A write that fails is not an error: the gateway may answer
/// and close before it has read everything.
fn send_head(gateway: &ServerProcess, head: &str) -> String {
    let mut stream = TcpStream::connect(authority(gateway)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    let _ = stream.write_all(head.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

fn authority(gateway: &ServerProcess) -> String {
    gateway
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("an authority")
        .to_owned()
}

#[test]
fn a_head_over_the_limit_is_refused_with_431() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    // One header of 70 KiB, over the 64 KiB limit (the gateway reads such a head
    // whole, so the 431 is not lost to a reset).
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         X-Junk: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        "j".repeat(70 * 1024)
    );
    let answer = send_head(&gateway, &head);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer:.200}");
    // Two thousand small headers: refused as well (431, or the connection closed
    // once the gateway stops reading them).
    let many: String = (0..2_000)
        .map(|i| format!("X-H{i}: {}\r\n", "v".repeat(40)))
        .collect();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{many}Content-Length: 0\r\n\r\n");
    let answer = send_head(&gateway, &head);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer:.200}"
    );
    still_answers(&gateway, "heads over the limit");
}

#[test]
fn requests_the_rules_refuse_are_answered_before_their_body_arrives() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    // Each head announces a body of a megabyte that never comes: the answer
    // comes from the head alone, long before the 30 s a body may take.
    let post = |headers: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             {headers}Content-Length: 1000000\r\n\r\n"
        )
    };
    let token = format!("Authorization: Bearer {TOKEN}\r\n");
    for (what, head, status) in [
        ("no token", post(""), "401"),
        (
            "a wrong token",
            post("Authorization: Bearer nope\r\n"),
            "401",
        ),
        (
            "another site's Origin",
            post(&format!("{token}Origin: http://evil.example\r\n")),
            "403",
        ),
        (
            "a session id the gateway did not sign",
            post(&format!(
                "{token}Mcp-Session-Id: 1.00112233445566778899aabbccddeeff\r\n"
            )),
            "404",
        ),
    ] {
        let started = Instant::now();
        let answer = send_head(&gateway, &head);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{what}: {answer:.200}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: {:?}",
            started.elapsed()
        );
    }
    still_answers(&gateway, "heads refused before their bodies");
}

/// Reads what the gateway sends on `stream` until it closes it (a read that
/// times out fails the test: the gateway kept the connection).
fn read_until_closed(mut stream: TcpStream) -> String {
    let mut got = Vec::new();
    match stream.read_to_end(&mut got) {
        Ok(_) => {}
        // Closed with unread bytes in its buffer: a reset, which is closed too.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the gateway did not close a slow connection: {e}"),
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn slow_clients_hold_only_their_own_connections() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let authority = authority(&gateway);
    let deadline = Duration::from_secs(120);
    let connect = || {
        let s = TcpStream::connect(&authority).expect("connect");
        s.set_read_timeout(Some(deadline)).expect("a read timeout");
        s
    };
    let started = Instant::now();
    // Fifty connections that send half a head and stop (slowloris).
    let heads: Vec<TcpStream> = (0..50)
        .map(|_| {
            let mut s = connect();
            s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic")
                .expect("send");
            s
        })
        .collect();
    // One that sends its head and a tenth of its body.
    let mut body = connect();
    body.write_all(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Length: 100\r\n\r\n{{\"jsonrpc\""
        )
        .as_bytes(),
    )
    .expect("send");
    // Nobody else waits for them.
    still_answers(&gateway, "fifty half heads and a half body");
    // The trickled body times out with a 408 that says so, the half heads are
    // closed: each within the read timeout (30 s), not the test's deadline.
    let answer = read_until_closed(body);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 30s"), "{answer}");
    for s in heads {
        let answer = read_until_closed(s);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "a half head got {answer:?}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(90),
        "{:?}",
        started.elapsed()
    );
    still_answers(&gateway, "the slow clients were cut off");
}

#[test]
fn garbage_on_stdio_gets_json_rpc_errors_and_the_gateway_goes_on() {
    let config = config(false, json!({}));
    let argv = stdio_gateway(&config.path, &[]);
    let mut peer = StdioPeer::spawn(&argv[0], &argv[1..]);
    peer.initialize("2025-11-25");
    let nested = deep_nesting();
    let cases: [(&str, i64); 5] = [
        ("not json", -32700),
        ("{\"jsonrpc\": \"2.0\", \"id\"", -32700),
        (&nested, -32700),
        ("42", -32600),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": [1], \"method\": \"ping\"}",
            -32600,
        ),
    ];
    for (line, code) in cases {
        peer.send_line(line);
        // The answer, past any notification the gateway may send meanwhile
        // (an upstream that connects late announces its tools).
        let answer = loop {
            let message = peer.next_message();
            if message.get("method").is_none() {
                break message;
            }
        };
        assert_eq!(answer["error"]["code"], code, "{:.60}: {answer}", line);
        assert_eq!(answer["id"], Value::Null, "{answer}");
        let result = peer.call_tool("fx__echo", json!({"text": "still here"}));
        assert_eq!(text(&result), "still here", "after {line:.60}");
    }
    peer.close_stdin();
    assert!(peer.wait_exit().success());
}

//! The HTTP side's transport rules: DNS rebinding (`Host`, `Origin`), the bearer
//! token, size limits, sessions (unknown ids, `GET` without one, `DELETE`),
//! resumption with `Last-Event-ID`, profiles by path and `--profile` binding them.

use std::process::Command;

use mcpbox_tests::gateway::{AUTHORIZATION, RawRequest, http, serve_http};
use mcpbox_tests::http::start_with;
use serde_json::json;

use crate::{POST, config, stateless_call, text};

#[test]
fn foreign_hosts_and_origins_are_refused() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let body = stateless_call(1, "fx__echo", json!({"text": "x"}));
    let evil_host: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Host", "evil.example.com")])
        .collect();
    assert_eq!(http(&gateway.url, "POST", &evil_host, &body).status, 403);
    let evil_origin: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Origin", "http://evil.example.com")])
        .collect();
    assert_eq!(http(&gateway.url, "POST", &evil_origin, &body).status, 403);
    let local_origin: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Origin", "http://localhost:3000")])
        .collect();
    assert_eq!(http(&gateway.url, "POST", &local_origin, &body).status, 200);
    // An origin allowed on the command line.
    let allowed = serve_http(
        crate::cli(),
        &config.path,
        &["--allow-origin", "https://app.example"],
    );
    let app: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Origin", "https://app.example")])
        .collect();
    assert_eq!(http(&allowed.url, "POST", &app, &body).status, 200);
}

#[test]
fn a_token_is_required_when_one_is_set() {
    let config = config(false, json!({}));
    let mut command = Command::new(crate::cli());
    command
        .envs(mcpbox_tests::compiled_guest::process_env())
        .arg("--trust")
        .arg("--config")
        .arg(&config.path)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("MCPBOX_TOKEN", "s3cret-token");
    let gateway = start_with(command, &|line| {
        Some(line.split("listening on ").nth(1)?.trim().to_owned())
    });
    let body = stateless_call(1, "fx__echo", json!({"text": "x"}));
    // POST without the tests' own token.
    let json = &POST[..2];
    let r = http(&gateway.url, "POST", json, &body);
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let wrong: Vec<(&str, &str)> = json
        .iter()
        .copied()
        .chain([("Authorization", "Bearer nope")])
        .collect();
    assert_eq!(http(&gateway.url, "POST", &wrong, &body).status, 401);
    let right: Vec<(&str, &str)> = json
        .iter()
        .copied()
        .chain([("Authorization", "Bearer s3cret-token")])
        .collect();
    let r = http(&gateway.url, "POST", &right, &body);
    assert_eq!(r.status, 200);
    assert_eq!(text(&r.messages()[0]["result"]), "x");
}

#[test]
fn limits_sessions_and_methods() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    // A body over the limit (4 MiB) is refused before it reaches the guest.
    let big = format!("{{\"x\": \"{}\"}}", "y".repeat(5 * 1024 * 1024));
    assert_eq!(http(&gateway.url, "POST", &POST, &big).status, 413);
    // Not JSON as a content type.
    assert_eq!(
        http(
            &gateway.url,
            "POST",
            &[("Content-Type", "text/plain"), AUTHORIZATION],
            "{}"
        )
        .status,
        415
    );
    // An unknown session, a GET without one, a DELETE of none.
    let unknown: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Mcp-Session-Id", "0123")])
        .collect();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    assert_eq!(http(&gateway.url, "POST", &unknown, &ping).status, 404);
    assert_eq!(
        http(
            &gateway.url,
            "GET",
            &[("Accept", "text/event-stream"), AUTHORIZATION],
            ""
        )
        .status,
        405
    );
    assert_eq!(
        http(&gateway.url, "DELETE", &[AUTHORIZATION], "").status,
        400
    );
    assert_eq!(http(&gateway.url, "PUT", &[AUTHORIZATION], "").status, 405);
    let other = gateway.url.replace("/mcp", "/other");
    assert_eq!(http(&other, "POST", &POST, &ping).status, 404);
    // A 2025 request without a session: the guest's 400, as JSON-RPC.
    let r = http(&gateway.url, "POST", &POST, &ping);
    assert_eq!(r.status, 400);
    assert_eq!(r.messages()[0]["error"]["code"], -32600);
    // A 2026-07-28 notification-only POST: 202.
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    assert_eq!(
        http(&gateway.url, "POST", &POST, &note.to_string()).status,
        202
    );
}

#[test]
fn a_dropped_stream_of_a_session_resumes_with_last_event_id() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let r = http(&gateway.url, "POST", &POST, &init.to_string());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let headers: Vec<(&str, &str)> = POST
        .iter()
        .copied()
        .chain([("Mcp-Session-Id", session.as_str())])
        .collect();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        http(&gateway.url, "POST", &headers, &note.to_string()).status,
        202
    );
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "fx__progress", "arguments": {"steps": 5, "interval_ms": 100}, "_meta": {"progressToken": "t"}}});
    let mut request = RawRequest::send(&gateway.url, "POST", &headers, &call.to_string());
    let (status, id, data) = request.first_event();
    assert_eq!(status, 200);
    assert!(data.contains("notifications/progress"), "{data}");
    let id = id.expect("an event id");
    drop(request);
    // The call went on; the rest of its stream is fetched with the last id seen.
    let resume: Vec<(&str, &str)> = vec![
        AUTHORIZATION,
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session.as_str()),
        ("Last-Event-ID", id.as_str()),
    ];
    let r = http(&gateway.url, "GET", &resume, "");
    assert_eq!(r.status, 200);
    let messages = r.messages();
    let response = messages
        .iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("{messages:?}"));
    assert_eq!(text(&response["result"]), "done 5");
    let progress = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert!(progress >= 3, "the progress after event {id}: {messages:?}");
}

#[test]
fn a_session_id_the_gateway_did_not_sign_names_no_session() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let id = |gateway: &mcpbox_tests::http::ServerProcess| {
        let r = http(&gateway.url, "POST", &POST, &init.to_string());
        r.header("mcp-session-id").expect("a session").to_owned()
    };
    let (first, second) = (id(&gateway), id(&gateway));
    // The gateway's handle, then its MAC: a client sees both.
    let (handle, tag) = first.split_once('.').expect("handle.mac");
    let (other, _) = second.split_once('.').expect("handle.mac");
    assert_ne!(handle, other);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    fn naming(id: &str) -> Vec<(&str, &str)> {
        POST.iter()
            .copied()
            .chain([("Mcp-Session-Id", id)])
            .collect()
    }
    assert_eq!(
        http(&gateway.url, "POST", &naming(&first), &list).status,
        200
    );
    // Another session's handle under this one's MAC, a MAC cut short, another
    // process's id: no session, and nothing of the body read for it.
    for forged in [
        format!("{other}.{tag}"),
        first[..first.len() - 2].to_owned(),
        id(&serve_http(crate::cli(), &config.path, &[])),
    ] {
        let r = http(&gateway.url, "POST", &naming(&forged), &list);
        assert_eq!(r.status, 404, "{forged}: {}", r.body);
        let r = http(&gateway.url, "DELETE", &naming(&forged), "");
        assert_eq!(r.status, 404, "{forged}: {}", r.body);
    }
    // The session itself was not touched by any of it.
    assert_eq!(
        http(&gateway.url, "POST", &naming(&second), &list).status,
        200
    );
    assert_eq!(
        http(&gateway.url, "DELETE", &naming(&second), "").status,
        200
    );
    assert_eq!(
        http(&gateway.url, "POST", &naming(&second), &list).status,
        404
    );
}

#[test]
fn profiles_are_chosen_by_path_or_bound_by_serve_profile() {
    let config = config(
        false,
        json!({"profiles": {
            "echo-only": {"allow": ["mcp__fx__echo"], "default": "deny"},
            "wide": {"default": "allow"}}}),
    );
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": crate::meta()}}).to_string();
    let all = http(&gateway.url, "POST", &POST, &list).messages();
    assert!(all[0]["result"]["tools"].as_array().unwrap().len() > 10);
    let narrow = http(&format!("{}/echo-only", gateway.url), "POST", &POST, &list).messages();
    let names: Vec<&str> = narrow[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["fx__echo"]);
    let denied = http(
        &format!("{}/echo-only", gateway.url),
        "POST",
        &POST,
        &stateless_call(2, "fx__add", json!({"a": 1, "b": 2})),
    );
    let result = &denied.messages()[0]["result"];
    assert!(
        text(result).contains("(profiles.echo-only.default in "),
        "{result}"
    );
    let r = http(&format!("{}/nope", gateway.url), "POST", &POST, &list);
    assert_eq!(r.status, 404);
    // `--profile` is the profile of plain /mcp, and of every client: a path
    // naming another profile cannot widen it.
    let narrowed = serve_http(crate::cli(), &config.path, &["--profile", "echo-only"]);
    for url in [narrowed.url.clone(), format!("{}/echo-only", narrowed.url)] {
        let listed = http(&url, "POST", &POST, &list).messages();
        let names: Vec<&str> = listed[0]["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["fx__echo"], "{url}");
    }
    let wide = format!("{}/wide", narrowed.url);
    let r = http(
        &wide,
        "POST",
        &POST,
        &stateless_call(3, "fx__add", json!({"a": 1, "b": 2})),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains("serves the profile `echo-only` only"),
        "{}",
        r.body
    );
    assert_eq!(http(&wide, "POST", &POST, &list).status, 403);
}

#[test]
fn editing_the_rules_while_serving_applies_them() {
    let config = config(false, json!({}));
    let gateway = serve_http(crate::cli(), &config.path, &[]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": crate::meta()}}).to_string();
    let served = |gateway: &mcpbox_tests::http::ServerProcess| -> Vec<String> {
        http(&gateway.url, "POST", &POST, &list).messages()[0]["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| Some(t["name"].as_str()?.to_owned()))
            .collect()
    };
    assert!(served(&gateway).iter().any(|n| n == "fx__add"));

    // The file is rewritten in place with a rule that denies `add`: the
    // running gateway stops serving it and refuses a call naming the rule.
    let mut edited: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config.path).unwrap()).unwrap();
    edited["permissions"] = json!({"deny": ["mcp__fx__add"]});
    std::fs::write(&config.path, edited.to_string()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while served(&gateway).iter().any(|n| n == "fx__add") {
        assert!(
            std::time::Instant::now() < deadline,
            "the edited rules were not applied within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(served(&gateway).iter().any(|n| n == "fx__echo"));
    let refused = http(
        &gateway.url,
        "POST",
        &POST,
        &stateless_call(2, "fx__add", json!({"a": 1, "b": 2})),
    );
    let result = &refused.messages()[0]["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(result).contains("permissions.deny[0]"), "{result}");
}

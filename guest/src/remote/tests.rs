//! The HTTP transports as a specification: messages in, requests out, scripted
//! answers in, messages and transport facts out, on a hand-driven clock.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Value, json};

use super::fake::{Got, Harness, Reply, body};
use super::port::{ErrorKind, HttpError, Method, Progress, Request};
use super::target::{Grant, Target};
use super::{Kind, MAX_REDIRECTS, PROBE_TIMEOUT_MS};
use crate::transport::{Failure, SendMeta, TransportError};

const URL: &str = "http://127.0.0.1:5000/mcp";

fn init() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}})
}

fn result(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

fn messages(got: &[Got]) -> Vec<Value> {
    got.iter()
        .filter_map(|g| match g {
            Got::Message(m) => Some(m.clone()),
            Got::Error(_) => None,
        })
        .collect()
}

fn errors(got: &[Got]) -> Vec<&TransportError> {
    got.iter()
        .filter_map(|g| match g {
            Got::Error(e) => Some(e),
            Got::Message(_) => None,
        })
        .collect()
}

/// What the scripted Streamable HTTP server does.
#[derive(Default)]
struct Mcp {
    sessions: u32,
    /// The session it ended: requests in it get 404.
    ended: Option<String>,
    /// Answer the next `tools/call` with this status and body.
    fail_next: Option<(u16, String, &'static str)>,
    /// Answer the next `tools/call` with an event stream cut before the answer.
    cut_next: bool,
    /// The cut call's answer, replayed on a GET after `e2`.
    replay: Option<Value>,
    /// Answer calls with a 307 to this location.
    redirect_to: Option<String>,
}

fn mcp(state: Rc<RefCell<Mcp>>) -> super::fake::Server {
    Box::new(move |r: &Request, out: &mut Reply<'_>| {
        let mut s = state.borrow_mut();
        let session = r.header("mcp-session-id").map(String::from);
        if session.is_some() && session == s.ended {
            out.head(404, &[]).end();
            return;
        }
        match r.method {
            Method::Delete | Method::Head => {
                out.head(200, &[]).end();
            }
            Method::Get => match r.header("last-event-id") {
                Some("e2") if s.replay.is_some() => {
                    let answer = s.replay.take().unwrap_or_default();
                    out.head(200, &[("content-type", "text/event-stream")])
                        .data(&format!("id: e3\ndata: {answer}\n\n"))
                        .end();
                }
                _ => {
                    out.head(405, &[]).end();
                }
            },
            Method::Post => {
                let m = body(r);
                match m["method"].as_str() {
                    Some("initialize") => {
                        s.sessions += 1;
                        let id = format!("session-{}", s.sessions);
                        out.json(
                            200,
                            &json!({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
                            &[("mcp-session-id", &id)],
                        );
                    }
                    Some("tools/call") => {
                        if let Some(to) = &s.redirect_to {
                            out.head(307, &[("location", to)]).end();
                        } else if let Some((status, text, ctype)) = s.fail_next.take() {
                            out.head(status, &[("content-type", ctype)])
                                .data(&text)
                                .end();
                        } else if std::mem::take(&mut s.cut_next) {
                            s.replay = Some(result(&m["id"], "resumed"));
                            out.head(200, &[("content-type", "text/event-stream")])
                                .data("id: e1\nretry: 250\ndata: \n\n")
                                .data(&format!(
                                    "id: e2\ndata: {}\n\n",
                                    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "before the cut"}})
                                ))
                                .end();
                        } else {
                            let text = m["params"]["arguments"]["text"].as_str().unwrap_or("");
                            out.json(200, &result(&m["id"], text), &[]);
                        }
                    }
                    Some(_) if m.get("id").is_some() => {
                        out.json(
                            200,
                            &json!({"jsonrpc": "2.0", "id": m["id"], "result": {}}),
                            &[],
                        );
                    }
                    _ => {
                        out.head(202, &[]).end();
                    }
                }
            }
        }
    })
}

/// A Streamable HTTP connection past the handshake.
fn connected(state: &Rc<RefCell<Mcp>>) -> Harness {
    let mut h = Harness::new(Kind::Streamable, URL, mcp(state.clone()));
    h.send(&init(), None);
    let got = h.run(100);
    assert_eq!(messages(&got)[0]["id"], 1);
    h.send(&initialized(), Some("2025-11-25"));
    h.run(100);
    h
}

#[test]
fn posts_carry_the_session_and_the_version_and_notifications_wait_their_turn() {
    let state = Rc::new(RefCell::new(Mcp::default()));
    let mut h = connected(&state);
    h.send(&call(2, "hi"), Some("2025-11-25"));
    let got = h.run(100);
    assert_eq!(messages(&got), vec![result(&json!(2), "hi")]);
    let requests = h.requests();
    let init = &requests[0];
    assert_eq!(init.method, Method::Post);
    assert_eq!(init.url, URL);
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(
        init.header("mcp-protocol-version"),
        None,
        "nothing negotiated yet"
    );
    // initialized, then the GET stream (405: none), then the call.
    assert_eq!(body(&requests[1])["method"], "notifications/initialized");
    assert_eq!(requests[2].method, Method::Get);
    assert_eq!(requests[2].header("accept"), Some("text/event-stream"));
    let call = &requests[3];
    assert_eq!(call.header("mcp-session-id"), Some("session-1"));
    assert_eq!(call.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(
        call.header("mcp-method"),
        None,
        "2026-07-28 headers only from that version"
    );
    assert_eq!(requests.len(), 4);
}

#[test]
fn a_notification_holds_later_messages_until_it_is_accepted() {
    let slow = Rc::new(RefCell::new(None));
    let seen = slow.clone();
    let server = Box::new(move |r: &Request, out: &mut Reply<'_>| {
        let m = body(r);
        if m["method"] == "notifications/initialized" {
            *seen.borrow_mut() = Some(out.exchange);
            out.at(
                3_000,
                Progress::Head(super::port::Head {
                    status: 202,
                    headers: vec![],
                }),
            )
            .at(0, Progress::End);
        } else if r.method == Method::Get {
            out.head(405, &[]).end();
        } else {
            out.json(
                200,
                &json!({"jsonrpc": "2.0", "id": m["id"], "result": {}}),
                &[],
            );
        }
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    h.send(&initialized(), Some("2025-11-25"));
    h.send(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        Some("2025-11-25"),
    );
    h.run(2_999);
    assert_eq!(
        h.requests().len(),
        1,
        "tools/list waits for initialized to be accepted"
    );
    let got = h.run(4_000);
    assert_eq!(messages(&got)[0]["id"], 5);
    assert!(slow.borrow().is_some());
}

#[test]
fn stateless_requests_name_method_tool_and_params() {
    let server = Box::new(|r: &Request, out: &mut Reply<'_>| {
        out.json(
            200,
            &json!({"jsonrpc": "2.0", "id": body(r)["id"], "result": {}}),
            &[],
        );
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    let meta = SendMeta {
        id: Some("9".into()),
        method: Some("tools/call".into()),
        name: Some("wéather".into()),
        protocol_version: Some("2026-07-28".into()),
        param_headers: vec![crate::transport::Pair {
            name: "Region".into(),
            value: "eu west".into(),
        }],
    };
    h.send_meta(&call(9, "x"), meta);
    h.run(100);
    let r = &h.requests()[0];
    assert_eq!(r.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(r.header("mcp-method"), Some("tools/call"));
    assert_eq!(r.header("mcp-name"), Some("=?base64?d8OpYXRoZXI=?="));
    assert_eq!(r.header("mcp-param-region"), Some("eu west"));
}

#[test]
fn error_statuses_fail_exactly_their_request() {
    let state = Rc::new(RefCell::new(Mcp::default()));
    let mut h = connected(&state);
    state.borrow_mut().fail_next = Some((500, "boom".into(), "text/plain"));
    h.send(&call(2, "x"), Some("2025-11-25"));
    h.send(&call(3, "after"), Some("2025-11-25"));
    let got = h.run(100);
    let failed = errors(&got);
    assert_eq!(failed.len(), 1, "{got:?}");
    assert_eq!(
        failed[0],
        &TransportError::RequestFailed {
            id: "2".into(),
            failure: Failure::Exchange("HTTP 500 from the server for tools/call: boom".into())
        }
    );
    assert_eq!(messages(&got), vec![result(&json!(3), "after")]);

    // A JSON-RPC error in the body, with `id: null`: the server's own words.
    state.borrow_mut().fail_next = Some((
        400,
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "bad"}})
            .to_string(),
        "application/json",
    ));
    h.send(&call(4, "x"), Some("2025-11-25"));
    let got = h.run(200);
    match errors(&got)[..] {
        [
            TransportError::RequestFailed {
                id,
                failure: Failure::Rpc(e),
            },
        ] => {
            assert_eq!(id, "4");
            assert_eq!((e.code, e.message.as_str()), (-32600, "bad"));
        }
        _ => panic!("{got:?}"),
    }
    // An error body that answers the request is the answer.
    let answer = json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "no"}});
    state.borrow_mut().fail_next = Some((400, answer.to_string(), "application/json"));
    h.send(&call(5, "x"), Some("2025-11-25"));
    assert_eq!(messages(&h.run(300)), vec![answer]);
    // Nothing says why: the reason phrase.
    state.borrow_mut().fail_next = Some((503, String::new(), "text/plain"));
    h.send(&call(6, "x"), Some("2025-11-25"));
    let got = h.run(400);
    assert!(
        matches!(errors(&got)[..], [TransportError::RequestFailed { failure: Failure::Exchange(w), .. }] if w.ends_with("tools/call: Service Unavailable")),
        "{got:?}"
    );
}

#[test]
fn a_cut_stream_is_resumed_after_the_retry_delay_without_loss_or_duplicates() {
    let state = Rc::new(RefCell::new(Mcp::default()));
    let mut h = connected(&state);
    state.borrow_mut().cut_next = true;
    h.send(&call(2, "x"), Some("2025-11-25"));
    let got = h.run(249);
    assert_eq!(messages(&got).len(), 1, "the log line, once");
    assert!(
        !h.requests()
            .iter()
            .any(|r| r.header("last-event-id").is_some()),
        "not before retry"
    );
    let got = h.run(1_000);
    assert_eq!(messages(&got), vec![result(&json!(2), "resumed")]);
    let resume = h
        .requests()
        .into_iter()
        .find(|r| r.header("last-event-id").is_some())
        .unwrap();
    assert_eq!(resume.method, Method::Get);
    assert_eq!(resume.header("last-event-id"), Some("e2"));
    assert_eq!(resume.header("mcp-session-id"), Some("session-1"));
}

#[test]
fn a_stream_that_cannot_be_resumed_fails_its_request() {
    let server = Box::new(|r: &Request, out: &mut Reply<'_>| {
        if r.method == Method::Post {
            out.head(200, &[("content-type", "text/event-stream")])
                .data("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
                .end();
        }
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    h.send(&call(7, "x"), None);
    let got = h.run(100);
    assert!(
        matches!(errors(&got)[..], [TransportError::RequestFailed { id, failure: Failure::Exchange(w) }] if id == "7" && w.contains("could not be resumed")),
        "{got:?}"
    );
}

#[test]
fn an_ended_session_is_reinitialised_once_with_the_clients_own_initialize() {
    let state = Rc::new(RefCell::new(Mcp::default()));
    let mut h = connected(&state);
    state.borrow_mut().ended = Some("session-1".into());
    h.send(&call(2, "new session"), Some("2025-11-25"));
    let got = h.run(100);
    assert_eq!(messages(&got), vec![result(&json!(2), "new session")]);
    assert_eq!(state.borrow().sessions, 2);
    let net = h.net.borrow();
    let inits = net.posted("initialize");
    assert_eq!(inits.len(), 2);
    assert_eq!(body(&inits[1])["id"], "mcpbox-reinitialize-0");
    assert_eq!(
        body(&inits[1])["params"],
        init()["params"],
        "the client's own initialize"
    );
    assert_eq!(net.posted("notifications/initialized").len(), 2);
    let calls = net.posted("tools/call");
    assert_eq!(calls.len(), 2, "retried once");
    assert_eq!(calls[0].header("mcp-session-id"), Some("session-1"));
    assert_eq!(calls[1].header("mcp-session-id"), Some("session-2"));
    drop(net);
    // A second 404 in the new session is the request's failure, not a loop.
    state.borrow_mut().ended = Some("session-2".into());
    h.send(&call(3, "x"), Some("2025-11-25"));
    h.run(200);
    assert_eq!(state.borrow().sessions, 3);
}

#[test]
fn dropping_the_connection_deletes_the_session() {
    let state = Rc::new(RefCell::new(Mcp::default()));
    let mut h = connected(&state);
    h.drop_connection();
    let requests = h.requests();
    let delete = requests.last().unwrap();
    assert_eq!(delete.method, Method::Delete);
    assert_eq!(delete.header("mcp-session-id"), Some("session-1"));
    assert_eq!(delete.header("mcp-protocol-version"), Some("2025-11-25"));
}

#[test]
fn a_server_never_reached_closes_the_connection_with_the_configured_url() {
    let server = Box::new(|_: &Request, out: &mut Reply<'_>| {
        out.fail(ErrorKind::Connect, "connection refused");
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    h.send(&init(), None);
    let got = h.run(100);
    assert!(
        matches!(errors(&got)[..], [TransportError::Closed(w)] if w == "could not reach http://127.0.0.1:5000/mcp: connection refused"),
        "{got:?}"
    );
}

/// A server that answered once and then broke a stream: the HEAD probe decides.
fn broken_after_connect(probe: Option<ErrorKind>) -> (Harness, Vec<Got>) {
    let mut h = broken_after_connect_with(probe, 0);
    let got = h.run(PROBE_TIMEOUT_MS + 100);
    (h, got)
}

/// [`broken_after_connect`], with the probe refused `delay_ms` after it is
/// sent, and the call not yet sent.
fn broken_after_connect_with(probe: Option<ErrorKind>, delay_ms: u64) -> Harness {
    let calls = Rc::new(RefCell::new(0));
    let server = Box::new(move |r: &Request, out: &mut Reply<'_>| match r.method {
        // Refused as `kind`, or never answered: the probe times out.
        Method::Head => {
            if let Some(kind) = probe {
                out.at(
                    delay_ms,
                    Progress::Failed(HttpError::new(kind, "connection refused")),
                );
            }
        }
        Method::Get => {
            out.head(405, &[]).end();
        }
        _ => {
            let m = body(r);
            *calls.borrow_mut() += 1;
            if m["method"] == "tools/call" {
                out.head(200, &[("content-type", "text/event-stream")])
                    .fail(ErrorKind::Broken, "connection reset");
            } else {
                out.json(
                    200,
                    &json!({"jsonrpc": "2.0", "id": m["id"], "result": {}}),
                    &[],
                );
            }
        }
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    h.send(&init(), None);
    h.run(10);
    h.send(&call(2, "x"), Some("2025-11-25"));
    h
}

#[test]
fn a_broken_stream_and_a_refused_probe_mean_the_server_went_away() {
    let (h, got) = broken_after_connect(Some(ErrorKind::Connect));
    assert!(
        matches!(errors(&got).last(), Some(TransportError::Closed(w)) if w == "went away: http://127.0.0.1:5000/mcp cannot be reached any more (connection refused)"),
        "{got:?}"
    );
    assert!(h.requests().iter().any(|r| r.method == Method::Head));
}

/// The probe was refused in time, but the connection's next turn came only
/// after the probe's timeout (a busy machine): the refusal still counts.
#[test]
fn a_probe_refused_before_a_late_turn_still_proves_the_server_went_away() {
    let mut h = broken_after_connect_with(Some(ErrorKind::Connect), 10);
    let got = h.run(15);
    assert!(errors(&got).is_empty(), "{got:?}");
    assert!(h.requests().iter().any(|r| r.method == Method::Head));
    h.net.borrow_mut().clock = PROBE_TIMEOUT_MS + 1_000;
    let got = h.run(PROBE_TIMEOUT_MS + 1_000);
    assert!(
        matches!(errors(&got)[..], [TransportError::Closed(w)] if w.starts_with("went away:")),
        "{got:?}"
    );
}

#[test]
fn a_probe_that_gets_no_answer_in_time_proves_nothing() {
    let (_, got) = broken_after_connect(None);
    assert!(
        !errors(&got)
            .iter()
            .any(|e| matches!(e, TransportError::Closed(_))),
        "{got:?}"
    );
    // The stream had no event ids: the call fails, the connection stays.
    assert!(
        matches!(errors(&got)[..], [TransportError::RequestFailed { id, .. }] if id == "2"),
        "{got:?}"
    );
}

#[test]
fn same_origin_redirects_are_followed_and_others_are_not() {
    let state = Rc::new(RefCell::new(Mcp::default()));
    let mut h = connected(&state);
    // Same origin: followed, the answer comes from the new path.
    state.borrow_mut().redirect_to = Some("/mcp2".into());
    h.send(&call(2, "x"), Some("2025-11-25"));
    let got = h.run(100);
    // The scripted server redirects every call, so the chain stops at the bound.
    assert!(
        matches!(errors(&got)[..], [TransportError::RequestFailed { failure: Failure::Exchange(w), .. }] if w.contains(&format!("more than {MAX_REDIRECTS} times"))),
        "{got:?}"
    );
    let followed: Vec<_> = h
        .requests()
        .into_iter()
        .filter(|r| r.url == "http://127.0.0.1:5000/mcp2")
        .collect();
    assert_eq!(followed.len(), MAX_REDIRECTS as usize);
    assert!(followed.iter().all(|r| r.header("referer").is_none()));
    assert_eq!(
        followed[0].body,
        h.requests()[3].body,
        "the same request, again"
    );

    // Another origin: not followed, and the message names both.
    state.borrow_mut().redirect_to = Some("http://evil.example/steal?x=1".into());
    h.send(&call(3, "x"), Some("2025-11-25"));
    let got = h.run(200);
    match errors(&got)[..] {
        [
            TransportError::RequestFailed {
                id,
                failure: Failure::Exchange(w),
            },
        ] => {
            assert_eq!(id, "3");
            assert!(
                w.contains("http://127.0.0.1:5000/mcp") && w.contains("http://evil.example"),
                "{w}"
            );
            assert!(w.contains("configure its new URL"), "{w}");
        }
        _ => panic!("{got:?}"),
    }
    assert!(!h.requests().iter().any(|r| r.url.contains("evil.example")));
}

#[test]
fn oversized_answers_are_dropped_with_their_edges() {
    let server = Box::new(|r: &Request, out: &mut Reply<'_>| {
        let m = body(r);
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"x\":\"{}\"}}}}",
            m["id"],
            "y".repeat(2 << 20)
        );
        if m["id"] == 1 {
            out.head(200, &[("content-type", "application/json")]);
            for chunk in big.as_bytes().chunks(64 * 1024) {
                out.at(0, Progress::Data(chunk.to_vec()));
            }
            out.end();
        } else {
            out.head(200, &[("content-type", "text/event-stream")])
                .data(&format!("id: 1\ndata: {big}\n\n"))
                .end();
        }
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    h.send(&init(), None);
    h.send(&call(2, "x"), None);
    let got = h.run(100);
    let sizes: Vec<_> = errors(&got)
        .iter()
        .filter_map(|e| match e {
            TransportError::TooLarge(o) => Some((o.id(), o.cap)),
            _ => None,
        })
        .collect();
    assert_eq!(
        sizes,
        vec![(Some("1".into()), 1 << 20), (Some("2".into()), 1 << 20)],
        "{got:?}"
    );
    assert_eq!(
        h.conn
            .as_ref()
            .map(|c| crate::transport::Connection::diagnostics(c).oversized_messages),
        Some(2)
    );
}

/// A legacy HTTP+SSE server whose `endpoint` event says `endpoint`; it accepts
/// every POST (202) and leaves the stream open: the test writes answers to it.
fn legacy(endpoint: &'static str) -> (Harness, Rc<RefCell<Option<u64>>>, Vec<Got>) {
    let stream = Rc::new(RefCell::new(None));
    let s = stream.clone();
    let server = Box::new(move |r: &Request, out: &mut Reply<'_>| match r.method {
        Method::Get => {
            *s.borrow_mut() = Some(out.exchange);
            out.head(200, &[("content-type", "text/event-stream")])
                .data(&format!("event: endpoint\ndata: {endpoint}\n\n"));
        }
        _ => {
            out.head(202, &[]).end();
        }
    });
    let mut h = Harness::new(Kind::LegacySse, "http://127.0.0.1:5000/sse?key=k", server);
    let got = h.run(10);
    (h, stream, got)
}

#[test]
fn legacy_posts_go_to_the_endpoint_on_the_same_origin_and_answers_come_on_the_stream() {
    let (mut h, stream, _) = legacy("/messages?sessionId=abc");
    h.send(&init(), None);
    h.run(20);
    let post = h
        .requests()
        .into_iter()
        .find(|r| r.method == Method::Post)
        .unwrap();
    assert_eq!(post.url, "http://127.0.0.1:5000/messages?sessionId=abc");
    let id = stream.borrow().unwrap();
    let text = result(&json!(1), "on the stream");
    h.net.borrow_mut().push(
        id,
        0,
        Progress::Data(format!("data: {text}\n\n").into_bytes()),
    );
    assert_eq!(messages(&h.run(30)), vec![text]);
    h.net.borrow_mut().push(id, 0, Progress::End);
    let got = h.run(40);
    assert!(
        matches!(errors(&got)[..], [TransportError::Closed(w)] if w == "closed its event stream"),
        "{got:?}"
    );
}

#[test]
fn a_legacy_endpoint_on_another_origin_fails_the_server_and_nothing_is_sent() {
    // The endpoint event comes as the stream opens: the connection closes at once.
    let (h, _, got) = legacy("http://evil.example/messages?sessionId=abc");
    match errors(&got)[..] {
        [TransportError::Closed(w)] => {
            assert!(
                w.contains("http://evil.example") && w.contains("http://127.0.0.1:5000/sse?key=k"),
                "{w}"
            );
        }
        _ => panic!("{got:?}"),
    }
    assert!(
        h.requests().iter().all(|r| r.method == Method::Get),
        "{:?}",
        h.requests()
    );
}

struct RealOrigin;
impl Grant for RealOrigin {
    fn same_origin(&self, url: &str) -> bool {
        url.starts_with("https://real.example/")
    }
}

#[test]
fn under_a_grant_requests_go_to_the_stand_in_and_messages_name_the_configured_url() {
    let target = Target::granted(
        "real",
        "https://real.example/sse?key=${KEY}",
        "http://g1.mcpbox.internal/sse?key=mcpbox-ref-0",
        Box::new(RealOrigin),
    );
    let server = Box::new(|r: &Request, out: &mut Reply<'_>| match r.method {
        Method::Get => {
            out.head(200, &[("content-type", "text/event-stream")])
                .data("event: endpoint\ndata: https://real.example/messages?s=1\n\n");
        }
        _ => {
            out.fail(ErrorKind::Other, "refused by the test");
        }
    });
    let mut h = Harness::with_target(Kind::LegacySse, target, server);
    h.send(&init(), None);
    let got = h.run(20);
    let requests = h.requests();
    assert_eq!(
        requests[0].url,
        "http://g1.mcpbox.internal/sse?key=mcpbox-ref-0"
    );
    assert_eq!(requests[1].url, "http://g1.mcpbox.internal/messages?s=1");
    match errors(&got)[..] {
        [
            TransportError::RequestFailed {
                failure: Failure::Exchange(w),
                ..
            },
        ] => {
            assert!(w.contains("https://real.example/sse?key=${KEY}"), "{w}");
            assert!(!w.contains("g1.mcpbox.internal"), "{w}");
        }
        _ => panic!("{got:?}"),
    }
}

/// A grant whose host runs OAuth and has no usable authorization for the server.
struct Unauthorized(Option<crate::transport::AuthorizationFailure>);
impl Grant for Unauthorized {
    fn same_origin(&self, _: &str) -> bool {
        false
    }
    fn needs_authorization(&self) -> Option<crate::transport::AuthorizationFailure> {
        self.0.clone()
    }
}

/// Every request refused with `status` and a bearer challenge.
fn refusing(status: u16) -> super::fake::Server {
    Box::new(move |_: &Request, out: &mut Reply<'_>| {
        out.head(status, &[("www-authenticate", "Bearer")]).end();
    })
}

fn granted(fact: Option<crate::transport::AuthorizationFailure>) -> Target {
    Target::granted(
        "locked",
        "https://locked.example/mcp",
        "http://g0.mcpbox.internal/mcp",
        Box::new(Unauthorized(fact)),
    )
}

#[test]
fn a_refusal_the_host_cannot_authorize_names_the_server_and_the_login() {
    use crate::transport::AuthorizationFailure::{CredentialsRefused, LoginRequired};
    // Streamable HTTP: the request fails with the host's fact.
    for status in [401, 403] {
        let fact = LoginRequired("no token is stored for it".into());
        let mut h = Harness::with_target(
            Kind::Streamable,
            granted(Some(fact.clone())),
            refusing(status),
        );
        h.send(&init(), None);
        let got = h.run(20);
        match errors(&got)[..] {
            [TransportError::RequestFailed { id, failure }] => {
                assert_eq!(id, "1");
                assert_eq!(
                    failure,
                    &Failure::NeedsAuthorization {
                        server: "locked".into(),
                        failure: fact.clone()
                    }
                );
                assert_eq!(
                    failure.to_string(),
                    "server `locked` needs authorization (no token is stored for it): run \
                     `mcpbox login locked`"
                );
            }
            _ => panic!("{status}: {got:?}"),
        }
    }
    // Machine credentials the authorization server refused: no login advice.
    let fact =
        CredentialsRefused("the client credentials grant was refused: invalid_client".into());
    let mut h = Harness::with_target(Kind::Streamable, granted(Some(fact)), refusing(401));
    h.send(&init(), None);
    let got = h.run(20);
    let text = errors(&got)[0].to_string();
    assert_eq!(
        text,
        "server `locked` could not be authorized: the client credentials grant was refused: \
         invalid_client"
    );
    // The legacy transport: the event stream itself is refused, and the
    // connection closes with the same fact.
    let fact = LoginRequired("the token expired and could not be refreshed".into());
    let mut h = Harness::with_target(Kind::LegacySse, granted(Some(fact)), refusing(401));
    h.send(&init(), None);
    let got = h.run(20);
    match errors(&got)[..] {
        [TransportError::Closed(why)] => assert_eq!(
            why,
            "needs authorization (the token expired and could not be refreshed): run `mcpbox \
             login locked`"
        ),
        _ => panic!("{got:?}"),
    }
}

#[test]
fn a_refusal_the_host_has_nothing_to_say_about_stays_the_servers_own() {
    let mut h = Harness::with_target(Kind::Streamable, granted(None), refusing(401));
    h.send(&init(), None);
    let got = h.run(20);
    match errors(&got)[..] {
        [
            TransportError::RequestFailed {
                failure: Failure::Exchange(why),
                ..
            },
        ] => assert_eq!(why, "HTTP 401 from the server for initialize: Unauthorized"),
        _ => panic!("{got:?}"),
    }
}

/// A stateless client cancels a request by closing its stream, a tool call as
/// a `subscriptions/listen`: a 2026-07-28 server keeps no session to look the
/// id up in (and the reference SDKs drop the notification). An older
/// revision's cancellation is still POSTed.
#[test]
fn cancelling_a_stateless_request_closes_its_stream_and_posts_nothing() {
    let server = Box::new(|r: &Request, out: &mut Reply<'_>| {
        let b = body(r);
        if b["method"] == "subscriptions/listen" {
            // The stream stays open after its acknowledgement.
            out.head(200, &[("content-type", "text/event-stream")]).data(&format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                       "params": {"notifications": {}, "_meta": {"io.modelcontextprotocol/subscriptionId": b["id"]}}})
            ));
        } else if b.get("id").is_some() && b.get("method").is_some() {
            // Another request: never answered.
            out.head(200, &[("content-type", "text/event-stream")]);
        } else {
            out.head(202, &[]).end();
        }
    });
    let mut h = Harness::new(Kind::Streamable, URL, server);
    let v = Some("2026-07-28");
    h.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "subscriptions/listen", "params": {"notifications": {}}}),
        v,
    );
    h.send(&call(5, "x"), v);
    let got = h.run(100);
    assert_eq!(
        messages(&got)[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    let listen = h.net.borrow().requests[0].0;
    let cancel = |id: u64| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
    h.send(&cancel(4), v);
    h.run(200);
    assert!(
        h.net.borrow().closed.contains(&listen),
        "the listen's stream is closed"
    );
    assert!(h.net.borrow().posted("notifications/cancelled").is_empty());
    let call_stream = h.net.borrow().requests[1].0;
    h.send(&cancel(5), v);
    h.run(300);
    assert!(
        h.net.borrow().closed.contains(&call_stream),
        "the call's stream is closed"
    );
    assert!(h.net.borrow().posted("notifications/cancelled").is_empty());
    // 2025-11-25: the notification is how, and it is posted.
    let v = Some("2025-11-25");
    h.send(&call(6, "x"), v);
    h.run(400);
    h.send(&cancel(6), v);
    h.run(500);
    assert_eq!(
        h.net.borrow().posted("notifications/cancelled").len(),
        1,
        "a 2025 call's is posted"
    );
}

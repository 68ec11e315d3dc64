//! Scale-out behind a production load balancer: HAProxy (Debian's package),
//! running the configurations shipped in `docs/deploy/` with only their
//! addresses changed, in front of three instances, one of which dies.
//!
//! - the shipped configurations pass `haproxy -c`, and the shipped wash project
//!   configuration passes `wash config validate` (each check fails on a broken
//!   copy, so it reads the file);
//! - three `wasmtime serve` of the stock component behind `haproxy-stock.cfg`
//!   (no affinity, health checks on `GET /health`), per era: the SDK clients and
//!   rmcp's list and call, their calls spread over the three; an instance killed
//!   between calls costs no call (HAProxy sends a refused request elsewhere, then
//!   its health checks take the instance out); an instance killed with a call in
//!   flight fails that call with `502` and the client's retry answers, in the
//!   same 2025 session;
//! - three `mcpbox serve --http` behind `haproxy-native.cfg` (affinity on
//!   `Mcp-Session-Id`, learned from the answer to `initialize`): 2026-07-28
//!   calls spread, the SDK clients of both eras list and call, each 2025
//!   session stays on its process; the process of a
//!   session killed between calls: the next request of the session gets
//!   `404` "session not found: initialize again" from a live one, and rmcp's
//!   client starts a new session and its call answers; with a call in flight:
//!   the call fails, the retry answers in a new session; the other clients'
//!   sessions go on untouched.

use std::net::SocketAddr;
use std::time::Duration;

use mcpbox_tests::gateway::{ConfigFile, SdkClient, TOKEN, http, serve_http};
use mcpbox_tests::haproxy::{Haproxy, ServerStat, check_config, haproxy_cli, shipped};
use mcpbox_tests::http::{EverythingMode, ServerProcess, everything_http, ts_http};
use mcpbox_tests::stock::{StockServer, stock_component, wash_cli};
use rmcp::ClientLifecycleMode;
use rmcp::ClientServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::{addr_of, client_round, eras};

/// server-everything's slow tool, through the gateway: it answers after
/// `duration` seconds (no progress is sent without a progress token).
const LONG: &str = "ev__trigger-long-running-operation";

/// Whether HAProxy is here. Missing where apt-get could have installed it
/// (`scripts/install-peers` does) fails the test; elsewhere the test is skipped,
/// loudly.
fn haproxy_here() -> bool {
    let Err(why) = haproxy_cli() else {
        return true;
    };
    let apt = std::process::Command::new("apt-get")
        .arg("--version")
        .output()
        .is_ok();
    assert!(!apt, "{why}");
    eprintln!("\n\n*** SKIPPED: {why}, and this machine has no apt-get to install it ***\n\n");
    false
}

#[test]
fn the_shipped_haproxy_configurations_pass_haproxy_s_own_check() {
    if !haproxy_here() {
        return;
    }
    for name in ["haproxy-stock.cfg", "haproxy-native.cfg"] {
        let path = shipped(name);
        let (ok, out) = check_config(&path);
        assert!(
            ok && out.contains("Configuration file is valid"),
            "{name}: {out}"
        );
        // The check reads the file: a copy with a misspelt keyword fails it.
        let text = std::fs::read_to_string(&path).expect("read the shipped file");
        let broken = std::env::temp_dir().join(format!("broken-{}-{name}", std::process::id()));
        std::fs::write(
            &broken,
            text.replace("balance leastconn", "balance leastcon"),
        )
        .expect("write the broken copy");
        let (ok, out) = check_config(&broken);
        let _ = std::fs::remove_file(&broken);
        assert!(!ok && out.contains("leastcon"), "{name}, broken: {out}");
    }
}

/// `docs/deploy/wash-config.yaml`, as a project's `.wash/config.yaml`, passes
/// wash's own validation (types and values: a `fromEnv` that is not a list
/// fails it).
#[test]
fn the_shipped_wash_configuration_passes_wash_s_own_check() {
    let wash = match wash_cli() {
        Ok(wash) => wash,
        Err(why) => {
            assert!(!why.contains("is missing"), "{why}");
            eprintln!("\n\n*** SKIPPED: wash cannot run on this machine: {why} ***\n\n");
            return;
        }
    };
    let text = std::fs::read_to_string(shipped("wash-config.yaml")).expect("read the file");
    let validate = |text: &str| {
        let dir = tempfile::tempdir().expect("a project directory");
        let (project, home) = (dir.path().join("project"), dir.path().join("home"));
        std::fs::create_dir_all(project.join(".wash")).expect("create .wash");
        std::fs::write(project.join(".wash/config.yaml"), text).expect("write config.yaml");
        let out = std::process::Command::new(&wash)
            .arg("-C")
            .arg(&project)
            .args(["config", "validate"])
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run wash config validate");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), said)
    };
    let (ok, said) = validate(&text);
    assert!(
        ok && said.contains("Configuration is valid") && said.contains(".wash/config.yaml"),
        "{said}"
    );
    assert!(
        text.contains("fromEnv: [GITHUB_TOKEN, MCPBOX_TOKEN]"),
        "{text}"
    );
    let (ok, said) = validate(&text.replace("fromEnv: [GITHUB_TOKEN, MCPBOX_TOKEN]", "fromEnv: 7"));
    assert!(!ok && said.contains("fromEnv"), "{said}");
}

/// rmcp's client through `url`, sending the tests' bearer token (every
/// instance here requires it).
async fn connect(url: &str, lifecycle: ClientLifecycleMode) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(TOKEN);
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = ()
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("rmcp could not connect through {url}: {e}"));
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in ["ts__greet", LONG] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
    client
}

/// One call: the text of its result, or the error as rmcp reports it.
async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    args: Value,
) -> Result<String, String> {
    let result = client
        .call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// A `ts__greet` call that must answer.
async fn greet(client: &RunningService<RoleClient, ()>, name: &str) {
    let text = call(client, "ts__greet", json!({"name": name}))
        .await
        .unwrap_or_else(|e| panic!("greet {name:?} failed: {e}"));
    assert_eq!(text, format!("Hello, {name}!"));
}

/// The answer of the long call of `seconds`.
fn long_answer(seconds: u64) -> String {
    format!("Long running operation completed. Duration: {seconds} seconds, Steps: 2.")
}

/// Each server's count of answers.
fn answered(servers: &[ServerStat]) -> Vec<u64> {
    servers.iter().map(ServerStat::answered).collect()
}

/// The responses per server once they stop changing (for 300 ms; at most
/// 10 s): what is still in flight from earlier requests is counted by then.
async fn settled(lb: &Haproxy) -> Vec<u64> {
    let mut last = answered(&lb.servers());
    for _ in 0..33 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = answered(&lb.servers());
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("HAProxy's counts kept changing: {last:?}");
}

/// Every server passes its health checks.
fn all_up(servers: &[ServerStat]) -> bool {
    servers.iter().all(|s| s.up() && s.check_status == "L7OK")
}

/// Starts the long call on `client`; when HAProxy shows it in progress on a
/// server (holding one more request than before the call; on `on`, when given:
/// the server its session is stuck to), kills that server with `kill`. The
/// call's outcome and the server's index.
async fn kill_in_flight(
    lb: &Haproxy,
    client: &RunningService<RoleClient, ()>,
    on: Option<usize>,
    mut kill: impl FnMut(usize),
) -> (Result<String, String>, usize) {
    let before = lb.servers();
    let watch = async {
        let until = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let now = lb.servers();
            let busy = now
                .iter()
                .zip(&before)
                .enumerate()
                .position(|(i, (n, b))| on.is_none_or(|on| on == i) && n.current > b.current);
            if let Some(i) = busy {
                kill(i);
                return i;
            }
            assert!(
                tokio::time::Instant::now() < until,
                "the call never showed on a server: {now:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (outcome, victim) = tokio::join!(
        call(client, LONG, json!({"duration": 6, "steps": 2})),
        watch
    );
    (outcome, victim)
}

/// Three `wasmtime serve` of the stock component, started side by side.
fn three_stock_instances(config: &str) -> Vec<StockServer> {
    let component = stock_component();
    std::thread::scope(|s| {
        let started: Vec<_> = (0..3)
            .map(|_| s.spawn(|| StockServer::wasmtime(&component, &[("MCPBOX_CONFIG", config)])))
            .collect();
        started
            .into_iter()
            .map(|h| h.join().expect("start wasmtime serve"))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stock_instances_behind_haproxy_lose_no_call_when_one_dies() {
    if !haproxy_here() {
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ts = ts_http();
    let everything = everything_http(EverythingMode::StreamableHttp);
    let config = json!({"mcpServers": {
        "ts": {"url": ts.url},
        "ev": {"type": "http", "url": everything.url},
    }})
    .to_string();
    for (era, lifecycle) in eras() {
        let mut instances = three_stock_instances(&config);
        let addrs: Vec<SocketAddr> = instances.iter().map(|i| i.addr).collect();
        let lb = Haproxy::start(&shipped("haproxy-stock.cfg"), &addrs);
        // HAProxy's own health checks (GET /health) pass on all three.
        lb.wait_for("every instance passes its health check", all_up);

        // The SDK clients of this era list and call through it.
        let calls = [
            ("ts__add", json!({"a": 2, "b": 3})),
            ("ev__echo", json!({"message": "through a stock runtime"})),
        ];
        let stateless = matches!(lifecycle, ClientLifecycleMode::Discover { .. });
        for client in SdkClient::ALL
            .into_iter()
            .filter(|c| c.stateless() == stateless)
        {
            client_round(client, &lb.url, &calls);
        }

        // rmcp's client: consecutive calls land on every instance (no affinity).
        let client = connect(&lb.url, lifecycle.clone()).await;
        let start = answered(&lb.servers());
        for n in 0..6 {
            greet(&client, &format!("{era} {n}")).await;
        }
        let spread = answered(&lb.servers());
        assert!(
            spread.iter().zip(&start).all(|(a, b)| a > b),
            "{era}: every instance should have answered: {start:?} then {spread:?}"
        );

        // Killed between calls: the next calls answer at once (HAProxy sends
        // the refused requests to another instance), then its health checks
        // take it out.
        instances[0].kill();
        let at_kill = answered(&lb.servers());
        for n in 0..4 {
            greet(&client, &format!("{era}, one dead, {n}")).await;
        }
        let dead = &lb.servers()[0];
        assert!(
            dead.redispatched > 0,
            "{era}: HAProxy should have chosen the dead instance (before its health checks \
             failed) and sent the request elsewhere: {dead:#?}"
        );
        lb.wait_for("the killed instance is taken out", |s| {
            s[0].status == "DOWN" && s[0].check_status == "L4CON"
        });
        for n in 0..2 {
            greet(&client, &format!("{era}, taken out, {n}")).await;
        }
        let after = lb.servers();
        assert_eq!(
            after[0].answered(),
            at_kill[0],
            "{era}: the dead instance answered"
        );

        // Killed with a call in flight: that call fails with HAProxy's 502,
        // and the client's retry (the same session, for a 2025 client) answers.
        let (outcome, victim) = kill_in_flight(&lb, &client, None, |i| instances[i].kill()).await;
        assert_ne!(victim, 0);
        let error = outcome.expect_err("a call whose instance died cannot answer");
        eprintln!("{era}: rmcp's client, its call in flight on an instance that died: {error}");
        assert!(error.contains("502"), "{era}: the failed call says {error}");
        let retry = call(&client, LONG, json!({"duration": 1, "steps": 2})).await;
        assert_eq!(retry, Ok(long_answer(1)), "{era}: the retry");
        let last = lb.servers();
        let survivor = 3 - victim;
        assert!(
            last[survivor].answered() > after[survivor].answered(),
            "{era}: the retry went to the survivor: {last:#?}"
        );
        // No instance ever said "not found": a stock session lives in its id.
        // (The 4xx they gave are `405` to the clients' GET streams.)
        let log = lb.log();
        assert!(
            !log.iter().any(|l| l.contains(" 404 ")),
            "{era}: an instance answered 404:\n{}",
            log.join("\n")
        );
        assert!(
            log.iter()
                .any(|l| l.contains(" 502 ") && l.contains(" SH--")),
            "{era}: HAProxy logs the call cut by the server (502, SH): {}",
            log.join("\n")
        );
        client.cancel().await.expect("close");
    }
}

/// The session ids of `sessions` (as [`Haproxy::stuck`] lists them) stuck
/// to `server`.
fn session_of(sessions: &[(String, String)], server: &str) -> Vec<String> {
    sessions
        .iter()
        .filter(|(_, s)| s == server)
        .map(|(key, _)| key.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcpbox_serve_instances_behind_haproxy_keep_each_2025_session_on_its_process() {
    if !haproxy_here() {
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ts = ts_http();
    let everything = everything_http(EverythingMode::StreamableHttp);
    let config = ConfigFile::new(&json!({"mcpServers": {
        "ts": {"url": ts.url},
        "ev": {"type": "http", "url": everything.url},
    }}));
    let mut instances: Vec<ServerProcess> = std::thread::scope(|s| {
        let started: Vec<_> = (0..3)
            .map(|_| s.spawn(|| serve_http(mcpbox_tests::mcpbox_program(), &config.path, &[])))
            .collect();
        started
            .into_iter()
            .map(|h| h.join().expect("start mcpbox serve"))
            .collect()
    });
    let addrs: Vec<SocketAddr> = instances.iter().map(|i| addr_of(&i.url)).collect();
    let lb = Haproxy::start(&shipped("haproxy-native.cfg"), &addrs);
    let names: Vec<String> = lb
        .wait_for("every process passes its health check", all_up)
        .into_iter()
        .map(|s| s.name)
        .collect();

    // 2026-07-28: no session, no affinity; calls spread over the three.
    let (_, stateless) = eras()[1].clone();
    let modern = connect(&lb.url, stateless).await;
    let start = answered(&lb.servers());
    for n in 0..6 {
        greet(&modern, &format!("2026 {n}")).await;
    }
    let spread = answered(&lb.servers());
    assert!(
        spread.iter().zip(&start).all(|(a, b)| a > b),
        "every process should have answered: {start:?} then {spread:?}"
    );
    assert!(
        lb.stuck().is_empty(),
        "a 2026-07-28 request made a session: {:?}",
        lb.stuck()
    );

    // The SDK clients of both eras list and call through it: the 2025 ones
    // (TypeScript v1 and v2, Python) each in a session kept on one process,
    // their GET streams included.
    let calls = [
        ("ts__add", json!({"a": 2, "b": 3})),
        ("ev__echo", json!({"message": "through a stock runtime"})),
    ];
    for client in SdkClient::ALL {
        client_round(client, &lb.url, &calls);
    }
    let earlier: Vec<String> = lb.stuck().into_iter().map(|(key, _)| key).collect();
    assert!(earlier.len() >= 3, "the SDK clients' sessions: {earlier:?}");
    // The sessions made from here on.
    let stuck = || -> Vec<(String, String)> {
        lb.stuck()
            .into_iter()
            .filter(|(key, _)| !earlier.contains(key))
            .collect()
    };

    // Three 2025 sessions: HAProxy learned each id from its initialize's
    // answer, one per process, and keeps each session's requests there.
    let (_, initialize) = eras()[0].clone();
    let mut legacy = Vec::new();
    for _ in 0..3 {
        legacy.push(connect(&lb.url, initialize.clone()).await);
    }
    let sessions = stuck();
    let mut homes: Vec<String> = sessions.iter().map(|(_, s)| s.clone()).collect();
    homes.sort();
    assert_eq!(homes, names, "one session per process: {sessions:?}");
    let mut home = Vec::new();
    for (k, client) in legacy.iter().enumerate() {
        // rmcp opens each session's GET stream in the background, after
        // `initialize`: one answered inside this window would count for another
        // session's process.
        let before = settled(&lb).await;
        for n in 0..3 {
            greet(client, &format!("2025 client {k}, {n}")).await;
        }
        let after = answered(&lb.servers());
        let moved: Vec<usize> = (0..3).filter(|&i| after[i] != before[i]).collect();
        assert_eq!(
            moved.len(),
            1,
            "client {k}'s calls went to {moved:?}: {before:?} then {after:?}"
        );
        assert!(after[moved[0]] >= before[moved[0]] + 3);
        home.push(moved[0]);
    }
    let ids: Vec<String> = home
        .iter()
        .map(|&i| session_of(&sessions, &names[i]).concat())
        .collect();

    // Client 0's process dies between calls. Its next call reaches a live
    // process, which answers 404 "session not found: initialize again"; rmcp's
    // client starts a new session and the call answers.
    let dead = home[0];
    instances[dead].kill();
    greet(&legacy[0], "after its process died").await;
    let bearer = format!("Bearer {TOKEN}");
    let lost = http(
        &lb.url,
        "POST",
        &[
            ("authorization", bearer.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-session-id", ids[0].as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
    );
    assert_eq!(lost.status, 404, "{}", lost.body);
    assert!(
        lost.body.contains("session not found: initialize again"),
        "{}",
        lost.body
    );
    let log = lb.log();
    assert!(
        log.iter()
            .any(|l| l.contains(" 404 ") && l.contains(&ids[0])),
        "HAProxy logs the 404 for the lost session:\n{}",
        log.join("\n")
    );
    // Its new session is stuck to a live process.
    let rehomed = stuck();
    let new: Vec<&(String, String)> = rehomed
        .iter()
        .filter(|(key, _)| !ids.contains(key))
        .collect();
    assert!(
        new.len() == 1 && new[0].1 != names[dead],
        "client 0 should have one new session on a live process: {rehomed:?}"
    );
    // The other sessions did not move, and their calls answer.
    for k in 1..3 {
        assert!(
            session_of(&stuck(), &names[home[k]]).contains(&ids[k]),
            "{rehomed:?}"
        );
        greet(&legacy[k], &format!("2025 client {k}, a neighbour died")).await;
    }
    greet(&modern, "2026, one process dead").await;
    lb.wait_for("the killed process is taken out", |s| {
        s[dead].status == "DOWN"
    });

    // A call in flight on client 1's process when it dies fails; the retry
    // answers, in a new session on the last process.
    let victim = home[1];
    let before = lb.servers();
    let (outcome, killed) =
        kill_in_flight(&lb, &legacy[1], Some(victim), |i| instances[i].kill()).await;
    assert_eq!(killed, victim);
    let error = outcome.expect_err("a call whose process died cannot answer");
    eprintln!("rmcp's 2025 client, its call in flight on a process that died: {error}");
    assert!(error.contains("502"), "the failed call says {error}");
    let retry = call(&legacy[1], LONG, json!({"duration": 1, "steps": 2})).await;
    assert_eq!(retry, Ok(long_answer(1)), "the retry");
    let survivor = 3 - dead - victim;
    let last = lb.servers();
    assert!(
        last[survivor].answered() > before[survivor].answered(),
        "{last:#?}"
    );
    // Client 2, on the survivor, never noticed: the same session answers.
    assert_eq!(home[2], survivor);
    assert!(session_of(&stuck(), &names[survivor]).contains(&ids[2]));
    greet(&legacy[2], "the last process").await;
    greet(&modern, "2026, two processes dead").await;
    for client in legacy {
        let _ = client.cancel().await;
    }
    let _ = modern.cancel().await;
}

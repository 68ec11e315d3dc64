//! What one server's tool list may cost: a server past its `limits` fails alone,
//! saying which limit and how to raise it, and the others keep working in the
//! same guest.

use mcpbox::ServerState;
use mcpbox_tests::fixture::BUILTIN_TOOLS;
use serde_json::json;

use crate::{assert_connected, assert_no_guest_restart, call, fixture_entry, open, ready, status};

/// A million small tools in one 56 MB `tools/list` answer (under the 64 MiB
/// message cap) made the guest run out of memory and trap, and every server
/// restarted with it. Now that server fails on its 16 MiB listing limit, and one
/// with 20,000 small tools (1 MB) on its 10,000-tool limit.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_listing_a_million_tools_fails_alone() {
    let runtime = open(json!({
        "flood": fixture_entry(&["--flood-tools", "1000000"]),
        "many": fixture_entry(&["--flood-tools", "20000"]),
        "good": fixture_entry(&[]),
    }))
    .await;
    let mut events = runtime.events();
    let servers = ready(&runtime).await;
    assert_connected(&servers, "good");
    let error = |name: &str| {
        let s = status(&servers, name);
        assert_eq!(s.state, ServerState::Failed, "{s:?}");
        s.error.clone().unwrap_or_default()
    };
    assert!(
        error("flood").starts_with("server `flood` lists more than 16 MiB of tools"),
        "{}",
        error("flood")
    );
    assert!(
        error("flood").contains(r#""limits": {"maxListBytes": "#),
        "{}",
        error("flood")
    );
    assert!(
        error("many").starts_with("server `many` lists more than 10000 tools"),
        "{}",
        error("many")
    );
    assert!(
        error("many").contains(r#""limits": {"maxTools": 20000}"#),
        "{}",
        error("many")
    );
    let r = call(&runtime, "mcp__good__echo", json!({"text": "unharmed"}))
        .await
        .unwrap();
    assert_eq!(r.text, "unharmed");
    assert_no_guest_restart(&mut events);
    runtime.shutdown().await;
}

/// Each limit names itself, and raising it in the server's entry lets the same
/// server connect.
#[tokio::test(flavor = "multi_thread")]
async fn each_limit_fails_its_server_and_can_be_raised() {
    let mut raised = fixture_entry(&["--tools", "1000", "--big-tool", "2000000"]);
    raised["limits"] = json!({"maxListBytes": 8_000_000, "maxToolBytes": 4_000_000});
    let mut small = fixture_entry(&["--tools", "1000"]);
    small["limits"] = json!({"maxListBytes": 100_000});
    let runtime = open(json!({
        "big": fixture_entry(&["--big-tool", "2000000"]),
        "small": small,
        "raised": raised,
    }))
    .await;
    let mut events = runtime.events();
    let servers = ready(&runtime).await;
    let error = |name: &str| status(&servers, name).error.clone().unwrap_or_default();
    assert!(
        error("big").starts_with(
            "server `big` lists a tool of 2 MiB (`big`), more than its limit of 1 MiB per tool"
        ),
        "{}",
        error("big")
    );
    assert!(
        error("big").contains(r#""limits": {"maxToolBytes": "#),
        "{}",
        error("big")
    );
    assert!(
        error("small").starts_with("server `small` lists more than 100000 bytes of tools"),
        "{}",
        error("small")
    );
    assert!(
        error("small").contains(r#""limits": {"maxListBytes": "#),
        "{}",
        error("small")
    );
    assert_connected(&servers, "raised");
    assert!(status(&servers, "raised").tool_count > 1000);
    assert_no_guest_restart(&mut events);
    runtime.shutdown().await;
}

/// The default limits are safe for the guest's memory: a listing at both caps
/// (10,000 tools, just under 16 MiB) and a single `tools/list` answer at the
/// 64 MiB message cap fit together in half the default 256 MiB.
/// (Measured: the first alone needs 36 MiB, the second 66 MiB; before the guest
/// read a message's payload in place, the second needed 136 MiB.)
#[tokio::test(flavor = "multi_thread")]
async fn a_listing_at_the_caps_and_a_maximal_message_fit_in_a_fraction_of_the_memory() {
    // Flood tools and the fixture's own: 10,000.
    let flood = (10_000 - BUILTIN_TOOLS.len()).to_string();
    let text = json!({"mcpServers": {
        "at_caps": fixture_entry(&["--flood-tools", &flood, "--flood-tool-bytes", "1680"]),
        "maximal": fixture_entry(&["--flood-tools", "1190000"]),
    }})
    .to_string();
    let runtime = mcpbox::Options::from_config_text("limits.json", text)
        .memory_limit(128 << 20)
        .open()
        .await
        .expect("the runtime opens");
    let mut events = runtime.events();
    let servers = ready(&runtime).await;
    assert_connected(&servers, "at_caps");
    assert_eq!(status(&servers, "at_caps").tool_count, 10_000);
    let maximal = status(&servers, "maximal");
    assert_eq!(maximal.state, ServerState::Failed, "{maximal:?}");
    assert!(
        maximal
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("limits.maxListBytes"),
        "{maximal:?}"
    );
    assert_no_guest_restart(&mut events);
    runtime.shutdown().await;
}

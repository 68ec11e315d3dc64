//! Resource subscriptions and resource / prompt list changes through the
//! gateway, to rmcp's client in both eras over stdio and HTTP: a 2025 client's
//! `resources/subscribe` and a 2026-07-28 client's `subscriptions/listen` with
//! `resourceSubscriptions` are passed to the TypeScript SDK v2 peer (`ts`,
//! 2026-07-28 upstream), whose `touch` tool publishes an update and list
//! changes.

use std::time::Duration;

use mcpbox_tests::gateway::serve_http;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, ResourceUpdatedNotificationParam, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::{config, rmcp_stdio};

const PATIENCE: Duration = Duration::from_secs(60);

/// A client that reports the change notifications it gets, as text.
#[derive(Clone)]
struct Watcher(UnboundedSender<String>);

impl ClientHandler for Watcher {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(format!("updated {}", params.uri));
    }

    async fn on_resource_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send("resources changed".into());
    }

    async fn on_prompt_list_changed(&self, _: NotificationContext<RoleClient>) {
        let _ = self.0.send("prompts changed".into());
    }
}

async fn touch(client: &RunningService<RoleClient, Watcher>, uri: &str) {
    let arguments = json!({"uri": uri}).as_object().cloned().unwrap_or_default();
    let r = client
        .call_tool(CallToolRequestParams::new("ts__touch").with_arguments(arguments))
        .await
        .expect("tools/call ts__touch");
    assert_eq!(r.is_error, Some(false), "{r:?}");
}

/// Waits for every one of `want` among the notifications, in any order (rmcp
/// runs its handlers concurrently).
async fn expect(rx: &mut UnboundedReceiver<String>, want: &[&str], what: &str) {
    let mut missing: Vec<&str> = want.to_vec();
    tokio::time::timeout(PATIENCE, async {
        while let Some(got) = rx.recv().await {
            missing.retain(|w| *w != got);
            if missing.is_empty() {
                return;
            }
        }
        panic!("{what}: the client went away before {missing:?}");
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: not in time: {want:?}"));
}

/// What arrived by the time a round trip through the gateway is done.
async fn so_far(
    client: &RunningService<RoleClient, Watcher>,
    rx: &mut UnboundedReceiver<String>,
) -> Vec<String> {
    client.list_all_resources().await.expect("resources/list");
    let mut seen = Vec::new();
    while let Ok(s) = rx.try_recv() {
        seen.push(s);
    }
    seen
}

/// A 2025 client: `resources/subscribe`, the notifications on its stream.
async fn legacy_round<T, E, A>(transport: T, what: &str)
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let (tx, mut rx) = unbounded_channel();
    let client = Watcher(tx)
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .unwrap_or_else(|e| panic!("rmcp over {what} could not connect: {e}"));
    let caps = client.peer_info().map(|i| i.capabilities.clone());
    let resources = caps.and_then(|c| c.resources).expect("resources declared");
    assert_eq!(resources.subscribe, Some(true), "{what}");
    #[allow(deprecated)] // resources/subscribe is the 2025 era's, which this client speaks
    client
        .subscribe(SubscribeRequestParams::new("ts://readme"))
        .await
        .unwrap_or_else(|e| panic!("{what}: resources/subscribe: {e}"));
    touch(&client, "ts://readme").await;
    let changes = [
        "updated ts://readme",
        "resources changed",
        "prompts changed",
    ];
    expect(&mut rx, &changes, what).await;

    touch(&client, "ts://logo").await;
    let seen = so_far(&client, &mut rx).await;
    assert!(
        !seen.contains(&"updated ts://logo".to_string()),
        "{what}: {seen:?}"
    );
    #[allow(deprecated)]
    client
        .unsubscribe(UnsubscribeRequestParams::new("ts://readme"))
        .await
        .unwrap_or_else(|e| panic!("{what}: resources/unsubscribe: {e}"));
    touch(&client, "ts://readme").await;
    let seen = so_far(&client, &mut rx).await;
    assert!(
        !seen.contains(&"updated ts://readme".to_string()),
        "{what}: {seen:?}"
    );
    client.cancel().await.expect("close");
}

/// A 2026-07-28 client: `subscriptions/listen` with `resourceSubscriptions`.
async fn listen_round<T, E, A>(transport: T, what: &str)
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let (tx, _rx) = unbounded_channel();
    let lifecycle = crate::rmcp_eras()[1].1.clone();
    let client = Watcher(tx)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("rmcp over {what} could not connect: {e}"));
    let filter = SubscriptionFilter::builder()
        .resource_subscriptions(["ts://readme"])
        .resources_list_changed()
        .build();
    let mut subscription = client
        .listen(filter)
        .await
        .unwrap_or_else(|e| panic!("{what}: subscriptions/listen: {e}"));
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec!["ts://readme".to_string()]),
        "{what}"
    );
    touch(&client, "ts://readme").await;
    let mut seen = Vec::new();
    while !(seen
        .iter()
        .any(|m: &serde_json::Value| m["method"] == "notifications/resources/updated")
        && seen
            .iter()
            .any(|m| m["method"] == "notifications/resources/list_changed"))
    {
        let next = tokio::time::timeout(PATIENCE, subscription.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: nothing on the listen in time: {seen:?}"))
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .unwrap_or_else(|| panic!("{what}: the listen ended: {seen:?}"));
        seen.push(serde_json::to_value(&next).unwrap());
    }
    let update = seen
        .iter()
        .find(|m| m["method"] == "notifications/resources/updated")
        .unwrap();
    assert_eq!(update["params"]["uri"], "ts://readme", "{what}");
    drop(subscription);
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_reach_rmcp_in_both_eras_over_stdio_and_http() {
    // reqwest needs a process-wide TLS provider even for plain http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = config(true, json!({}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    legacy_round(crate::rmcp_http(&http.url), "http, legacy").await;
    legacy_round(rmcp_stdio(&config.path), "stdio, legacy").await;
    listen_round(crate::rmcp_http(&http.url), "http, 2026-07-28").await;
    listen_round(rmcp_stdio(&config.path), "stdio, 2026-07-28").await;
}

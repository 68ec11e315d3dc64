//! Resources and prompts through the gateway, to rmcp's client in both eras over
//! stdio and HTTP: every upstream's resources under their own URIs, reads passed
//! through (text and blob), prompts named `{server}__{prompt}` and got with
//! arguments.

use mcpbox_tests::gateway::serve_http;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

use crate::{config, rmcp_eras, rmcp_stdio};

async fn round<T, E, A>(transport: T, lifecycle: ClientLifecycleMode, what: &str)
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client: RunningService<RoleClient, ()> = ()
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("rmcp over {what} could not connect: {e}"));
    let resources = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["py://readme", "ts://readme", "ts://logo"], "{what}");
    let templates = client
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    let templates: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(templates, ["py://item/{id}", "ts://item/{id}"], "{what}");

    let read = |uri: &str| {
        let client = &client;
        let uri = uri.to_owned();
        async move {
            let result = client
                .read_resource(ReadResourceRequestParams::new(uri.clone()))
                .await
                .unwrap_or_else(|e| panic!("{what}: resources/read {uri}: {e}"));
            serde_json::to_value(&result.contents).unwrap()
        }
    };
    assert_eq!(
        read("py://readme").await[0]["text"],
        "py-peer readme",
        "{what}"
    );
    assert_eq!(read("ts://item/9").await[0]["text"], "item 9", "{what}");
    let logo = read("ts://logo").await;
    assert_eq!(logo[0]["blob"], "iVBORw==", "{what}");
    assert_eq!(logo[0]["mimeType"], "image/png", "{what}");
    let missing = client
        .read_resource(ReadResourceRequestParams::new("nope://x"))
        .await
        .expect_err("an unknown URI is an error");
    assert!(
        missing.to_string().contains("nope://x"),
        "{what}: {missing}"
    );

    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["py__review", "ts__greeting"], "{what}");
    let arguments = json!({"name": "Ada"}).as_object().cloned().unwrap();
    let got = client
        .get_prompt(GetPromptRequestParams::new("ts__greeting").with_arguments(arguments))
        .await
        .expect("prompts/get");
    let got: Value = serde_json::to_value(&got).unwrap();
    assert_eq!(
        got["messages"][0]["content"]["text"], "Say hello to Ada (warm)",
        "{what}: {got}"
    );
    let unknown = client
        .get_prompt(GetPromptRequestParams::new("nobody__greeting"))
        .await
        .expect_err("an unknown prompt is an error");
    assert!(
        unknown.to_string().contains("unknown prompt"),
        "{what}: {unknown}"
    );
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts_reach_rmcp_in_both_eras_over_stdio_and_http() {
    // reqwest needs a process-wide TLS provider even for plain http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = config(true, json!({}));
    let http = serve_http(crate::cli(), &config.path, &[]);
    for (era, lifecycle) in rmcp_eras() {
        let transport = crate::rmcp_http(&http.url);
        round(transport, lifecycle, &format!("http, {era}")).await;
    }
    for (era, lifecycle) in rmcp_eras() {
        round(
            rmcp_stdio(&config.path),
            lifecycle,
            &format!("stdio, {era}"),
        )
        .await;
    }
}

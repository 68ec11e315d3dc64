//! `mcpbox dashboard`: the servers, their tools and recent calls in a browser,
//! with Prometheus metrics at /metrics, without serving MCP.

use mcpbox::{Event, Runtime};
use tokio::sync::broadcast::Receiver;

use super::serve::{listen, report_servers};
use crate::exit::Exit;
use crate::{Failure, fail};

/// Serves the dashboard on `addr` until a signal ends the CLI.
pub(crate) async fn dashboard(
    runtime: &Runtime,
    events: Receiver<Event>,
    addr: &str,
    allow_origin: &[String],
    insecure_no_token: bool,
) -> Result<Exit, Failure> {
    report_servers(events, "mcpbox dashboard");
    let (listener, http) = listen(
        "mcpbox dashboard",
        addr,
        allow_origin,
        "/",
        insecure_no_token,
    )
    .await?;
    runtime
        .serve_dashboard(http, listener)
        .await
        .map_err(|e| fail(Exit::Usage, e))?;
    Ok(Exit::Success)
}

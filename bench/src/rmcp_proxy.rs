//! `mcpbox-bench rmcp-proxy PROGRAM [ARGS…]`: a stdio MCP gateway built on rmcp,
//! the reference Rust SDK, for the `rmcp-proxy` route of G1 and G5. It serves
//! its own stdio as an MCP server and forwards `tools/list` and `tools/call` to
//! PROGRAM through rmcp's client: what a small native gateway costs per call,
//! with no sandbox and no policy, beside `mcpbox serve` (a wasm guest behind a
//! host) and the relay (no MCP at all).
//!
//! Its stdin and stdout are read and written as non-blocking pipes on the
//! runtime's own thread, as `mcpbox serve` does, not through tokio's `stdin`,
//! which hands every read to a blocking thread: the route measures rmcp, not
//! that hand-over. The runtime has one thread, as `mcpbox serve` on stdio.

use std::os::fd::AsFd;
use std::process::ExitCode;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use tokio::net::unix::pipe;

/// Forwards tool requests to the upstream server.
struct Proxy {
    upstream: Peer<RoleClient>,
}

fn upstream_error(e: rmcp::ServiceError) -> ErrorData {
    ErrorData::internal_error(format!("upstream: {e}"), None)
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream
            .list_tools(request)
            .await
            .map_err(upstream_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream
            .call_tool_once(request)
            .await
            .map_err(upstream_error)
    }
}

async fn run(program: String, args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let mut command = tokio::process::Command::new(&program);
    command.args(args);
    let upstream = ()
        .serve_with_lifecycle(
            TokioChildProcess::new(command)?,
            ClientLifecycleMode::Initialize,
        )
        .await?;
    let input = pipe::Receiver::from_owned_fd(std::io::stdin().as_fd().try_clone_to_owned()?)?;
    let output = pipe::Sender::from_owned_fd(std::io::stdout().as_fd().try_clone_to_owned()?)?;
    let proxy = Proxy {
        upstream: upstream.peer().clone(),
    };
    let served = proxy.serve((input, output)).await?;
    served.waiting().await?;
    upstream.cancel().await?;
    Ok(())
}

pub fn main(mut args: impl Iterator<Item = String>) -> ExitCode {
    let Some(program) = args.next() else {
        eprintln!(
            "usage: mcpbox-bench rmcp-proxy PROGRAM [ARGS…] (stdin and stdout must be pipes)"
        );
        return ExitCode::from(2);
    };
    let args = args.collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("rmcp-proxy: could not start tokio: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(program, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp-proxy: {e}");
            ExitCode::from(1)
        }
    }
}

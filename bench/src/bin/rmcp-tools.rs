//! `rmcp-tools COMMAND [ARGS…]`: what `mcpbox tools` does, written with rmcp.
//!
//! Starts one stdio server with rmcp's child-process transport, initialises it,
//! lists every tool, prints them as `mcp__{server}__{tool}  description`, closes
//! the connection and exits: the rmcp side of the cold-process workload (W1c).
//! It is its own binary so that its start-up costs what an rmcp program's would.

use std::io::Write;
use std::process::ExitCode;

use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: rmcp-tools COMMAND [ARGS…]");
        return ExitCode::from(2);
    };
    let args: Vec<String> = args.collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(program, args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(3)
        }
    }
}

async fn run(program: String, args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let command = tokio::process::Command::new(program).configure(|c| {
        c.args(&args);
    });
    let client = ().serve(TokioChildProcess::new(command)?).await?;
    let tools = client.list_all_tools().await?;
    let mut out = std::io::stdout().lock();
    for tool in &tools {
        writeln!(
            out,
            "mcp__fixture__{}  {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        )?;
    }
    out.flush()?;
    drop(out);
    client.cancel().await?;
    Ok(())
}

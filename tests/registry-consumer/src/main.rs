//! A component that uses mcpbox's tool registry through its WIT interface
//! alone (`mcpbox:runtime/registry`): the smallest agent written as a
//! component. `tests/tests/all/stock.rs` composes it with the stock
//! component (`wac_graph::plug`, what `wac plug` does) and runs the composition
//! on the stock `wasmtime run`.
//!
//! `mcpbox-registry-consumer TOOL ARGUMENTS` starts the registry (configured
//! by the stock component from `MCPBOX_CONFIG`), waits until no server is
//! starting, prints one line per server (`server NAME STATE[ ERROR]`) and per
//! tool (`tool NAME`), calls `TOOL` with `ARGUMENTS` (JSON object text) and
//! prints `result TEXT` (`tool-error TEXT` when the tool failed), or
//! `call-error WHY` and exits 1 when the call did not produce a result.

#[cfg(target_arch = "wasm32")]
mod consumer {
    // Generated code needs `unsafe` for the canonical ABI; confined here.
    #[allow(unsafe_code, missing_docs)]
    mod bindings {
        wit_bindgen::generate!({
            path: "wit",
            world: "mcpbox:registry-consumer/consumer",
            generate_all,
        });
    }

    use bindings::mcpbox::runtime::registry::{self, CallOptions, ServerState};

    /// How long the servers may take to start, and one call to answer (ms).
    const DEADLINE_MS: u64 = 30_000;
    /// One `wait`'s bound: short, so the deadline is checked often.
    const WAIT_MS: u64 = 500;

    fn state_name(state: ServerState) -> &'static str {
        match state {
            ServerState::Starting => "starting",
            ServerState::Connected => "connected",
            ServerState::Failed => "failed",
            ServerState::Closed => "closed",
        }
    }

    /// Lists, calls, prints; the exit code.
    pub fn run(tool: &str, arguments: &str) -> i32 {
        let started = std::time::Instant::now();
        let late = || started.elapsed().as_millis() as u64 > DEADLINE_MS;
        registry::start();
        while registry::servers()
            .iter()
            .any(|s| s.state == ServerState::Starting)
        {
            if late() {
                eprintln!("servers still starting after {DEADLINE_MS} ms");
                return 1;
            }
            registry::wait(WAIT_MS);
        }
        for s in registry::servers() {
            let error = s.error.map(|e| format!(" {e}")).unwrap_or_default();
            println!("server {} {}{error}", s.name, state_name(s.state));
        }
        let mut start = 0;
        loop {
            let page = registry::tools(start, 100);
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            for t in page {
                println!("tool {}", t.name);
            }
        }
        let call = match registry::start_call(
            tool,
            arguments,
            &CallOptions {
                timeout_ms: None,
                task: false,
                profile: None,
            },
        ) {
            Ok(call) => call,
            Err(why) => {
                println!("call-error {why:?}");
                return 1;
            }
        };
        loop {
            if late() {
                println!("call-error no answer after {DEADLINE_MS} ms");
                return 1;
            }
            let turn = registry::wait(WAIT_MS);
            let Some(done) = turn.finished.into_iter().find(|c| c.call == call) else {
                continue;
            };
            return match done.outcome {
                Ok(result) if result.is_error => {
                    println!("tool-error {}", result.text);
                    0
                }
                Ok(result) => {
                    println!("result {}", result.text);
                    0
                }
                Err(why) => {
                    println!("call-error {why:?}");
                    1
                }
            };
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, tool, arguments] = args.as_slice() else {
        eprintln!("usage: mcpbox-registry-consumer TOOL ARGUMENTS");
        std::process::exit(2);
    };
    #[cfg(target_arch = "wasm32")]
    std::process::exit(consumer::run(tool, arguments));
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = (tool, arguments);
        eprintln!("build me for wasm32-wasip2 and compose me with the stock component");
        std::process::exit(2);
    }
}

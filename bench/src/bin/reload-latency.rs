//! How long a saved configuration takes to be applied by the file watcher.
//!
//! ```text
//! cargo build --release -p mcpbox-tests --bin fixture-server
//! cargo run --release -p mcpbox-bench --bin reload-latency -- [--runs N] [--debounce MS]
//! ```
//!
//! One runtime watches a configuration file (`Options::watch_config`, default
//! debounce unless `--debounce` says otherwise) with one fixture server. Each run
//! saves the file with a second server added (or removed, alternately) and times
//! two moments from just before the write: the `Event::Reloaded` that reports the
//! change, and, for additions, the added server connected. Runs are sequential;
//! the table shows the median, minimum and maximum. Most of the first figure is
//! the debounce itself, the quiet time the watcher waits for before it reads the
//! file (docs/PERFORMANCE.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use mcpbox::{Event, Options, ServerState};

fn usage() -> String {
    "usage: reload-latency [--runs N] [--debounce MS] [--fixture PATH]".into()
}

struct Args {
    runs: usize,
    debounce: Option<Duration>,
    fixture: PathBuf,
}

fn parse() -> Result<Args, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut args = Args {
        runs: 20,
        debounce: None,
        fixture: me.with_file_name("fixture-server"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(usage);
        match arg.as_str() {
            "--runs" => {
                args.runs = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or("--runs needs a positive number")?
            }
            "--debounce" => {
                let ms: u64 = value()?
                    .parse()
                    .map_err(|_| "--debounce needs milliseconds")?;
                args.debounce = Some(Duration::from_millis(ms));
            }
            "--fixture" => args.fixture = PathBuf::from(value()?),
            _ => return Err(usage()),
        }
    }
    if !args.fixture.is_file() {
        return Err(format!(
            "{} is missing: build it with `cargo build --release -p mcpbox-tests --bin \
             fixture-server` (or pass --fixture PATH)",
            args.fixture.display()
        ));
    }
    Ok(args)
}

fn config(fixture: &std::path::Path, extra: bool) -> String {
    let entry = serde_json::json!({ "command": fixture });
    let mut servers = serde_json::Map::new();
    servers.insert("base".into(), entry.clone());
    if extra {
        servers.insert("extra".into(), entry);
    }
    serde_json::json!({ "mcpServers": servers }).to_string()
}

fn summary(label: &str, values: &mut [f64]) {
    if values.is_empty() {
        return;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    println!(
        "| {label} | {n} | {median:.1} | {:.1} | {:.1} |",
        values[0],
        values[n - 1]
    );
}

async fn run(args: Args) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("mcpbox-reload-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let path = dir.join("mcp.json");
    std::fs::write(&path, config(&args.fixture, false)).map_err(|e| e.to_string())?;
    let mut options = Options::from_config_file(&path).watch_config(true);
    if let Some(quiet) = args.debounce {
        options = options.watch_debounce(quiet);
    }
    let debounce = args.debounce.unwrap_or(mcpbox::DEFAULT_WATCH_DEBOUNCE);
    let runtime = options.open().await.map_err(|e| e.to_string())?;
    runtime.ready().await;
    let mut events = runtime.events();
    let (mut applied, mut connected) = (Vec::new(), Vec::new());
    for i in 0..args.runs {
        let extra = i % 2 == 0;
        let start = Instant::now();
        std::fs::write(&path, config(&args.fixture, extra)).map_err(|e| e.to_string())?;
        loop {
            match tokio::time::timeout(Duration::from_secs(30), events.recv()).await {
                Ok(Ok(Event::Reloaded(report))) if report.changed() => break,
                Ok(Ok(Event::ReloadFailed { error, .. })) => return Err(error),
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => return Err(format!("run {i}: no reload within 30 s")),
            }
        }
        applied.push(start.elapsed().as_secs_f64() * 1000.0);
        if extra {
            let servers = runtime.ready().await;
            if servers
                .iter()
                .any(|s| s.name == "extra" && s.state == ServerState::Connected)
            {
                connected.push(start.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    runtime.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "reload latency, debounce {} ms ({} runs)\n",
        debounce.as_millis(),
        args.runs
    );
    println!("| from the file write to | runs | median ms | min ms | max ms |");
    println!("|---|---|---|---|---|");
    summary("`Event::Reloaded`", &mut applied);
    summary("the added server connected", &mut connected);
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start tokio: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

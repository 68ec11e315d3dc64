//! Metrics: what the runtime counts while it runs, for Prometheus (`/metrics` of
//! [`Runtime::serve_http`](crate::Runtime::serve_http)), the dashboard and
//! embedders ([`Runtime::metrics`](crate::Runtime::metrics)).
//!
//! Nothing here asks the guest anything: the driver hands the [`Monitor`] the
//! events it publishes anyway — each call's audit record (server, tool, outcome,
//! duration) and each server status — and the snapshots it starts from, so the
//! numbers are the audit trail's and the registry's, counted once. The monitor
//! keeps plain numbers under one lock, and each call's record itself in the ring
//! of recent calls (the driver copies a record only when the event has
//! subscribers); [`MetricsSnapshot::prometheus_text`]
//! writes them in the Prometheus text format with the `prometheus-client` crate's
//! encoder (a collector over the snapshot), so the format's escaping and naming
//! rules are the crate's, not ours.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::types::{AuditRecord, Event, ServerState, ServerStatus};

/// The upper bounds, in seconds, of the call latency histogram's buckets (the
/// last, `+Inf`, is implicit). Audit records count whole milliseconds, so a call
/// under 1 ms lands in the first bucket.
pub const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How many recent calls the monitor keeps for the dashboard.
pub(crate) const RECENT_CALLS: usize = 200;

/// The numbers of a running runtime at one moment (see
/// [`Runtime::metrics`](crate::Runtime::metrics)); the same numbers `/metrics`
/// serves.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Every configured server, in configuration order.
    pub servers: Vec<ServerMetrics>,
    /// Calls that ended, by server, tool and outcome (`mcpbox_tool_calls_total`).
    pub calls: Vec<CallCount>,
    /// Call durations, by server and tool (`mcpbox_tool_call_duration_seconds`).
    pub latency: Vec<Latency>,
    /// Times the guest failed and was replaced by a fresh instance
    /// (`mcpbox_guest_restarts_total`).
    pub guest_restarts: u64,
}

/// One server's numbers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerMetrics {
    /// The configured name.
    pub name: String,
    /// Where it is in its life cycle.
    pub state: ServerState,
    /// Tools it contributes to the registry (`mcpbox_server_tools`).
    pub tools: u32,
    /// Times it went back to starting after it had connected or failed: a
    /// reconnect, a restart by a reload, a new guest (`mcpbox_server_restarts_total`).
    pub restarts: u64,
    /// How long it has been connected, while it is (`mcpbox_server_uptime_seconds`).
    pub uptime: Option<Duration>,
    /// When it last restarted (`mcpbox_server_last_restart_timestamp_seconds`).
    pub last_restart: Option<SystemTime>,
    /// The last error it failed with, even after it connected again.
    pub last_error: Option<String>,
}

/// How many calls of one tool ended with one outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallCount {
    /// The configured server name (empty for a call to a tool nobody has).
    pub server: String,
    /// The tool's own name on its server (the namespaced name when no server has it).
    pub tool: String,
    /// The audit trail's outcome: `ok`, `tool-error`, or the error's kind
    /// (`denied`, `timeout`, `unavailable`, …).
    pub outcome: String,
    /// How many.
    pub count: u64,
}

/// The durations of one tool's calls, as a histogram.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Latency {
    /// The configured server name.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// How many calls.
    pub count: u64,
    /// Their durations added up, in seconds.
    pub sum_seconds: f64,
    /// Cumulative counts: (upper bound in seconds, calls that took at most that),
    /// for each of [`LATENCY_BUCKETS`] and then `f64::INFINITY`.
    pub buckets: Vec<(f64, u64)>,
}

/// What the monitor remembers of a server.
#[derive(Debug)]
struct ServerBook {
    state: ServerState,
    connected_since: Option<Instant>,
    restarts: u64,
    last_restart: Option<SystemTime>,
    last_error: Option<String>,
}

/// One tool's calls.
#[derive(Debug, Default)]
struct ToolBook {
    /// (outcome, count): few outcomes per tool, so a list beats a map.
    outcomes: Vec<(String, u64)>,
    /// Per-bucket (not cumulative) counts; the last is `+Inf`.
    buckets: [u64; LATENCY_BUCKETS.len() + 1],
    sum_seconds: f64,
    count: u64,
}

#[derive(Debug, Default)]
struct Book {
    servers: HashMap<String, ServerBook>,
    /// server → tool → its calls.
    calls: HashMap<String, HashMap<String, ToolBook>>,
    recent: VecDeque<AuditRecord>,
    guest_restarts: u64,
}

/// Counts what the driver publishes (see the module docs). Shared by the driver,
/// which writes, and the runtime, which reads.
#[derive(Debug, Default)]
pub(crate) struct Monitor {
    book: Mutex<Book>,
}

impl Monitor {
    /// A monitor that starts from the servers of a fresh instance.
    pub fn new(servers: &[ServerStatus]) -> Monitor {
        let monitor = Monitor::default();
        for s in servers {
            monitor.status(s);
        }
        monitor
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes note of an event the driver is about to publish (calls go to
    /// [`Monitor::call`]).
    pub fn observe(&self, event: &Event) {
        if let Event::Status(status) = event {
            self.status(status);
        }
    }

    /// The guest was replaced; these are the new instance's servers.
    pub fn guest_restarted(&self, servers: &[ServerStatus]) {
        self.book().guest_restarts += 1;
        for s in servers {
            self.status(s);
        }
    }

    fn status(&self, s: &ServerStatus) {
        let mut book = self.book();
        let now = Instant::now();
        match book.servers.get_mut(&s.name) {
            None => {
                book.servers.insert(
                    s.name.clone(),
                    ServerBook {
                        state: s.state,
                        connected_since: (s.state == ServerState::Connected).then_some(now),
                        restarts: 0,
                        last_restart: None,
                        last_error: s.error.clone(),
                    },
                );
            }
            Some(b) => {
                if s.state == ServerState::Starting && b.state != ServerState::Starting {
                    b.restarts += 1;
                    b.last_restart = Some(SystemTime::now());
                }
                if s.state == ServerState::Connected {
                    if b.state != ServerState::Connected || b.connected_since.is_none() {
                        b.connected_since = Some(now);
                    }
                } else {
                    b.connected_since = None;
                }
                if let Some(error) = &s.error {
                    b.last_error = Some(error.clone());
                }
                b.state = s.state;
            }
        }
    }

    /// Counts a call that ended and keeps its record among the recent calls
    /// (taken by value: the ring holds the record itself, not a copy).
    pub fn call(&self, record: AuditRecord) {
        let seconds = record.duration_ms as f64 / 1000.0;
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKETS.len());
        let tool = own_tool_name(&record.server, &record.tool);
        let mut book = self.book();
        let book = &mut *book;
        // Looked up by &str first: no allocation on the usual path.
        let tools = match book.calls.get_mut(record.server.as_str()) {
            Some(tools) => tools,
            None => book.calls.entry(record.server.clone()).or_default(),
        };
        let entry = match tools.get_mut(tool) {
            Some(entry) => entry,
            None => tools.entry(tool.to_owned()).or_default(),
        };
        match entry
            .outcomes
            .iter_mut()
            .find(|(o, _)| *o == record.outcome)
        {
            Some((_, n)) => *n += 1,
            None => entry.outcomes.push((record.outcome.clone(), 1)),
        }
        entry.buckets[bucket] += 1;
        entry.sum_seconds += seconds;
        entry.count += 1;
        if book.recent.len() == RECENT_CALLS {
            book.recent.pop_front();
        }
        book.recent.push_back(record);
    }

    /// The latest calls, oldest first.
    pub fn recent_calls(&self) -> Vec<AuditRecord> {
        self.book().recent.iter().cloned().collect()
    }

    /// The numbers now, for the servers configured now.
    pub fn snapshot(&self, servers: &[ServerStatus]) -> MetricsSnapshot {
        let book = self.book();
        let now = Instant::now();
        let servers = servers
            .iter()
            .map(|s| {
                let b = book.servers.get(&s.name);
                ServerMetrics {
                    name: s.name.clone(),
                    state: s.state,
                    tools: s.tool_count,
                    restarts: b.map_or(0, |b| b.restarts),
                    uptime: b
                        .and_then(|b| b.connected_since)
                        .filter(|_| s.state == ServerState::Connected)
                        .map(|since| now.duration_since(since)),
                    last_restart: b.and_then(|b| b.last_restart),
                    last_error: b.and_then(|b| b.last_error.clone()),
                }
            })
            .collect();
        let mut calls = Vec::new();
        let mut latency = Vec::new();
        let mut names: Vec<(&String, &String, &ToolBook)> = book
            .calls
            .iter()
            .flat_map(|(server, tools)| tools.iter().map(move |(tool, b)| (server, tool, b)))
            .collect();
        names.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        for (server, tool, b) in names {
            let mut outcomes = b.outcomes.clone();
            outcomes.sort();
            for (outcome, count) in outcomes {
                calls.push(CallCount {
                    server: server.clone(),
                    tool: tool.clone(),
                    outcome,
                    count,
                });
            }
            let mut cumulative = 0;
            let buckets = LATENCY_BUCKETS
                .iter()
                .copied()
                .chain([f64::INFINITY])
                .zip(b.buckets)
                .map(|(bound, n)| {
                    cumulative += n;
                    (bound, cumulative)
                })
                .collect();
            latency.push(Latency {
                server: server.clone(),
                tool: tool.clone(),
                count: b.count,
                sum_seconds: b.sum_seconds,
                buckets,
            });
        }
        MetricsSnapshot {
            servers,
            calls,
            latency,
            guest_restarts: book.guest_restarts,
        }
    }
}

/// `echo` of `mcp__fx__echo` for server `fx`; the whole name when it is not that
/// server's (a call to a tool no server has).
fn own_tool_name<'a>(server: &str, tool: &'a str) -> &'a str {
    tool.strip_prefix("mcp__")
        .and_then(|rest| rest.strip_prefix(server))
        .and_then(|rest| rest.strip_prefix("__"))
        .filter(|_| !server.is_empty())
        .unwrap_or(tool)
}

/// The `Content-Type` of [`MetricsSnapshot::prometheus_text`] (text format 0.0.4).
pub const PROMETHEUS_CONTENT_TYPE: &str =
    prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

impl MetricsSnapshot {
    /// The snapshot in the Prometheus text exposition format (version 0.0.4), as
    /// `/metrics` serves it. The metric names are listed in the README ("Metrics").
    pub fn prometheus_text(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Exposition(self.clone())));
        let mut text = String::new();
        // Writing to a String does not fail; the encoder's errors are fmt's.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
        text
    }
}

/// A snapshot as a `prometheus-client` collector.
#[derive(Debug)]
struct Exposition(MetricsSnapshot);

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let mut m = encoder.encode_descriptor(
            "mcpbox_tool_calls",
            "Tool calls that ended, by server, tool and outcome (ok, tool-error, or the error's kind).",
            None,
            MetricType::Counter,
        )?;
        for c in &s.calls {
            let labels = [
                ("server", c.server.as_str()),
                ("tool", c.tool.as_str()),
                ("outcome", c.outcome.as_str()),
            ];
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&c.count, None)?;
        }
        let mut m = encoder.encode_descriptor(
            "mcpbox_tool_call_duration_seconds",
            "How long tool calls took, approval included, by server and tool.",
            None,
            MetricType::Histogram,
        )?;
        for l in &s.latency {
            let labels = [("server", l.server.as_str()), ("tool", l.tool.as_str())];
            // The encoder wants per-bucket counts; the snapshot keeps them cumulative.
            let mut previous = 0;
            let buckets: Vec<(f64, u64)> = l
                .buckets
                .iter()
                .map(|&(bound, cumulative)| {
                    let n = cumulative - previous;
                    previous = cumulative;
                    (bound, n)
                })
                .collect();
            m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                l.sum_seconds,
                l.count,
                &buckets,
                None,
            )?;
        }
        let mut m = encoder.encode_descriptor(
            "mcpbox_server_up",
            "1 when the server is connected, 0 otherwise.",
            None,
            MetricType::Gauge,
        )?;
        for server in &s.servers {
            let up = i64::from(server.state == ServerState::Connected);
            m.encode_family(&[("server", server.name.as_str())])?
                .encode_gauge(&up)?;
        }
        let mut m = encoder.encode_descriptor(
            "mcpbox_server_restarts",
            "Times the server went back to starting after it had connected or failed.",
            None,
            MetricType::Counter,
        )?;
        for server in &s.servers {
            m.encode_family(&[("server", server.name.as_str())])?
                .encode_counter::<NoLabelSet, _, u64>(&server.restarts, None)?;
        }
        let mut m = encoder.encode_descriptor(
            "mcpbox_server_uptime_seconds",
            "Seconds since the server last connected (servers that are connected).",
            None,
            MetricType::Gauge,
        )?;
        for server in &s.servers {
            if let Some(uptime) = server.uptime {
                m.encode_family(&[("server", server.name.as_str())])?
                    .encode_gauge(&uptime.as_secs_f64())?;
            }
        }
        let mut m = encoder.encode_descriptor(
            "mcpbox_server_last_restart_timestamp_seconds",
            "When the server last restarted, in seconds since the Unix epoch (servers that restarted).",
            None,
            MetricType::Gauge,
        )?;
        for server in &s.servers {
            if let Some(at) = server.last_restart {
                let at = at
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64();
                m.encode_family(&[("server", server.name.as_str())])?
                    .encode_gauge(&at)?;
            }
        }
        let mut m = encoder.encode_descriptor(
            "mcpbox_server_tools",
            "Tools the server contributes to the registry.",
            None,
            MetricType::Gauge,
        )?;
        for server in &s.servers {
            m.encode_family(&[("server", server.name.as_str())])?
                .encode_gauge(&server.tools)?;
        }
        let tools: u64 = s.servers.iter().map(|s| u64::from(s.tools)).sum();
        encoder
            .encode_descriptor(
                "mcpbox_tools",
                "Tools in the registry.",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&tools)?;
        encoder
            .encode_descriptor(
                "mcpbox_guest_restarts",
                "Times the guest component failed and was replaced by a fresh instance.",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&s.guest_restarts, None)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, state: ServerState, error: Option<&str>) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            state,
            transport: "stdio".into(),
            error: error.map(Into::into),
            tool_count: 3,
            protocol_version: None,
            server_name: None,
            server_version: None,
        }
    }

    fn record(server: &str, tool: &str, outcome: &str, ms: u64) -> AuditRecord {
        AuditRecord {
            time: "2026-01-01T00:00:00.000Z".into(),
            call: Some(1),
            server: server.into(),
            tool: tool.into(),
            profile: None,
            decision: Some("allow".into()),
            rule: None,
            approval: None,
            outcome: outcome.into(),
            duration_ms: ms,
            arguments: None,
        }
    }

    #[test]
    fn restarts_uptime_and_last_errors_follow_the_statuses() {
        let m = Monitor::new(&[status("a", ServerState::Starting, None)]);
        m.observe(&Event::Status(status("a", ServerState::Connected, None)));
        let snap = m.snapshot(&[status("a", ServerState::Connected, None)]);
        assert_eq!(snap.servers[0].restarts, 0);
        assert!(snap.servers[0].uptime.is_some());
        m.observe(&Event::Status(status(
            "a",
            ServerState::Failed,
            Some("boom"),
        )));
        m.observe(&Event::Status(status("a", ServerState::Starting, None)));
        m.observe(&Event::Status(status("a", ServerState::Connected, None)));
        let snap = m.snapshot(&[status("a", ServerState::Connected, None)]);
        assert_eq!(snap.servers[0].restarts, 1);
        assert_eq!(snap.servers[0].last_error.as_deref(), Some("boom"));
        assert!(snap.servers[0].last_restart.is_some());
        m.guest_restarted(&[status("a", ServerState::Starting, None)]);
        let snap = m.snapshot(&[status("a", ServerState::Starting, None)]);
        assert_eq!((snap.guest_restarts, snap.servers[0].restarts), (1, 2));
        assert_eq!(snap.servers[0].uptime, None);
    }

    #[test]
    fn calls_are_counted_by_outcome_and_timed_in_buckets() {
        let m = Monitor::new(&[]);
        m.call(record("fx", "mcp__fx__echo", "ok", 0));
        m.call(record("fx", "mcp__fx__echo", "ok", 30));
        m.call(record("fx", "mcp__fx__echo", "timeout", 2000));
        m.call(record("", "mcp__nope__x", "unknown-tool", 0));
        let snap = m.snapshot(&[]);
        let echo: Vec<_> = snap.calls.iter().filter(|c| c.tool == "echo").collect();
        assert_eq!(echo.len(), 2);
        assert_eq!((echo[0].outcome.as_str(), echo[0].count), ("ok", 2));
        assert_eq!((echo[1].outcome.as_str(), echo[1].count), ("timeout", 1));
        assert!(snap.calls.iter().any(|c| c.tool == "mcp__nope__x"));
        let l = snap.latency.iter().find(|l| l.tool == "echo").unwrap();
        assert_eq!(l.count, 3);
        assert!((l.sum_seconds - 2.03).abs() < 1e-9);
        let at = |bound: f64| l.buckets.iter().find(|b| b.0 == bound).unwrap().1;
        assert_eq!(
            (at(0.001), at(0.05), at(2.5), at(f64::INFINITY)),
            (1, 2, 3, 3)
        );
        assert_eq!(m.recent_calls().len(), 4);
    }

    #[test]
    fn the_text_format_names_and_escapes_as_prometheus_does() {
        let m = Monitor::new(&[status("a\"b", ServerState::Connected, None)]);
        m.call(record("a\"b", "mcp__a\"b__t", "ok", 3));
        let text = m
            .snapshot(&[status("a\"b", ServerState::Connected, None)])
            .prometheus_text();
        assert!(
            text.contains(
                "mcpbox_tool_calls_total{server=\"a\\\"b\",tool=\"t\",outcome=\"ok\"} 1\n"
            )
        );
        assert!(text.contains("# TYPE mcpbox_tool_call_duration_seconds histogram\n"));
        assert!(text.contains("mcpbox_server_up{server=\"a\\\"b\"} 1\n"));
        assert!(text.contains("mcpbox_guest_restarts_total 0\n"));
        assert!(text.contains("mcpbox_tools 3\n"));
    }
}

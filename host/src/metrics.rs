//! Metrics: what the runtime counts while it runs, for Prometheus (`/metrics` of
//! [`Runtime::serve_http`](crate::Runtime::serve_http)), the dashboard and
//! embedders ([`Runtime::metrics`](crate::Runtime::metrics)).
//!
//! Nothing here asks the guest anything: the driver hands the [`Monitor`] what
//! it is sent anyway — each call's count (`registry.enable-call-counts`: a key
//! for its server and tool, its outcome and duration, the key's names with its
//! first count only), each server status, each call's audit record when audit
//! records are on — and the snapshots it starts from. Counting a call costs a
//! lock and a few integers: no strings cross from the guest once a tool has its
//! key (docs/PERFORMANCE.md, "Metrics cost"). The audit records, when they flow,
//! fill the ring of recent calls (the driver copies a record only when the event
//! has subscribers). [`MetricsSnapshot::prometheus_text`]
//! writes them in the Prometheus text format with the `prometheus-client` crate's
//! encoder (a collector over the snapshot), so the format's escaping and naming
//! rules are the crate's, not ours.
//!
//! For the dashboard it also keeps, bounded, what a page opened later could not
//! have seen: each server's calls second by second over the last
//! [`TIMELINE_SECONDS`] (a count and a latency histogram per second that had
//! calls: [`Monitor::timeline`]), each server's latest [`LOG_LINES`] log messages
//! (`notifications/message`), and the `ask` approvals waiting for an answer.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::bindings::registry::{CallCount as WitCallCount, CallOutcome};
use crate::types::{AuditRecord, Event, InputRequest, ServerState, ServerStatus};

/// The upper bounds, in seconds, of the call latency histogram's buckets (the
/// last, `+Inf`, is implicit). Audit records count whole milliseconds, so a call
/// under 1 ms lands in the first bucket.
pub const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How many recent calls the monitor keeps for the dashboard.
pub(crate) const RECENT_CALLS: usize = 200;

/// How many seconds of each server's calls the monitor keeps for the dashboard's chart.
pub(crate) const TIMELINE_SECONDS: u64 = 300;

/// How many log messages (`notifications/message`) of each server the monitor keeps.
pub(crate) const LOG_LINES: usize = 200;

/// One second of a server's calls: when (Unix seconds), how many ended, and
/// their durations in the buckets of [`LATENCY_BUCKETS`] (per bucket, the last `+Inf`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Second {
    pub at: u64,
    pub calls: u64,
    pub buckets: [u64; LATENCY_BUCKETS.len() + 1],
}

/// A log message a server sent, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct LogLine {
    /// When it arrived (RFC 3339, milliseconds).
    pub time: String,
    pub level: String,
    pub message: String,
}

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
    /// The tool's own name on its server (the name called when no server has it;
    /// past 100 such names, `(other)`).
    pub tool: String,
    /// The audit trail's outcome: `ok`, `tool-error`, or the error's kind
    /// (`denied`, `timeout`, `server-unavailable`, …).
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

/// The outcomes a call can have, in the order of the WIT's `call-outcome` (see
/// [`outcome_index`]), with the audit trail's words for them.
const OUTCOMES: [&str; 9] = [
    "ok",
    "tool-error",
    "unknown-tool",
    "invalid-arguments",
    "server-unavailable",
    "timeout",
    "cancelled",
    "protocol",
    "denied",
];

fn outcome_index(outcome: CallOutcome) -> usize {
    match outcome {
        CallOutcome::Ok => 0,
        CallOutcome::ToolError => 1,
        CallOutcome::UnknownTool => 2,
        CallOutcome::InvalidArguments => 3,
        CallOutcome::ServerUnavailable => 4,
        CallOutcome::Timeout => 5,
        CallOutcome::Cancelled => 6,
        CallOutcome::Protocol => 7,
        CallOutcome::Denied => 8,
    }
}

/// One tool's calls.
#[derive(Debug)]
struct ToolBook {
    server: String,
    tool: String,
    /// Calls by outcome, indexed as [`OUTCOMES`].
    outcomes: [u64; OUTCOMES.len()],
    /// Per-bucket (not cumulative) counts; the last is `+Inf`.
    buckets: [u64; LATENCY_BUCKETS.len() + 1],
    sum_seconds: f64,
    count: u64,
    /// Its server's place in [`Book::timeline`].
    line: usize,
}

#[derive(Debug, Default)]
struct Book {
    servers: HashMap<String, ServerBook>,
    /// Every tool counted, in the order first counted.
    tools: Vec<ToolBook>,
    /// (server, tool) → its place in `tools`: a tool keeps its counts when a new
    /// guest gives it a new key.
    by_name: HashMap<(String, String), usize>,
    /// The running guest's keys → places in `tools`.
    keys: Vec<usize>,
    recent: VecDeque<AuditRecord>,
    guest_restarts: u64,
    /// Each server's calls by second, the latest [`TIMELINE_SECONDS`]: found
    /// by a tool's `line`, so that counting a call hashes no name.
    timeline: Vec<(String, VecDeque<Second>)>,
    /// Each server's latest log messages.
    logs: HashMap<String, VecDeque<LogLine>>,
    /// Approvals (input requests of `ask` rules) waiting for an answer, by id.
    approvals: std::collections::BTreeMap<u64, InputRequest>,
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
        match event {
            Event::Status(status) => self.status(status),
            Event::Log {
                server,
                level,
                message,
            } => {
                let mut book = self.book();
                let lines = book.logs.entry(server.clone()).or_default();
                if lines.len() == LOG_LINES {
                    lines.pop_front();
                }
                lines.push_back(LogLine {
                    time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                    level: level.clone(),
                    message: message.clone(),
                });
            }
            Event::InputRequested(r) if r.approval.is_some() => {
                self.book().approvals.insert(r.id, r.clone());
            }
            Event::InputWithdrawn(id) | Event::InputAnswered(id) => {
                self.book().approvals.remove(id);
            }
            _ => {}
        }
    }

    /// The approvals waiting for an answer, oldest first.
    pub fn approvals(&self) -> Vec<InputRequest> {
        self.book().approvals.values().cloned().collect()
    }

    /// A server's latest log messages, oldest first.
    pub fn logs(&self, server: &str) -> Vec<LogLine> {
        self.book()
            .logs
            .get(server)
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Each server's calls by second over the last [`TIMELINE_SECONDS`], oldest
    /// first; seconds without calls are left out.
    pub fn timeline(&self) -> std::collections::BTreeMap<String, Vec<Second>> {
        let now = unix_seconds();
        self.book()
            .timeline
            .iter()
            .map(|(server, seconds)| {
                let kept = seconds
                    .iter()
                    .filter(|s| s.at + TIMELINE_SECONDS > now)
                    .cloned()
                    .collect();
                (server.clone(), kept)
            })
            .collect()
    }

    /// The guest was replaced; these are the new instance's servers. Its keys
    /// are new too: they are learnt again as it names them.
    pub fn guest_restarted(&self, servers: &[ServerStatus]) {
        {
            let mut book = self.book();
            book.guest_restarts += 1;
            book.keys.clear();
        }
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

    /// Counts a call that ended (or was refused).
    pub fn count(&self, count: WitCallCount) {
        let seconds = count.duration_ms as f64 / 1000.0;
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKETS.len());
        let mut book = self.book();
        let book = &mut *book;
        let key = count.key as usize;
        if let Some(names) = count.names {
            let place = *book
                .by_name
                .entry((names.server, names.tool))
                .or_insert_with_key(|(server, tool)| {
                    let line = match book.timeline.iter().position(|(s, _)| s == server) {
                        Some(line) => line,
                        None => {
                            book.timeline.push((server.clone(), VecDeque::new()));
                            book.timeline.len() - 1
                        }
                    };
                    book.tools.push(ToolBook {
                        server: server.clone(),
                        tool: tool.clone(),
                        outcomes: [0; OUTCOMES.len()],
                        buckets: [0; LATENCY_BUCKETS.len() + 1],
                        sum_seconds: 0.0,
                        count: 0,
                        line,
                    });
                    book.tools.len() - 1
                });
            // Keys are dense from 0, named in order: a new key is the next one.
            if key == book.keys.len() {
                book.keys.push(place);
            } else if let Some(slot) = book.keys.get_mut(key) {
                *slot = place;
            }
        }
        let Some(entry) = book
            .keys
            .get(key)
            .and_then(|&place| book.tools.get_mut(place))
        else {
            // A key never named: not counted rather than counted as someone else.
            return;
        };
        entry.outcomes[outcome_index(count.outcome)] += 1;
        entry.buckets[bucket] += 1;
        entry.sum_seconds += seconds;
        entry.count += 1;
        let at = unix_seconds();
        let Some((_, timeline)) = book.timeline.get_mut(entry.line) else {
            return;
        };
        if timeline.back().is_none_or(|s| s.at != at) {
            while timeline
                .front()
                .is_some_and(|s| s.at + TIMELINE_SECONDS <= at)
            {
                timeline.pop_front();
            }
            timeline.push_back(Second {
                at,
                calls: 0,
                buckets: [0; LATENCY_BUCKETS.len() + 1],
            });
        }
        if let Some(second) = timeline.back_mut() {
            second.calls += 1;
            second.buckets[bucket] += 1;
        }
    }

    /// Keeps a call's audit record among the recent calls (taken by value: the
    /// ring holds the record itself, not a copy).
    pub fn recent(&self, record: AuditRecord) {
        let mut book = self.book();
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
        let mut tools: Vec<&ToolBook> = book.tools.iter().collect();
        tools.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        for b in tools {
            let mut outcomes: Vec<(&str, u64)> = OUTCOMES
                .iter()
                .zip(b.outcomes)
                .filter(|(_, n)| *n > 0)
                .map(|(o, n)| (*o, n))
                .collect();
            outcomes.sort();
            for (outcome, count) in outcomes {
                calls.push(CallCount {
                    server: b.server.clone(),
                    tool: b.tool.clone(),
                    outcome: outcome.to_owned(),
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
                server: b.server.clone(),
                tool: b.tool.clone(),
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

/// Now, in whole seconds since the Unix epoch.
fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The `Content-Type` of [`MetricsSnapshot::prometheus_text`] (text format 0.0.4).
pub const PROMETHEUS_CONTENT_TYPE: &str =
    prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

impl MetricsSnapshot {
    /// The snapshot in the Prometheus text exposition format (version 0.0.4), as
    /// `/metrics` serves it. The metric names are listed in docs/gateway.md ("Metrics").
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
    use crate::bindings::registry::CountedTool;

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

    /// A count of `key`, naming it as (server, tool) when `names` is given.
    fn count(key: u32, names: Option<(&str, &str)>, outcome: CallOutcome, ms: u64) -> WitCallCount {
        WitCallCount {
            key,
            names: names.map(|(server, tool)| CountedTool {
                server: server.into(),
                tool: tool.into(),
            }),
            outcome,
            duration_ms: ms,
        }
    }

    fn record(outcome: &str) -> AuditRecord {
        AuditRecord {
            time: "2026-01-01T00:00:00.000Z".into(),
            call: Some(1),
            server: "fx".into(),
            tool: "mcp__fx__echo".into(),
            profile: None,
            decision: Some("allow".into()),
            rule: None,
            approval: None,
            outcome: outcome.into(),
            duration_ms: 0,
            arguments: None,
        }
    }

    #[test]
    fn calls_by_second_log_messages_and_waiting_approvals_are_kept_bounded() {
        let m = Monitor::new(&[]);
        m.count(count(0, Some(("a", "x")), CallOutcome::Ok, 3));
        m.count(count(1, Some(("a", "y")), CallOutcome::Denied, 70));
        m.count(count(2, Some(("b", "x")), CallOutcome::Ok, 0));
        let timeline = m.timeline();
        let a = &timeline["a"];
        assert_eq!(a.iter().map(|s| s.calls).sum::<u64>(), 2);
        // 3 ms is in the (2.5, 5] bucket, 70 ms in (50, 100].
        let buckets = a.iter().fold([0; LATENCY_BUCKETS.len() + 1], |mut sum, s| {
            for (t, n) in sum.iter_mut().zip(s.buckets) {
                *t += n;
            }
            sum
        });
        assert_eq!((buckets[2], buckets[6]), (1, 1), "{buckets:?}");
        assert_eq!(timeline["b"].iter().map(|s| s.calls).sum::<u64>(), 1);

        for i in 0..LOG_LINES + 5 {
            m.observe(&Event::Log {
                server: "a".into(),
                level: "info".into(),
                message: format!("line {i}"),
            });
        }
        let logs = m.logs("a");
        assert_eq!(logs.len(), LOG_LINES);
        assert_eq!(logs[0].message, "line 5");
        assert!(m.logs("b").is_empty());

        let request = |id, approval: bool| InputRequest {
            id,
            server: "a".into(),
            tool: Some("mcp__a__x".into()),
            message: "Allow?".into(),
            requested_schema: serde_json::json!({}),
            approval: approval.then(|| crate::types::ApprovalRequest {
                rule: "`mcp__a__x` (permissions.ask[0])".into(),
                arguments: serde_json::json!({}),
            }),
        };
        m.observe(&Event::InputRequested(request(1, true)));
        m.observe(&Event::InputRequested(request(2, false)));
        m.observe(&Event::InputRequested(request(3, true)));
        let waiting = |m: &Monitor| m.approvals().iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            waiting(&m),
            [1, 3],
            "a server's own input request is no approval"
        );
        m.observe(&Event::InputAnswered(1));
        m.observe(&Event::InputWithdrawn(3));
        assert!(waiting(&m).is_empty());
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
        m.count(count(0, Some(("fx", "echo")), CallOutcome::Ok, 0));
        m.count(count(0, None, CallOutcome::Ok, 30));
        m.count(count(0, None, CallOutcome::Timeout, 2000));
        m.count(count(
            1,
            Some(("", "mcp__nope__x")),
            CallOutcome::UnknownTool,
            0,
        ));
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
        // Counts keep no records; audit records fill the ring.
        assert!(m.recent_calls().is_empty());
        m.recent(record("ok"));
        assert_eq!(m.recent_calls().len(), 1);
    }

    #[test]
    fn a_new_guest_names_its_keys_anew_and_the_counts_stay() {
        let m = Monitor::new(&[]);
        m.count(count(0, Some(("fx", "echo")), CallOutcome::Ok, 1));
        m.count(count(1, Some(("fx", "fail")), CallOutcome::ToolError, 1));
        m.guest_restarted(&[]);
        // A key the new guest has not named yet is not counted as the old one's.
        m.count(count(1, None, CallOutcome::Ok, 1));
        m.count(count(0, Some(("fx", "fail")), CallOutcome::ToolError, 1));
        m.count(count(1, Some(("fx", "echo")), CallOutcome::Ok, 1));
        m.count(count(0, None, CallOutcome::Cancelled, 1));
        // A key past the next one is not a key the guest gave out.
        m.count(count(7, Some(("fx", "odd")), CallOutcome::Ok, 1));
        m.count(count(7, None, CallOutcome::Ok, 1));
        let snap = m.snapshot(&[]);
        let calls: Vec<_> = snap
            .calls
            .iter()
            .map(|c| (c.tool.as_str(), c.outcome.as_str(), c.count))
            .collect();
        assert_eq!(
            calls,
            [
                ("echo", "ok", 2),
                ("fail", "cancelled", 1),
                ("fail", "tool-error", 2),
            ]
        );
        assert_eq!(snap.guest_restarts, 1);
    }

    #[test]
    fn every_outcome_has_its_audit_word() {
        use CallOutcome::*;
        let all = [
            Ok,
            ToolError,
            UnknownTool,
            InvalidArguments,
            ServerUnavailable,
            Timeout,
            Cancelled,
            Protocol,
            Denied,
        ];
        let words: Vec<&str> = all.iter().map(|o| OUTCOMES[outcome_index(*o)]).collect();
        assert_eq!(words, OUTCOMES);
    }

    #[test]
    fn the_text_format_names_and_escapes_as_prometheus_does() {
        let m = Monitor::new(&[status("a\"b", ServerState::Connected, None)]);
        m.count(count(0, Some(("a\"b", "t")), CallOutcome::Ok, 3));
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

//! The tool list: `tools/list` with pagination (every `nextCursor` is followed,
//! a repeated cursor or [`MAX_PAGES`] stops it: [`super::pagination`]), change detection
//! (`notifications/tools/list_changed` starts a re-list, coalesced to at most one
//! more after the running one), `subscriptions/listen` (2026-07-28) for list
//! changes, and the `ttlMs` hint that schedules a re-list when nothing subscribes.
//!
//! # Limits
//!
//! Every server's list lives in the one guest memory, so a listing is held to
//! its server's [`Limits`] page by page, before what a page holds is kept: the
//! bytes of all pages (checked before a page is parsed), the number of tools (on
//! the page's list of unread tools, 16 bytes each) and the bytes of each tool
//! (before it is read). A server past one fails, alone, with the limit's name
//! and the entry that raises it; a list change past one fails it too (its old
//! list is no longer what it serves).

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

use super::pagination::{Cursors, MAX_PAGES};
use super::param_headers::check_param_headers;
use super::wire::{ListParams, ListToolsResult, RawTool, text_of};
use super::{Client, ClientEvent, Pending, Phase, ResultKind, result_kind};
use crate::config::types::Limits;
use crate::jsonrpc;
use crate::methods;
use crate::registry::ToolDef;
use crate::transport::{Failure, format_bytes};

/// The shortest re-list interval a `ttlMs` hint can ask for.
pub(super) const MIN_TTL_MS: u64 = 1_000;

/// The server's tool list as the session keeps it: the listing under way, what
/// the list may hold, whether it changed and when it is listed again.
#[derive(Debug)]
pub(super) struct ToolList {
    /// The listing under way, page by page.
    pub(super) listing: Option<Listing>,
    /// What the tool list may hold (the server's `limits`).
    pub(super) limits: Limits,
    /// A re-list was asked for while one was running: one more follows it.
    pub(super) relist_requested: bool,
    /// A fingerprint of the last tool list reported, to report changes only
    /// (a copy of the list would double the memory a large list takes).
    pub(super) fingerprint: Option<u64>,
    /// The `x-mcp-header` annotations of the listed tools that have any, by tool.
    pub(super) param_headers: BTreeMap<String, Vec<(String, String)>>,
    /// The server's `tools.listChanged` capability.
    pub(super) list_changed: bool,
    /// When the tool list goes stale (`ttlMs`), if no subscription keeps it fresh.
    pub(super) relist_at: Option<u64>,
}

impl Default for ToolList {
    fn default() -> ToolList {
        ToolList {
            listing: None,
            limits: Limits::DEFAULT,
            relist_requested: false,
            fingerprint: None,
            param_headers: BTreeMap::new(),
            list_changed: false,
            relist_at: None,
        }
    }
}

/// One listing under way.
#[derive(Debug)]
pub(super) struct Listing {
    pub(super) initial: bool,
    pub(super) tools: Vec<ToolDef>,
    pub(super) cursors: Cursors,
    /// The bytes of the pages so far.
    pub(super) bytes: usize,
    /// The smallest `ttlMs` of the pages so far.
    pub(super) ttl_ms: Option<u64>,
}

impl Client {
    /// Holds this server's tool list to `limits` (see "Limits"); call before the
    /// session starts.
    pub fn limit(&mut self, limits: Limits) {
        self.tools.limits = limits;
    }

    pub(super) fn start_listing(&mut self, initial: bool) {
        self.tools.relist_at = None;
        self.tools.listing = Some(Listing {
            initial,
            tools: Vec::new(),
            cursors: Cursors::default(),
            bytes: 0,
            ttl_ms: None,
        });
        self.list_page(None);
    }

    pub(super) fn list_page(&mut self, cursor: Option<&str>) {
        let params = ListParams {
            cursor,
            meta: self.request_meta(None),
        };
        if cursor.is_none() && params.meta.is_empty() {
            self.request::<()>(methods::TOOLS_LIST, None, None, Pending::ListTools);
        } else {
            self.request(methods::TOOLS_LIST, None, Some(&params), Pending::ListTools);
        }
    }

    pub(super) fn on_tools_page(&mut self, outcome: Result<Box<RawValue>, Failure>) {
        let Some(mut listing) = self.tools.listing.take() else {
            return;
        };
        let raw = outcome.map_err(|e| e.to_string());
        if let Ok(raw) = &raw {
            listing.bytes = listing.bytes.saturating_add(raw.get().len());
            if listing.bytes > self.tools.limits.max_list_bytes {
                return self.fail(past_limit(
                    &self.server,
                    Past::ListBytes,
                    &self.tools.limits,
                ));
            }
        }
        let page = raw.as_deref().map_err(Clone::clone).and_then(|raw| {
            serde_json::from_str::<ListToolsResult>(raw.get())
                .map_err(|e| format!("malformed result: {e}"))
        });
        let page = page.and_then(|page| match result_kind(page.result_type.as_ref()) {
            ResultKind::Complete => Ok(page),
            other => Err(format!("answered with resultType {other:?}")),
        });
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                if listing.initial {
                    return self.fail(format!("server `{}` failed tools/list: {e}", self.server));
                }
                self.warn(format!(
                    "server `{}` failed tools/list after announcing a change ({e}); keeping its previous tools",
                    self.server
                ));
                return self.after_listing();
            }
        };
        if listing.tools.len().saturating_add(page.tools.len()) > self.tools.limits.max_tools {
            return self.fail(past_limit(&self.server, Past::Tools, &self.tools.limits));
        }
        // Sized for the page at once (the count is within `maxTools`, checked
        // above). Grown by doubling, a 10,000-tool page held the old and the new
        // buffer together: the guest's memory, which never shrinks, peaked at
        // 7.4 MiB in W4 instead of 6.6.
        listing.tools.reserve(page.tools.len());
        for raw in page.tools {
            if raw.get().len() > self.tools.limits.max_tool_bytes {
                let past = Past::ToolBytes {
                    name: tool_name(raw),
                    bytes: raw.get().len(),
                };
                return self.fail(past_limit(&self.server, past, &self.tools.limits));
            }
            match read_tool(raw) {
                Ok(tool) => listing.tools.push(tool),
                Err(e) => self.warn(format!(
                    "server `{}` listed a tool that is skipped: {e}",
                    self.server
                )),
            }
        }
        let cursor = match page.next_cursor {
            Some(Value::String(c)) if !c.is_empty() => Some(c),
            _ => None,
        };
        if let Some(cursor) = cursor {
            if listing.cursors.repeated(&cursor) {
                self.warn(format!(
                    "server `{}` sent tools/list cursor {cursor:?} twice; stopping the listing there with {} tools",
                    self.server,
                    listing.tools.len()
                ));
            } else if listing.cursors.at_limit() {
                self.warn(format!(
                    "server `{}` is still paginating tools/list after {MAX_PAGES} pages; stopping there with {} tools",
                    self.server,
                    listing.tools.len()
                ));
            } else {
                listing.cursors.followed();
                listing.ttl_ms = min_ttl(listing.ttl_ms, page.ttl_ms.as_ref());
                self.tools.listing = Some(listing);
                self.list_page(Some(&cursor));
                return;
            }
        }
        let ttl = min_ttl(listing.ttl_ms, page.ttl_ms.as_ref());
        let tools = listing.tools;
        let fingerprint = Some(fingerprint(&tools));
        self.tools.param_headers = tools
            .iter()
            .filter(|t| !t.param_headers.is_empty())
            .map(|t| (t.name.clone(), t.param_headers.clone()))
            .collect();
        self.tasks.learn(&tools);
        if listing.initial {
            self.phase = Phase::Ready;
            self.tools.fingerprint = fingerprint;
            self.events.push(ClientEvent::Ready(tools));
            self.on_ready();
        } else if fingerprint != self.tools.fingerprint {
            self.tools.fingerprint = fingerprint;
            self.events.push(ClientEvent::ToolsChanged(tools));
        }
        // A fresh-for hint matters only when no subscription reports changes;
        // 0 ("stale at once") would mean re-listing before every call: not done.
        if !self.listening()
            && let Some(ttl) = ttl.filter(|t| *t > 0)
        {
            self.tools.relist_at = Some(self.now_ms.saturating_add(ttl.max(MIN_TTL_MS)));
        }
        self.after_listing();
    }

    pub(super) fn after_listing(&mut self) {
        if core::mem::take(&mut self.tools.relist_requested) && self.phase == Phase::Ready {
            self.start_listing(false);
        }
    }

    /// Lists the tools again (now, or after the running listing), as if the
    /// server had said its list changed, and reports the list even if it is the
    /// same: the manager's rules changed, and a server's tools are filtered as
    /// its list arrives.
    pub fn relist(&mut self) {
        self.tools.fingerprint = None;
        self.on_list_changed();
    }

    /// `notifications/tools/list_changed`: a re-list now, or after the running one.
    pub(super) fn on_list_changed(&mut self) {
        match self.phase {
            // The first listing has not started; it will see the new list.
            Phase::Discovering | Phase::Initializing | Phase::Failed => {}
            Phase::Listing => self.tools.relist_requested = true,
            Phase::Ready if self.tools.listing.is_some() => self.tools.relist_requested = true,
            Phase::Ready => self.start_listing(false),
        }
    }

    /// A `ttlMs` hint passed: the list is stale, list again.
    pub(super) fn relist_if_stale(&mut self, now_ms: u64) {
        if self.phase == Phase::Ready
            && self.tools.listing.is_none()
            && self.tools.relist_at.is_some_and(|t| t <= now_ms)
        {
            self.start_listing(false);
        }
    }
}

/// Which limit a listing went past.
enum Past {
    Tools,
    ListBytes,
    /// One tool, by name (when it has a readable one) and size.
    ToolBytes {
        name: Option<String>,
        bytes: usize,
    },
}

/// What a server past a limit fails with: the limit, its field, and the entry
/// that raises it (to twice the limit, or what the tool needs if more).
fn past_limit(server: &str, past: Past, limits: &Limits) -> String {
    let raise = |field: &str, value: usize| {
        format!(
            "if it should, raise the limit in its configuration entry: \"limits\": {{\"{field}\": {value}}}"
        )
    };
    match past {
        Past::Tools => format!(
            "server `{server}` lists more than {} tools (its `limits.maxTools`); {}",
            limits.max_tools,
            raise("maxTools", limits.max_tools.saturating_mul(2))
        ),
        Past::ListBytes => format!(
            "server `{server}` lists more than {} of tools (its `limits.maxListBytes`); {}",
            limit_bytes(limits.max_list_bytes),
            raise("maxListBytes", limits.max_list_bytes.saturating_mul(2))
        ),
        Past::ToolBytes { name, bytes } => format!(
            "server `{server}` lists a tool of {}{}, more than its limit of {} per tool \
             (its `limits.maxToolBytes`); {}",
            format_bytes(bytes as u64),
            name.map(|n| format!(" (`{n}`)")).unwrap_or_default(),
            limit_bytes(limits.max_tool_bytes),
            raise(
                "maxToolBytes",
                limits
                    .max_tool_bytes
                    .saturating_mul(2)
                    .max(bytes.next_power_of_two())
            )
        ),
    }
}

/// A limit in bytes as people read it, exactly: `16 MiB`, or `100000 bytes`
/// where a unit would round it.
fn limit_bytes(bytes: usize) -> String {
    let round = [1 << 30, 1 << 20, 1 << 10]
        .iter()
        .any(|unit| bytes >= *unit && bytes.is_multiple_of(*unit));
    if round {
        format_bytes(bytes as u64)
    } else {
        format!("{bytes} bytes")
    }
}

/// A tool's name, read without reading the rest of it, for messages.
fn tool_name(raw: &RawValue) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: Option<Value>,
    }
    match serde_json::from_str::<Named>(raw.get()).ok()?.name? {
        Value::String(name) => Some(jsonrpc::truncate(&name, 80)),
        _ => None,
    }
}

/// The smaller of two `ttlMs` hints.
pub(super) fn min_ttl(current: Option<u64>, page: Option<&Value>) -> Option<u64> {
    match (current, page.and_then(Value::as_u64)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A 64-bit fingerprint of a tool list (every field, with its length, so no two
/// different lists of realistic size share one but by a 2^-64 chance). FxHash's
/// mixing, a word at a time: a 10,000-tool list takes well under a millisecond.
pub(super) fn fingerprint(tools: &[ToolDef]) -> u64 {
    struct Fx(u64);
    impl Fx {
        fn word(&mut self, w: u64) {
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
        fn text(&mut self, t: Option<&str>) {
            let Some(t) = t else {
                return self.word(u64::MAX);
            };
            self.word(t.len() as u64);
            let mut chunks = t.as_bytes().chunks_exact(8);
            for c in &mut chunks {
                self.word(u64::from_le_bytes(c.try_into().unwrap_or_default()));
            }
            let mut last = [0u8; 8];
            last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
            self.word(u64::from_le_bytes(last));
        }
    }
    let mut h = Fx(tools.len() as u64);
    for t in tools {
        h.text(Some(&t.name));
        h.text(t.title.as_deref());
        h.text(t.description.as_deref());
        h.text(Some(&t.input_schema));
        h.text(t.output_schema.as_deref());
        h.text(t.annotations.as_deref());
        h.word(t.task_support as u64);
    }
    h.0
}

pub(super) fn read_tool(raw: &RawValue) -> Result<ToolDef, String> {
    let t: RawTool = serde_json::from_str(raw.get())
        .map_err(|e| format!("{e} in {}", jsonrpc::truncate(raw.get(), 80)))?;
    let name = match t.name {
        Value::String(n) if !n.is_empty() => n,
        other => return Err(format!("its name is {other}, not a non-empty string")),
    };
    let param_headers = match &t.input_schema {
        Some(schema) if schema.get().contains("x-mcp-header") => check_param_headers(schema.get())
            .map_err(|e| format!("`{name}` has an invalid x-mcp-header: {e}"))?,
        _ => Vec::new(),
    };
    let annotations = t
        .annotations
        .map(|a| a.get().to_string())
        .filter(|a| a != "null");
    let title = text_of(t.title).or_else(|| {
        annotations
            .as_deref()
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
            .and_then(|a| text_of(a.get("title").cloned()))
    });
    Ok(ToolDef {
        name,
        title,
        description: text_of(t.description),
        // MCP requires an input schema; the registry needs one, so a missing one
        // means "an object with anything in it", which is what servers mean by it.
        input_schema: t.input_schema.map_or_else(
            || r#"{"type":"object"}"#.to_string(),
            |s| s.get().to_string(),
        ),
        output_schema: t.output_schema.map(|s| s.get().to_string()),
        annotations,
        param_headers,
        task_support: crate::registry::TaskSupport::read(t.execution.as_ref()),
    })
}

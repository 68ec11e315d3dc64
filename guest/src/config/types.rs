//! The configuration's leaf: what every module that reads a part of the
//! configuration shares — the issue a problem becomes, a server's limits, and the
//! reading of JSON values without building them (members in file order, kinds
//! for messages). It depends on nothing else of the crate's, so the modules that
//! read their own section (`sandbox`, `permissions`, `output`, `audit`, `roots`)
//! and the ones the configuration configures (`client`, `registry`) import it
//! without importing the parser that imports them.

use crate::prelude::*;
use core::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// What one server's tool list may hold, so that one server's data never costs
/// the others: all servers share the guest's memory (256 MiB by default), and a
/// server that lists a million tools would otherwise exhaust it and take every
/// server down with the guest. A server past a limit fails alone, with a message
/// naming the limit and the `limits` field that raises it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `maxTools`: tools in the listing, all pages together.
    pub max_tools: usize,
    /// `maxListBytes`: the JSON text of the listing, all pages together.
    pub max_list_bytes: usize,
    /// `maxToolBytes`: the JSON text of one tool (name, description, schemas).
    pub max_tool_bytes: usize,
}

impl Limits {
    /// 10,000 tools (a large real server lists a few hundred), 16 MiB of listing
    /// (10,000 tools with ordinary schemas take about 2.5 MiB) and 1 MiB per tool.
    pub const DEFAULT: Limits = Limits {
        max_tools: 10_000,
        max_list_bytes: 16 * 1024 * 1024,
        max_tool_bytes: 1024 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// A problem found in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    /// The server entry concerned, if the problem is inside one.
    pub server: Option<String>,
    /// The field, as a path below the server entry (`args[2]`, `env.API_KEY`).
    pub field: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.server, &self.field) {
            (Some(s), Some(field)) => write!(f, "server `{s}`, {field}: {}", self.message),
            (Some(s), None) => write!(f, "server `{s}`: {}", self.message),
            (None, Some(field)) => write!(f, "{field}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

/// A JSON object's members in the order they were written. `serde_json::Map`
/// sorts its keys unless `preserve_order` is on workspace-wide; collecting the
/// members ourselves keeps file order without changing the host's serde_json.
pub(crate) struct Members(pub(crate) Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

impl Members {
    /// The members of a JSON object, each value unread; `None` when `raw` is not
    /// an object. One level deep, so no value's depth matters.
    pub(crate) fn read(raw: &RawValue) -> Option<Members> {
        serde_json::from_str(raw.get()).ok()
    }

    /// The last member of that name, as `JSON.parse` (and so every Node-based
    /// MCP client) reads a repeated key.
    pub(crate) fn get(&self, key: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| &**v)
    }
}

/// A configuration value, read without building it: a `serde_json::Value` stops
/// at 128 levels of nesting and cannot hold `1e999`, and a value it cannot build
/// must be reported for what it is, never read as `null` (which drops the field).
/// Arrays and objects are read one level at a time where a field wants one.
pub(crate) enum Json {
    Null,
    Bool(bool),
    Str(String),
    /// A string with an escape that is not text (a lone surrogate), and why.
    BadStr(String),
    /// A number, as written.
    Num(String),
    Array,
    Object,
}

impl Json {
    pub(crate) fn read(raw: &RawValue) -> Json {
        let text = raw.get().trim();
        match text.as_bytes().first() {
            Some(b'{') => Json::Object,
            Some(b'[') => Json::Array,
            Some(b'"') => match serde_json::from_str(text) {
                Ok(s) => Json::Str(s),
                Err(e) => Json::BadStr(e.to_string()),
            },
            Some(b't') => Json::Bool(true),
            Some(b'f') => Json::Bool(false),
            Some(b'n') => Json::Null,
            _ => Json::Num(text.to_string()),
        }
    }

    /// A short name of its type, for messages.
    pub(crate) fn kind(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(_) => "a boolean".into(),
            Json::Str(_) => "a string".into(),
            Json::BadStr(why) => format!("a string that is not text ({why})"),
            Json::Num(_) => "a number".into(),
            Json::Array => "an array".into(),
            Json::Object => "an object".into(),
        }
    }

    /// How it would look quoted, for "quote it" hints.
    pub(crate) fn unquoted(&self) -> String {
        match self {
            Json::Str(s) => s.clone(),
            Json::Num(n) => n.clone(),
            Json::Bool(b) => b.to_string(),
            Json::Null => "null".into(),
            Json::BadStr(_) | Json::Array | Json::Object => "…".into(),
        }
    }
}

/// A short name for the type of a JSON value that may be too deep or too large
/// for a `serde_json::Value`, for messages.
pub(crate) fn kind_of_raw(raw: &RawValue) -> String {
    Json::read(raw).kind()
}

/// A short name for a JSON value's type, for messages.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

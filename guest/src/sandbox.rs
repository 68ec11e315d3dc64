//! A stdio server's `sandbox` block: what its process may reach.
//!
//! The grants are the host's to enforce (Linux: Landlock and `no_new_privs` in the
//! child before `exec`); the guest only reads them from the configuration and
//! hands them over in the endpoint, paths as written (`${VAR}` references are
//! resolved by the host, like every other field). The shape follows wassette's
//! storage / network / environment model, flattened:
//!
//! ```json
//! "sandbox": {
//!   "read":  ["${HOME}/projects"],          // paths it may read (and execute from)
//!   "write": ["/tmp/scratch"],              // paths it may read and write
//!   "network": false,                       // or true, or {"connect": [443], "bind": []}
//!   "env": ["PATH", "HOME"],                // the only ambient variables that pass
//!   "require": true                         // false: downgrade, with a warning, what the kernel cannot enforce
//! }
//! ```
//!
//! A sandbox confines the filesystem (only the grants, plus what the host adds so
//! the program can run at all) and, unless `network` is `true`, TCP. A problem
//! in the block skips the server (it is not started unconfined); an unknown key
//! is reported and ignored.

use crate::prelude::*;

use serde_json::Value;

use crate::config::types::kind_of;

/// What a sandboxed server may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Paths it may read and execute from, as written.
    pub read: Vec<String>,
    /// Paths it may read and write, as written.
    pub write: Vec<String>,
    /// Its TCP access.
    pub network: Network,
    /// The ambient environment variables that pass, instead of the host's
    /// allowlist; `None`: the allowlist. The entry's own `env` always passes.
    pub env: Option<Vec<String>>,
    /// Whether a grant the kernel cannot enforce fails the start (true) or is
    /// dropped with a warning (false).
    pub require: bool,
}

/// A sandboxed server's network access (TCP; docs/configuration.md, "Sandboxed servers",
/// says what Landlock does not cover).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Network {
    /// No TCP connect or bind.
    None,
    /// Unrestricted.
    All,
    /// Only these ports.
    Ports {
        /// Ports it may connect to.
        connect: Vec<u16>,
        /// Ports it may bind.
        bind: Vec<u16>,
    },
}

/// The keys of a `sandbox` block.
const KEYS: [&str; 5] = ["read", "write", "network", "env", "require"];

/// Reads a `sandbox` block. `issue(field, message, fatal)` records a problem;
/// a fatal one skips the server. `None` when the block is `null`.
pub fn parse(value: &Value, issue: &mut dyn FnMut(String, String, bool)) -> Option<Sandbox> {
    let Value::Object(map) = value else {
        if !value.is_null() {
            issue(
                "sandbox".into(),
                format!(
                    "must be an object like {{\"read\": [\"/data\"], \"network\": false}}, but is {}",
                    kind_of(value)
                ),
                true,
            );
        }
        return None;
    };
    for key in map.keys() {
        if !KEYS.contains(&key.as_str()) {
            issue(
                format!("sandbox.{key}"),
                format!(
                    "unknown key `{key}`, ignored (a sandbox has `read`, `write`, `network`, \
                     `env` and `require`)"
                ),
                false,
            );
        }
    }
    let mut list = |key: &str, what: &str| -> Vec<String> {
        match map.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if !s.is_empty() => out.push(s.clone()),
                        other => issue(
                            format!("sandbox.{key}[{i}]"),
                            format!(
                                "must be {what} (a non-empty string), but is {}",
                                shown(other)
                            ),
                            true,
                        ),
                    }
                }
                out
            }
            Some(other) => {
                issue(
                    format!("sandbox.{key}"),
                    format!("must be a list of {what}s, but is {}", kind_of(other)),
                    true,
                );
                Vec::new()
            }
        }
    };
    let read = list("read", "a path");
    let write = list("write", "a path");
    let env = map
        .get("env")
        .filter(|v| !v.is_null())
        .map(|_| list("env", "a variable name"));
    let network = match map.get("network") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Network::None,
        Some(Value::Bool(true)) => Network::All,
        Some(Value::Object(ports)) => {
            for key in ports.keys().filter(|k| *k != "connect" && *k != "bind") {
                issue(
                    format!("sandbox.network.{key}"),
                    format!("unknown key `{key}`, ignored (ports are `connect` and `bind`)"),
                    false,
                );
            }
            let mut read_ports = |key: &str| -> Vec<u16> {
                match ports.get(key) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => {
                        let mut out = Vec::new();
                        for (i, item) in items.iter().enumerate() {
                            match item.as_u64().and_then(|p| u16::try_from(p).ok()) {
                                Some(port) => out.push(port),
                                None => issue(
                                    format!("sandbox.network.{key}[{i}]"),
                                    format!(
                                        "must be a TCP port number (0 to 65535), but is {}",
                                        shown(item)
                                    ),
                                    true,
                                ),
                            }
                        }
                        out
                    }
                    Some(other) => {
                        issue(
                            format!("sandbox.network.{key}"),
                            format!(
                                "must be a list of port numbers like [443], but is {}",
                                kind_of(other)
                            ),
                            true,
                        );
                        Vec::new()
                    }
                }
            };
            Network::Ports {
                connect: read_ports("connect"),
                bind: read_ports("bind"),
            }
        }
        Some(other) => {
            issue(
                "sandbox.network".into(),
                format!(
                    "must be true, false or {{\"connect\": [ports], \"bind\": [ports]}}, but is {}",
                    shown(other)
                ),
                true,
            );
            Network::None
        }
    };
    let require = match map.get("require") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            issue(
                "sandbox.require".into(),
                format!("must be true or false, but is {}", kind_of(other)),
                true,
            );
            true
        }
    };
    Some(Sandbox {
        read,
        write,
        network,
        env,
        require,
    })
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        other => kind_of(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> (Option<Sandbox>, Vec<(String, bool)>) {
        let mut issues = Vec::new();
        let s = parse(&v, &mut |field, _, fatal| issues.push((field, fatal)));
        (s, issues)
    }

    #[test]
    fn every_field() {
        let (s, issues) = read(json!({
            "read": ["${HOME}/p", "/data"], "write": ["/tmp/x"],
            "network": {"connect": [443, 8080], "bind": []}, "env": ["PATH"], "require": false
        }));
        assert_eq!(issues, vec![]);
        assert_eq!(
            s,
            Some(Sandbox {
                read: vec!["${HOME}/p".into(), "/data".into()],
                write: vec!["/tmp/x".into()],
                network: Network::Ports {
                    connect: vec![443, 8080],
                    bind: vec![]
                },
                env: Some(vec!["PATH".into()]),
                require: false,
            })
        );
    }

    #[test]
    fn defaults_confine_everything() {
        let (s, issues) = read(json!({}));
        assert_eq!(issues, vec![]);
        let s = s.unwrap();
        assert_eq!((s.read.len(), s.write.len()), (0, 0));
        assert_eq!(s.network, Network::None);
        assert_eq!(s.env, None);
        assert!(s.require);
        assert_eq!(
            read(json!({"network": true})).0.unwrap().network,
            Network::All
        );
        assert_eq!(read(Value::Null).0, None);
    }

    #[test]
    fn problems_name_the_field_and_bad_grants_are_fatal() {
        let (_, issues) = read(json!({
            "read": "/data", "write": [5], "network": {"connect": [70000], "listen": [1]},
            "colour": 1, "require": "yes"
        }));
        assert_eq!(
            issues,
            vec![
                ("sandbox.colour".into(), false),
                ("sandbox.read".into(), true),
                ("sandbox.write[0]".into(), true),
                ("sandbox.network.listen".into(), false),
                ("sandbox.network.connect[0]".into(), true),
                ("sandbox.require".into(), true),
            ]
        );
        assert_eq!(read(json!(["/x"])).1, vec![("sandbox".into(), true)]);
        assert_eq!(
            read(json!({"network": "none"})).1,
            vec![("sandbox.network".into(), true)]
        );
    }

    #[test]
    fn in_a_configuration() {
        use crate::transport::Endpoint;
        let c = crate::config::parse(
            ".mcp.json",
            r#"{"mcpServers": {
                "ok": {"command": "x", "sandbox": {"read": ["/d"], "colour": 1}},
                "bad": {"command": "x", "sandbox": {"read": "/d"}},
                "remote": {"url": "https://x.example/mcp", "sandbox": {}}
            }}"#,
        )
        .unwrap();
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["ok", "remote"],
            "a bad sandbox is not started unconfined"
        );
        let Endpoint::Stdio { sandbox, .. } = &c.servers[0].endpoint else {
            panic!()
        };
        assert_eq!(sandbox.as_ref().unwrap().read, ["/d"]);
        let issues: Vec<(&str, &str)> = c
            .issues
            .iter()
            .map(|i| (i.server.as_deref().unwrap(), i.field.as_deref().unwrap()))
            .collect();
        assert_eq!(
            issues,
            [
                ("ok", "sandbox.colour"),
                ("bad", "sandbox.read"),
                ("remote", "sandbox")
            ]
        );
        assert!(
            c.issues[2].message.contains("remote"),
            "{}",
            c.issues[2].message
        );
    }
}

//! A controllable MCP server for mcpbox's tests.
//!
//! It speaks MCP over stdio as newline-delimited JSON-RPC 2.0: one JSON message per
//! line on stdout, diagnostics only on stderr. It starts instantly, depends on
//! nothing but `serde_json` and `std`, and its misbehaviour is chosen on the command
//! line, so a test can aim one fault at the client at a time.
//!
//! # Methods
//!
//! | method | behaviour |
//! |---|---|
//! | `initialize` | answers the client's `protocolVersion` when it is one of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, else 2025-11-25; capabilities `tools.listChanged` and `logging` |
//! | `notifications/initialized` | accepted |
//! | `ping` | `{}` |
//! | `tools/list` | every tool, in pages of `--page-size` with an opaque `nextCursor`; a bad cursor is -32602 |
//! | `tools/call` | runs on a thread of its own (an idle one reused, or a new one when every one is busy), so a slow call never delays another; `sleep` is answered by one timer thread instead (no thread start per call: 200 concurrent sleeps are all under way within a millisecond) |
//! | `notifications/cancelled` | records `requestId` (see the `cancellations` tool) and stops a running `sleep`, `progress`, `elicit` or `sample` call, which then sends no response |
//! | a response | kept when it answers an `elicit` call's `elicitation/create` or a `sample` call's `sampling/createMessage` |
//! | `logging/setLevel` | `{}` |
//! | `resources/list`, `resources/read` | with `--blob-resources` only (see there) |
//! | anything else | -32601 for requests, ignored for notifications |
//!
//! A line that is not JSON gets a -32700 error with id `null`; a batch (JSON array) or
//! a non-object gets -32600. Stdin closing ends the process at once, in-flight calls
//! included.
//!
//! # Flags
//!
//! | flag | effect |
//! |---|---|
//! | `--name NAME` | `serverInfo.name` (default `fixture`) |
//! | `--protocol VERSION` | always answer this `protocolVersion` (e.g. `2024-11-05`, or an unsupported `1999-01-01`) |
//! | `--tools N` | add tools `tool_0` … `tool_{N-1}` (echo-like, see below) |
//! | `--page-size K` | `tools/list` returns K tools per page |
//! | `--weird-names` | add echo-like tools whose names need sanitising ([`fixture::WEIRD_NAMES`]): `read.file`, `héllo wörld`, `a/b:c`, `emoji🚀tool`, the already-valid `ok-name_1`, and two names longer than 64 characters once namespaced that share their first 70 characters |
//! | `--tool NAME` | add an echo-like tool called NAME (repeatable) |
//! | `--flood-tools N` | the first `tools/list` page also lists N tiny tools `flood_0` … (`{"name":…,"inputSchema":{"type":"object"}}`, about 50 bytes each), written as text so a million of them cost the fixture no more than the line; they cannot be called |
//! | `--flood-tool-bytes B` | pad each `--flood-tools` tool with a description, to about B bytes of JSON |
//! | `--describe NAME=TEXT` | give the tool NAME (any tool above) the description TEXT (repeatable) |
//! | `--schema NAME=JSON` | give the tool NAME the `inputSchema` JSON (repeatable); its calls still run as before |
//! | `--big-tool BYTES` | add an echo-like tool `big` whose description is BYTES characters long |
//! | `--collide` | add echo-like tools `x.y` and `x_y` ([`fixture::COLLIDING_NAMES`]), which collide once sanitised |
//! | `--exit-on-init CODE` | on `initialize`, write a line to stderr and exit with CODE |
//! | `--no-init-reply` | never answer `initialize` |
//! | `--start-delay-ms MS` | sleep MS before reading stdin |
//! | `--deaf-after-list` | once it has answered `tools/list`, never read stdin again (it keeps running; its stdin pipe fills up) |
//! | `--garbage` | write a non-JSON line to stdout before every message |
//! | `--stderr-lines N` | write N lines to stderr at start |
//! | `--bad-ids` | around every response, also send the same response with its id as a string, with an id nobody asked for, and a second time (a duplicate) |
//! | `--spawn-child` | start a `sleep 600` child process at start (it shares the server's process group; see the `pids` tool) |
//! | `--escapee` | start a `sleep 600` grandchild that calls `setsid` (leaving the process group and session) and is orphaned at once, as a daemon is (see the `pids` tool) |
//! | `--escapee-clean-env` | the same, started with an empty environment (`env -i`) |
//! | `--blob-resources` | declare `resources`; list one resource, `fixture://blob/1024`; read `fixture://blob/N` as a blob of N zero bytes (`application/octet-stream`), whatever N is (a test asks for 100 MB) |
//! | `--announce-sleeps` | on the arrival of each valid `sleep` call, before it starts, send `notifications/message` (level `info`, data [`fixture::SLEEP_STARTED`], no `logger`): a test awaits it to know the call reached the server |
//!
//! # Tools
//!
//! Always present, each with an object `inputSchema` (`properties`, `required`):
//!
//! | tool | arguments | result |
//! |---|---|---|
//! | `echo` | `text: string` (required) | text content `text` |
//! | `add` | `a: number, b: number` (required) | text of the sum, `structuredContent {"sum": …}` (integers stay integers) |
//! | `sleep` | `ms: integer` (required), `pad: string` (ignored) | waits, then `slept MS`; cancellable |
//! | `fail` | `message: string` | `isError: true` with text `message` (default `failed`) |
//! | `crash` | `code: integer` | writes a stderr line and exits with `code` (default 1) at once |
//! | `cancellations` | none | text: JSON array of the request ids seen in `notifications/cancelled` |
//! | `add_tool` | `name: string` (required), `description: string` | adds an echo-like tool, or with `description` sets the description of the tool `name` (added when missing), and sends `notifications/tools/list_changed` |
//! | `log` | `text: string` (required) | writes `text` to stderr and sends `notifications/message` (level `info`) |
//! | `huge` | `bytes: integer` (required) | one text block of `bytes` ASCII `x` characters |
//! | `progress` | `steps: integer` (required), `interval_ms: integer` | sends `steps` `notifications/progress` (when the request has `_meta.progressToken`), `interval_ms` apart (default 10), then `done N`; cancellable |
//! | `multi` | `parts: string[]` (required) | one text block per part |
//! | `image` | `count: integer` | a text block `a red pixel` and `count` (default 1) 1×1 PNG image blocks |
//! | `flood` | `count: integer` (required) | sends `count` `notifications/message` lines as fast as it can, then `flooded N` |
//! | `close_stdout` | none | closes stdout and keeps running without ever answering (only stdin closing ends it) |
//! | `read_text` | `path: string` (required) | the file's text, or `isError` with the OS error (`Permission denied (os error 13)` in a sandbox) |
//! | `write_text` | `path: string`, `text: string` (required) | writes `text` to the file (created or replaced): `wrote N bytes`, or `isError` with the OS error |
//! | `env_var` | `name: string` (required) | the value of the environment variable `name`, or `(unset)` |
//! | `connect` | `port: integer` (required) | opens and closes a TCP connection to `127.0.0.1:port`: `connected to …`, or `isError` with the OS error |
//! | `pids` | none | text: JSON `{"pid": …, "children": […], "escapees": […]}`, the server's pid, its `--spawn-child` child and its `--escapee` grandchild |
//! | `raw_result` | `result: string` (required) | answers with `result` as the JSON-RPC `result`, verbatim: text serde_json could not hold (10,000 levels deep, `1e999`) reaches the client as written |
//! | `elicit` | `message: string` | sends `elicitation/create` (form mode; schema: `name` string default `Ada`, `age` integer default 36, `color` enum `red`/`green` without default) and waits for the answer; text: the answer's `result` as JSON, or `isError` with the JSON-RPC error's message; cancellable |
//! | `sample` | `prompt: string` | sends `sampling/createMessage` (the prompt as one user message, `maxTokens` 20) and waits for the answer; text: the answer's `result` as JSON, or `isError` with the JSON-RPC error's code and message; cancellable |
//!
//! Echo-like tools (`--tools`, `--tool`, `--weird-names`, `--collide`, `add_tool`) take an
//! optional `text` and return it, or their own name when it is absent, so a test can
//! tell which of two colliding tools was called.
//!
//! Invalid arguments produce a tool result with `isError: true` (as MCP 2025-11-25
//! asks, so a model can correct itself); an unknown tool is JSON-RPC error -32602.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, BufRead, Write};
use std::process;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use mcpbox_tests::fixture;
use serde_json::{Map, Value, json};

/// Protocol versions of the `initialize` era that the fixture will agree to.
const SUPPORTED_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// What the fixture answers when the client asks for a version it does not know.
const LATEST_VERSION: &str = "2025-11-25";

/// A 1×1 red PNG, base64.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// JSON-RPC error codes used here.
mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
}

/// Behaviour chosen on the command line.
#[derive(Debug, Clone)]
struct Options {
    name: String,
    protocol: Option<String>,
    tools: usize,
    page_size: Option<usize>,
    weird_names: bool,
    extra_tools: Vec<String>,
    /// `--describe`: descriptions to set, by tool name.
    descriptions: Vec<(String, String)>,
    /// `--schema`: input schemas to set, by tool name.
    schemas: Vec<(String, Value)>,
    flood_tools: usize,
    flood_tool_bytes: usize,
    big_tool: Option<usize>,
    collide: bool,
    exit_on_init: Option<i32>,
    no_init_reply: bool,
    start_delay: Duration,
    deaf_after_list: bool,
    garbage: bool,
    stderr_lines: usize,
    bad_ids: bool,
    spawn_child: bool,
    announce_sleeps: bool,
    blob_resources: bool,
    escapee: Option<Escapee>,
}

/// A grandchild that leaves the server's process group and session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escapee {
    /// With the server's environment.
    KeepEnv,
    /// With an empty environment.
    CleanEnv,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            name: "fixture".to_owned(),
            protocol: None,
            tools: 0,
            page_size: None,
            weird_names: false,
            extra_tools: Vec::new(),
            descriptions: Vec::new(),
            schemas: Vec::new(),
            flood_tools: 0,
            flood_tool_bytes: 0,
            big_tool: None,
            collide: false,
            exit_on_init: None,
            no_init_reply: false,
            start_delay: Duration::ZERO,
            deaf_after_list: false,
            garbage: false,
            stderr_lines: 0,
            bad_ids: false,
            spawn_child: false,
            announce_sleeps: false,
            blob_resources: false,
            escapee: None,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--name" => options.name = value()?,
                "--protocol" => options.protocol = Some(value()?),
                "--tools" => options.tools = number(&flag, &value()?)?,
                "--page-size" => {
                    let size = number(&flag, &value()?)?;
                    if size == 0 {
                        return Err("--page-size must be at least 1".to_owned());
                    }
                    options.page_size = Some(size);
                }
                "--weird-names" => options.weird_names = true,
                "--tool" => options.extra_tools.push(value()?),
                "--describe" => {
                    let v = value()?;
                    let (name, text) = v.split_once('=').ok_or("--describe needs NAME=TEXT")?;
                    options
                        .descriptions
                        .push((name.to_owned(), text.to_owned()));
                }
                "--schema" => {
                    let v = value()?;
                    let (name, json) = v.split_once('=').ok_or("--schema needs NAME=JSON")?;
                    let schema = serde_json::from_str(json)
                        .map_err(|e| format!("--schema {name}: not JSON: {e}"))?;
                    options.schemas.push((name.to_owned(), schema));
                }
                "--flood-tools" => options.flood_tools = number(&flag, &value()?)?,
                "--flood-tool-bytes" => options.flood_tool_bytes = number(&flag, &value()?)?,
                "--big-tool" => options.big_tool = Some(number(&flag, &value()?)?),
                "--collide" => options.collide = true,
                "--exit-on-init" => options.exit_on_init = Some(number(&flag, &value()?)?),
                "--no-init-reply" => options.no_init_reply = true,
                "--start-delay-ms" => {
                    options.start_delay = Duration::from_millis(number(&flag, &value()?)?);
                }
                "--deaf-after-list" => options.deaf_after_list = true,
                "--garbage" => options.garbage = true,
                "--stderr-lines" => options.stderr_lines = number(&flag, &value()?)?,
                "--bad-ids" => options.bad_ids = true,
                "--spawn-child" => options.spawn_child = true,
                "--escapee" => options.escapee = Some(Escapee::KeepEnv),
                "--escapee-clean-env" => options.escapee = Some(Escapee::CleanEnv),
                "--announce-sleeps" => options.announce_sleeps = true,
                "--blob-resources" => options.blob_resources = true,
                "--help" | "-h" => {
                    eprintln!("usage: fixture-server [FLAGS]; see the source's module docs");
                    process::exit(0);
                }
                other => return Err(format!("unknown flag {other:?}")),
            }
        }
        Ok(options)
    }
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag}: {text:?} is not a valid number"))
}

/// The response to a first `tools/list` with `--flood-tools N`: `result`'s tools,
/// then N tiny tools (each padded to about `bytes` with a description), built as text.
fn flooded(id: &Value, result: &Value, n: usize, bytes: usize) -> String {
    let mut line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#);
    let listed = result["tools"].as_array().map_or(&[][..], Vec::as_slice);
    let mut items = listed.iter().map(Value::to_string).collect::<Vec<_>>();
    let padding = match bytes.saturating_sub(80) {
        0 => String::new(),
        pad => format!(r#""description":"{}","#, "d".repeat(pad)),
    };
    items.extend(
        (0..n).map(|i| {
            format!(r#"{{"name":"flood_{i}",{padding}"inputSchema":{{"type":"object"}}}}"#)
        }),
    );
    line.push_str(&items.join(","));
    line.push(']');
    if let Some(cursor) = result.get("nextCursor") {
        line.push_str(&format!(r#","nextCursor":{cursor}"#));
    }
    line.push_str("}}");
    line
}

/// What a tool does when called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Echo,
    Add,
    Sleep,
    Fail,
    Crash,
    Cancellations,
    AddTool,
    Log,
    Huge,
    Progress,
    Multi,
    Image,
    Flood,
    CloseStdout,
    Pids,
    Elicit,
    Sample,
    ReadText,
    WriteText,
    EnvVar,
    Connect,
    RawResult,
    /// Returns `text`, or the tool's own name.
    EchoLike,
}

/// One tool as listed by `tools/list`.
#[derive(Debug, Clone)]
struct Tool {
    name: String,
    kind: Kind,
    definition: Value,
}

impl Tool {
    fn new(
        name: &str,
        kind: Kind,
        description: &str,
        properties: Value,
        required: &[&str],
    ) -> Self {
        let definition = json!({
            "name": name,
            "description": description,
            "inputSchema": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            },
        });
        Tool {
            name: name.to_owned(),
            kind,
            definition,
        }
    }

    fn echo_like(name: &str) -> Self {
        Tool::new(
            name,
            Kind::EchoLike,
            "Returns `text`, or this tool's own name when `text` is absent.",
            json!({"text": {"type": "string", "description": "Text to return."}}),
            &[],
        )
    }

    fn with_output_schema(mut self, schema: Value) -> Self {
        self.definition["outputSchema"] = schema;
        self
    }
}

fn builtin_tools() -> Vec<Tool> {
    let text = |description: &str| json!({"type": "string", "description": description});
    vec![
        Tool::new(
            "echo",
            Kind::Echo,
            "Returns the text it is given.",
            json!({"text": text("Text to echo.")}),
            &["text"],
        ),
        Tool::new(
            "add",
            Kind::Add,
            "Adds two numbers.",
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"],
        )
        .with_output_schema(json!({
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        })),
        Tool::new(
            "sleep",
            Kind::Sleep,
            "Waits `ms` milliseconds, then answers. Stops without answering when cancelled.",
            json!({"ms": {"type": "integer", "minimum": 0},
                   "pad": text("Ignored: makes the request as large as a test needs.")}),
            &["ms"],
        ),
        Tool::new(
            "fail",
            Kind::Fail,
            "Returns a tool error (isError) with `message`.",
            json!({"message": text("The error text.")}),
            &[],
        ),
        Tool::new(
            "crash",
            Kind::Crash,
            "Exits the server process immediately with `code`.",
            json!({"code": {"type": "integer", "minimum": 0, "maximum": 255}}),
            &[],
        ),
        Tool::new(
            "cancellations",
            Kind::Cancellations,
            "Lists the request ids received in notifications/cancelled, as a JSON array.",
            json!({}),
            &[],
        ),
        Tool::new(
            "add_tool",
            Kind::AddTool,
            "Adds an echo-like tool (or sets a tool's description) and sends notifications/tools/list_changed.",
            json!({"name": text("Name of the new tool."), "description": text("A description to set.")}),
            &["name"],
        ),
        Tool::new(
            "log",
            Kind::Log,
            "Writes `text` to stderr and sends it as a notifications/message log line.",
            json!({"text": text("The log line.")}),
            &["text"],
        ),
        Tool::new(
            "huge",
            Kind::Huge,
            "Returns one text block of `bytes` ASCII 'x' characters.",
            json!({"bytes": {"type": "integer", "minimum": 0}}),
            &["bytes"],
        ),
        Tool::new(
            "progress",
            Kind::Progress,
            "Sends `steps` progress notifications `interval_ms` apart, then answers.",
            json!({
                "steps": {"type": "integer", "minimum": 0},
                "interval_ms": {"type": "integer", "minimum": 0},
            }),
            &["steps"],
        ),
        Tool::new(
            "multi",
            Kind::Multi,
            "Returns one text block per element of `parts`.",
            json!({"parts": {"type": "array", "items": {"type": "string"}}}),
            &["parts"],
        ),
        Tool::new(
            "image",
            Kind::Image,
            "Returns a text block and `count` (default 1) 1x1 PNG image blocks.",
            json!({"count": {"type": "integer", "minimum": 0}}),
            &[],
        ),
        Tool::new(
            "flood",
            Kind::Flood,
            "Sends `count` log notifications as fast as it can, then answers.",
            json!({"count": {"type": "integer", "minimum": 0}}),
            &["count"],
        ),
        Tool::new(
            "close_stdout",
            Kind::CloseStdout,
            "Closes stdout and keeps running without answering.",
            json!({}),
            &[],
        ),
        Tool::new(
            "elicit",
            Kind::Elicit,
            "Asks the user for a name, an age and a colour (elicitation) and returns the answer.",
            json!({"message": text("What to ask.")}),
            &[],
        ),
        Tool::new(
            "sample",
            Kind::Sample,
            "Asks the client's model for a message (sampling) and returns the answer.",
            json!({"prompt": text("What to ask the model.")}),
            &[],
        ),
        Tool::new(
            "raw_result",
            Kind::RawResult,
            "Answers with `result` as the JSON-RPC result, verbatim.",
            json!({"result": text("The result object, as JSON text.")}),
            &["result"],
        ),
        Tool::new(
            "pids",
            Kind::Pids,
            "Returns the server's pid and its children's, as JSON text.",
            json!({}),
            &[],
        ),
        Tool::new(
            "read_text",
            Kind::ReadText,
            "Returns the text of the file at `path` (for sandbox tests).",
            json!({"path": {"type": "string"}}),
            &["path"],
        ),
        Tool::new(
            "write_text",
            Kind::WriteText,
            "Writes `text` to the file at `path` (for sandbox tests).",
            json!({"path": {"type": "string"}, "text": {"type": "string"}}),
            &["path", "text"],
        ),
        Tool::new(
            "env_var",
            Kind::EnvVar,
            "Returns the value of the environment variable `name` (for sandbox tests).",
            json!({"name": {"type": "string"}}),
            &["name"],
        ),
        Tool::new(
            "connect",
            Kind::Connect,
            "Opens a TCP connection to 127.0.0.1:`port` and closes it (for sandbox tests).",
            json!({"port": {"type": "integer", "minimum": 0, "maximum": 65535}}),
            &["port"],
        ),
    ]
}

fn initial_tools(options: &Options) -> Vec<Tool> {
    let mut tools = builtin_tools();
    tools.extend((0..options.tools).map(|i| Tool::echo_like(&format!("tool_{i}"))));
    if options.weird_names {
        tools.extend(
            fixture::WEIRD_NAMES
                .iter()
                .map(|name| Tool::echo_like(name)),
        );
    }
    tools.extend(options.extra_tools.iter().map(|name| Tool::echo_like(name)));
    if let Some(bytes) = options.big_tool {
        let mut big = Tool::echo_like("big");
        big.definition["description"] = Value::String("d".repeat(bytes));
        tools.push(big);
    }
    if options.collide {
        tools.extend(
            fixture::COLLIDING_NAMES
                .iter()
                .map(|name| Tool::echo_like(name)),
        );
    }
    for tool in &mut tools {
        for (name, text) in &options.descriptions {
            if *name == tool.name {
                tool.definition["description"] = Value::String(text.clone());
            }
        }
        for (name, schema) in &options.schemas {
            if *name == tool.name {
                tool.definition["inputSchema"] = schema.clone();
            }
        }
    }
    tools
}

/// A `sleep` call under way: when it ends, its order of arrival, its id (JSON
/// text) and its length in ms.
type Sleep = (Instant, u64, String, u64);

/// State shared by the reader thread and the call threads.
#[derive(Debug)]
struct Server {
    options: Options,
    /// `None` once `close_stdout` closed it.
    out: Mutex<Option<io::Stdout>>,
    /// The `--spawn-child` child's pid.
    children: Vec<u32>,
    /// The `--escapee` grandchild's pid.
    escapees: Vec<u32>,
    tools: Mutex<Vec<Tool>>,
    /// Request ids from `notifications/cancelled`, in arrival order.
    cancelled: Mutex<Vec<Value>>,
    /// Woken whenever `cancelled` grows, so cancellable calls stop promptly.
    cancelled_signal: Condvar,
    /// `sleep` calls under way, the one that ends first on top.
    sleeps: Mutex<BinaryHeap<Reverse<Sleep>>>,
    /// Woken when a sleep is added.
    sleeps_signal: Condvar,
    /// Answers to our `elicitation/create` requests, by request id.
    answers: Mutex<Map<String, Value>>,
    /// Woken whenever `answers` grows.
    answered: Condvar,
    /// The threads that run `tools/call`.
    call_threads: Arc<CallThreads>,
}

/// The threads that run `tools/call`, reused from call to call.
///
/// Starting a thread for every call cost the fixture more CPU than the call
/// itself (`clone`, a fresh stack, its `munmap` at exit: the fixture was the
/// busiest process of the gateway's 1,000-in-flight benchmark, whose 2 cores the
/// client and the gateway share). A call still never waits for another: it goes
/// to an idle thread when there is one, and to a new thread otherwise, so an
/// `elicit` call blocked on its answer holds up nothing.
struct CallThreads {
    pool: Mutex<CallPool>,
    /// Woken when a call is queued for an idle thread.
    queued: Condvar,
}

impl std::fmt::Debug for CallThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pool = lock(&self.pool);
        f.debug_struct("CallThreads")
            .field("idle", &pool.idle)
            .field("queued", &pool.calls.len())
            .finish()
    }
}

struct CallPool {
    /// Threads waiting for a call; never fewer than `calls.len()`.
    idle: usize,
    calls: VecDeque<Box<dyn FnOnce() + Send>>,
}

impl CallThreads {
    fn new() -> Arc<CallThreads> {
        Arc::new(CallThreads {
            pool: Mutex::new(CallPool {
                idle: 0,
                calls: VecDeque::new(),
            }),
            queued: Condvar::new(),
        })
    }

    /// Runs `call` on an idle thread, or on a new one when none is idle.
    fn run(self: &Arc<Self>, call: impl FnOnce() + Send + 'static) {
        let mut pool = lock(&self.pool);
        if pool.idle > pool.calls.len() {
            // Each queued call has an idle thread of its own to take it.
            pool.calls.push_back(Box::new(call));
            drop(pool);
            self.queued.notify_one();
            return;
        }
        drop(pool);
        let threads = Arc::clone(self);
        thread::spawn(move || {
            call();
            threads.serve();
        });
    }

    /// An idle thread's loop: takes queued calls for as long as the process runs.
    fn serve(&self) {
        let mut pool = lock(&self.pool);
        pool.idle += 1;
        loop {
            if let Some(call) = pool.calls.pop_front() {
                pool.idle -= 1;
                drop(pool);
                call();
                pool = lock(&self.pool);
                pool.idle += 1;
            } else {
                pool = self
                    .queued
                    .wait(pool)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking call thread must not take the whole server down with it.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// Writes one message as one line, in a single write under the lock.
    fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let mut guard = lock(&self.out);
        let Some(out) = guard.as_mut() else {
            return; // stdout was closed on purpose: stay up, say nothing
        };
        if self.options.bad_ids
            && let Some(id) = message.get("id").filter(|id| !id.is_null())
        {
            // Responses no client request matches: the id as a string instead of a
            // number (or the reverse), and an id that was never used.
            let mut as_string = message.clone();
            as_string["id"] = match id {
                Value::String(text) => text.parse::<i64>().map_or(json!(0), |n| json!(n)),
                other => json!(other.to_string()),
            };
            let mut unknown = message.clone();
            unknown["id"] = json!(987_654_321);
            for wrong in [as_string, unknown] {
                let _ = out.write_all(format!("{wrong}\n").as_bytes());
            }
        }
        if self.options.garbage {
            // Deliberately not JSON: clients must skip it.
            let _ = out.write_all(b"this line is not JSON {{{\n");
        }
        let result = out.write_all(line.as_bytes()).and_then(|()| out.flush());
        if result.is_err() {
            // The client is gone; nobody is left to talk to.
            process::exit(0);
        }
    }

    /// Writes one line as it is (no `--garbage` or `--bad-ids` around it).
    fn send_raw(&self, line: &str) {
        let mut guard = lock(&self.out);
        if let Some(out) = guard.as_mut() {
            let written = out.write_all(format!("{line}\n").as_bytes());
            if written.and_then(|()| out.flush()).is_err() {
                process::exit(0);
            }
        }
    }

    fn respond(&self, id: &Value, result: Value) {
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send(&response);
        if self.options.bad_ids {
            self.send(&response); // a duplicate: the client already has its answer
        }
    }

    fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Waits until `deadline`; false when request `id` was cancelled meanwhile.
    /// Hands a valid `sleep` call to the timer thread; false for any other call.
    fn start_sleep(&self, id: &Value, params: &Value) -> bool {
        let is_sleep = params
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| {
                lock(&self.tools)
                    .iter()
                    .any(|tool| tool.name == name && tool.kind == Kind::Sleep)
            });
        let Some(ms) = params.pointer("/arguments/ms").and_then(Value::as_u64) else {
            return false; // the call thread reports the bad arguments
        };
        if !is_sleep {
            return false;
        }
        if self.options.announce_sleeps {
            // Sent before the sleep is queued, so it always precedes the answer; no
            // `logger`, so clients show the data alone.
            self.notify(
                "notifications/message",
                json!({"level": "info", "data": fixture::SLEEP_STARTED}),
            );
        }
        let end = Instant::now() + Duration::from_millis(ms);
        let mut sleeps = lock(&self.sleeps);
        let order = sleeps.len() as u64;
        // The timer thread sleeps until the earliest end: wake it only when this
        // one ends sooner (a wake-up per call costs more than parsing the call).
        let sooner = sleeps
            .peek()
            .is_none_or(|Reverse((first, ..))| end < *first);
        sleeps.push(Reverse((end, order, id.to_string(), ms)));
        if sooner {
            self.sleeps_signal.notify_one();
        }
        true
    }

    /// The timer thread: answers each sleep when it ends, unless it was cancelled.
    fn run_sleeps(&self) {
        let mut sleeps = lock(&self.sleeps);
        loop {
            let now = Instant::now();
            match sleeps.peek() {
                None => {
                    sleeps = self
                        .sleeps_signal
                        .wait(sleeps)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some(Reverse((end, ..))) if *end > now => {
                    let wait = *end - now;
                    sleeps = self
                        .sleeps_signal
                        .wait_timeout(sleeps, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                Some(_) => {
                    let Some(Reverse((_, _, id, ms))) = sleeps.pop() else {
                        continue;
                    };
                    drop(sleeps);
                    let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
                    if lock(&self.cancelled).contains(&id) {
                        eprintln!(
                            "fixture: call {id} to sleep stopped by cancellation; not answering"
                        );
                    } else {
                        self.respond(&id, text_result(&format!("slept {ms}")));
                    }
                    sleeps = lock(&self.sleeps);
                }
            }
        }
    }

    fn wait_unless_cancelled(&self, id: &Value, deadline: Instant) -> bool {
        let mut cancelled = lock(&self.cancelled);
        loop {
            if cancelled.contains(id) {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            cancelled = self
                .cancelled_signal
                .wait_timeout(cancelled, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits for the answer to our request `request`; none when call `id` is
    /// cancelled first.
    fn wait_for_answer(&self, request: &str, id: &Value) -> Option<Value> {
        let mut answers = lock(&self.answers);
        loop {
            if let Some(answer) = answers.remove(request) {
                return Some(answer);
            }
            if lock(&self.cancelled).contains(id) {
                return None;
            }
            // Cancellations wake another condition variable: look again soon.
            answers = self
                .answered
                .wait_timeout(answers, Duration::from_millis(20))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn handle_line(self: &Arc<Self>, line: &str) {
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(error) => {
                eprintln!("fixture: unparseable line: {error}");
                return self.respond_error(
                    &Value::Null,
                    code::PARSE_ERROR,
                    &format!("parse error: {error}"),
                );
            }
        };
        let Value::Object(message) = message else {
            return self.respond_error(
                &Value::Null,
                code::INVALID_REQUEST,
                "expected one JSON-RPC object per line",
            );
        };
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            // A response: kept when it answers an `elicit` call, else nothing to do.
            if let Some(Value::String(id)) = &id {
                lock(&self.answers).insert(id.clone(), Value::Object(message.clone()));
                self.answered.notify_all();
            }
            return;
        };
        match (method, id) {
            ("notifications/cancelled", None) => {
                let request = params.get("requestId").cloned().unwrap_or(Value::Null);
                eprintln!("fixture: request {request} cancelled");
                lock(&self.cancelled).push(request);
                self.cancelled_signal.notify_all();
            }
            (_, None) => {} // notifications/initialized and any other notification
            ("initialize", Some(id)) => self.initialize(&id, &params),
            ("ping", Some(id)) | ("logging/setLevel", Some(id)) => self.respond(&id, json!({})),
            ("tools/list", Some(id)) => self.list_tools(&id, &params),
            ("resources/list", Some(id)) if self.options.blob_resources => self.respond(
                &id,
                json!({"resources": [{"uri": "fixture://blob/1024", "name": "blob", "mimeType": "application/octet-stream"}]}),
            ),
            ("resources/read", Some(id)) if self.options.blob_resources => {
                self.read_blob(&id, &params);
            }
            ("tools/call", Some(id)) => {
                if !self.start_sleep(&id, &params) {
                    let server = Arc::clone(self);
                    self.call_threads
                        .run(move || server.call_tool(&id, &params));
                }
            }
            (method, Some(id)) => {
                self.respond_error(
                    &id,
                    code::METHOD_NOT_FOUND,
                    &format!("method not found: {method}"),
                );
            }
        }
    }

    /// `resources/read` of `fixture://blob/N`: N zero bytes, base64 (written
    /// as text: 100 MB of blob is 133 MB of line, too much to build twice).
    fn read_blob(&self, id: &Value, params: &Value) {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(bytes) = uri
            .strip_prefix("fixture://blob/")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return self.respond_error(id, -32002, &format!("Resource not found: {uri}"));
        };
        let mut line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[{{"uri":{},"mimeType":"application/octet-stream","blob":""#,
            Value::String(uri.to_owned())
        );
        line.push_str(&"A".repeat(bytes.div_ceil(3) * 4));
        if bytes % 3 != 0 {
            // `A` is 6 zero bits; padding makes the length a whole number of bytes.
            line.truncate(line.len() - (3 - bytes % 3));
            line.push_str(&"=".repeat(3 - bytes % 3));
        }
        line.push_str("\"}]}}\n");
        if let Some(out) = lock(&self.out).as_mut() {
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }

    fn initialize(&self, id: &Value, params: &Value) {
        if let Some(code) = self.options.exit_on_init {
            eprintln!("fixture: exiting with code {code} on initialize, as asked");
            process::exit(code);
        }
        if self.options.no_init_reply {
            eprintln!("fixture: not answering initialize, as asked");
            return;
        }
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = match (&self.options.protocol, requested) {
            (Some(forced), _) => forced.as_str(),
            (None, Some(requested)) if SUPPORTED_VERSIONS.contains(&requested) => requested,
            (None, _) => LATEST_VERSION,
        };
        self.respond(
            id,
            json!({
                "protocolVersion": version,
                "capabilities": if self.options.blob_resources {
                    json!({"tools": {"listChanged": true}, "logging": {}, "resources": {}})
                } else {
                    json!({"tools": {"listChanged": true}, "logging": {}})
                },
                "serverInfo": {"name": self.options.name, "version": env!("CARGO_PKG_VERSION")},
            }),
        );
    }

    fn list_tools(&self, id: &Value, params: &Value) {
        let tools = lock(&self.tools);
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => match cursor.as_str().and_then(decode_cursor) {
                Some(start) if start <= tools.len() => start,
                _ => {
                    return self.respond_error(
                        id,
                        code::INVALID_PARAMS,
                        &format!("invalid cursor {cursor}"),
                    );
                }
            },
        };
        let end = self
            .options
            .page_size
            .map_or(tools.len(), |size| (start + size).min(tools.len()));
        let page: Vec<Value> = tools[start..end]
            .iter()
            .map(|tool| tool.definition.clone())
            .collect();
        let mut result = json!({"tools": page});
        if end < tools.len() {
            result["nextCursor"] = Value::String(encode_cursor(end));
        }
        drop(tools);
        if self.options.flood_tools > 0 && start == 0 {
            let (n, bytes) = (self.options.flood_tools, self.options.flood_tool_bytes);
            return self.send_raw(&flooded(id, &result, n, bytes));
        }
        self.respond(id, result);
    }

    fn call_tool(&self, id: &Value, params: &Value) {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return self.respond_error(
                id,
                code::INVALID_PARAMS,
                "tools/call needs a string `name`",
            );
        };
        let empty = Map::new();
        let args = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(args)) => args,
            Some(_) => return self.respond(id, tool_error("`arguments` must be an object")),
        };
        let kind = lock(&self.tools)
            .iter()
            .find(|tool| tool.name == name)
            .map(|tool| tool.kind);
        let Some(kind) = kind else {
            return self.respond_error(id, code::INVALID_PARAMS, &format!("unknown tool: {name}"));
        };
        if kind == Kind::RawResult {
            let Some(result) = args.get("result").and_then(Value::as_str) else {
                return self.respond(id, tool_error("`result` must be a string"));
            };
            return self.send_raw(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
            ));
        }
        let progress_token = params.pointer("/_meta/progressToken").cloned();
        match self.run_tool(kind, name, args, id, progress_token) {
            Ok(Some(result)) => self.respond(id, result),
            Ok(None) => {
                eprintln!("fixture: call {id} to {name} stopped by cancellation; not answering")
            }
            Err(message) => self.respond(id, tool_error(&message)),
        }
    }

    /// Runs one tool. `Ok(None)` means the call was cancelled and gets no response;
    /// `Err` is an invalid-arguments tool error.
    fn run_tool(
        &self,
        kind: Kind,
        name: &str,
        args: &Map<String, Value>,
        id: &Value,
        progress_token: Option<Value>,
    ) -> Result<Option<Value>, String> {
        let result = match kind {
            Kind::Echo => text_result(string_arg(args, "text")?.ok_or("`text` is required")?),
            Kind::EchoLike => text_result(string_arg(args, "text")?.unwrap_or(name)),
            Kind::Add => {
                let (a, b) = (number_arg(args, "a")?, number_arg(args, "b")?);
                let sum = match (a.as_i64(), b.as_i64()) {
                    (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
                    _ => json!(a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN)),
                };
                json!({
                    "content": [{"type": "text", "text": sum.to_string()}],
                    "structuredContent": {"sum": sum},
                })
            }
            Kind::Sleep => {
                let ms = uint_arg(args, "ms")?.ok_or("`ms` is required")?;
                let deadline = Instant::now() + Duration::from_millis(ms);
                if !self.wait_unless_cancelled(id, deadline) {
                    return Ok(None);
                }
                text_result(&format!("slept {ms}"))
            }
            Kind::Fail => tool_error(string_arg(args, "message")?.unwrap_or("failed")),
            Kind::Crash => {
                let code = uint_arg(args, "code")?.unwrap_or(1);
                eprintln!("fixture: crashing with exit code {code}, as asked");
                process::exit(i32::try_from(code).unwrap_or(1));
            }
            Kind::Cancellations => {
                let ids = Value::Array(lock(&self.cancelled).clone());
                text_result(&ids.to_string())
            }
            Kind::AddTool => {
                let new = string_arg(args, "name")?.ok_or("`name` is required")?;
                if let Some(description) = string_arg(args, "description")? {
                    {
                        let mut tools = lock(&self.tools);
                        if !tools.iter().any(|tool| tool.name == new) {
                            tools.push(Tool::echo_like(new));
                        }
                        for tool in tools.iter_mut().filter(|tool| tool.name == new) {
                            tool.definition["description"] = Value::String(description.to_owned());
                        }
                    }
                    self.notify("notifications/tools/list_changed", json!({}));
                    return Ok(Some(text_result(&format!("described {new}"))));
                }
                {
                    let mut tools = lock(&self.tools);
                    if tools.iter().any(|tool| tool.name == new) {
                        return Err(format!("a tool named {new:?} already exists"));
                    }
                    tools.push(Tool::echo_like(new));
                }
                self.notify("notifications/tools/list_changed", json!({}));
                text_result(&format!("added {new}"))
            }
            Kind::Log => {
                let text = string_arg(args, "text")?.ok_or("`text` is required")?;
                eprintln!("{text}");
                self.notify(
                    "notifications/message",
                    json!({"level": "info", "logger": self.options.name, "data": text}),
                );
                text_result("logged")
            }
            Kind::Huge => {
                let bytes = uint_arg(args, "bytes")?.ok_or("`bytes` is required")?;
                let bytes =
                    usize::try_from(bytes).map_err(|_| "`bytes` is too large".to_owned())?;
                text_result(&"x".repeat(bytes))
            }
            Kind::Progress => {
                let steps = uint_arg(args, "steps")?.ok_or("`steps` is required")?;
                let interval = Duration::from_millis(uint_arg(args, "interval_ms")?.unwrap_or(10));
                for step in 1..=steps {
                    if !self.wait_unless_cancelled(id, Instant::now() + interval) {
                        return Ok(None);
                    }
                    if let Some(token) = &progress_token {
                        self.notify(
                            "notifications/progress",
                            json!({"progressToken": token, "progress": step, "total": steps, "message": format!("step {step}")}),
                        );
                    }
                }
                text_result(&format!("done {steps}"))
            }
            Kind::Multi => {
                let parts = args
                    .get("parts")
                    .and_then(Value::as_array)
                    .ok_or("`parts` must be an array")?;
                let content = parts
                    .iter()
                    .map(|part| {
                        part.as_str()
                            .map(|text| json!({"type": "text", "text": text}))
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or("`parts` must hold strings")?;
                json!({"content": content})
            }
            Kind::Flood => {
                let count = uint_arg(args, "count")?.ok_or("`count` is required")?;
                for i in 0..count {
                    self.notify(
                        "notifications/message",
                        json!({"level": "debug", "logger": self.options.name, "data": format!("flood {i}")}),
                    );
                }
                text_result(&format!("flooded {count}"))
            }
            Kind::CloseStdout => {
                eprintln!("fixture: closing stdout and carrying on, as asked");
                // Dropping the only handle closes the stdout pipe (`Stdout` itself
                // never closes fd 1, so close it explicitly).
                lock(&self.out).take();
                close_stdout_fd();
                return Ok(None);
            }
            // Answered in `call_tool`, verbatim.
            Kind::RawResult => return Err("`raw_result` is answered verbatim".to_owned()),
            Kind::Elicit => {
                let request = format!("elicit-{id}");
                self.send(
                    &json!({"jsonrpc": "2.0", "id": request, "method": "elicitation/create",
                    "params": {"mode": "form",
                        "message": string_arg(args, "message")?.unwrap_or("Who are you?"),
                        "requestedSchema": {"type": "object", "properties": {
                            "name": {"type": "string", "default": "Ada"},
                            "age": {"type": "integer", "default": 36},
                            "color": {"type": "string", "enum": ["red", "green"]}}}}}),
                );
                let Some(answer) = self.wait_for_answer(&request, id) else {
                    return Ok(None);
                };
                match (answer.get("result"), answer.get("error")) {
                    (Some(result), _) => text_result(&result.to_string()),
                    (None, error) => tool_error(&format!(
                        "elicitation failed: {}",
                        error
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("no result")
                    )),
                }
            }
            Kind::Sample => {
                let request = format!("sample-{id}");
                let prompt = string_arg(args, "prompt")?.unwrap_or("Say hi.");
                self.send(
                    &json!({"jsonrpc": "2.0", "id": request, "method": "sampling/createMessage",
                    "params": {"maxTokens": 20, "messages": [{"role": "user",
                        "content": {"type": "text", "text": prompt}}]}}),
                );
                let Some(answer) = self.wait_for_answer(&request, id) else {
                    return Ok(None);
                };
                match (answer.get("result"), answer.get("error")) {
                    (Some(result), _) => text_result(&result.to_string()),
                    (None, error) => tool_error(&format!(
                        "sampling failed: {}",
                        error.map_or_else(|| "no result".to_string(), Value::to_string)
                    )),
                }
            }
            Kind::Pids => {
                let pids = json!({
                    "pid": process::id(),
                    "children": self.children,
                    "escapees": self.escapees,
                });
                text_result(&pids.to_string())
            }
            Kind::ReadText => {
                let path = string_arg(args, "path")?.ok_or("`path` is required")?;
                match std::fs::read_to_string(path) {
                    Ok(text) => text_result(&text),
                    Err(e) => tool_error(&format!("cannot read {path}: {e}")),
                }
            }
            Kind::WriteText => {
                let path = string_arg(args, "path")?.ok_or("`path` is required")?;
                let text = string_arg(args, "text")?.ok_or("`text` is required")?;
                match std::fs::write(path, text) {
                    Ok(()) => text_result(&format!("wrote {} bytes", text.len())),
                    Err(e) => tool_error(&format!("cannot write {path}: {e}")),
                }
            }
            Kind::EnvVar => {
                let name = string_arg(args, "name")?.ok_or("`name` is required")?;
                text_result(&std::env::var(name).unwrap_or_else(|_| "(unset)".to_owned()))
            }
            Kind::Connect => {
                let port = uint_arg(args, "port")?.ok_or("`port` is required")?;
                let port = u16::try_from(port).map_err(|_| "`port` is too large".to_owned())?;
                let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                match std::net::TcpStream::connect_timeout(&address, Duration::from_secs(10)) {
                    Ok(_) => text_result(&format!("connected to {address}")),
                    Err(e) => tool_error(&format!("cannot connect to {address}: {e}")),
                }
            }
            Kind::Image => {
                let count = uint_arg(args, "count")?.unwrap_or(1);
                let mut content = vec![json!({"type": "text", "text": "a red pixel"})];
                for _ in 0..count {
                    content.push(
                        json!({"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}),
                    );
                }
                json!({ "content": content })
            }
        };
        Ok(Some(result))
    }
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

fn string_arg<'a>(args: &'a Map<String, Value>, field: &str) -> Result<Option<&'a str>, String> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("`{field}` must be a string")),
    }
}

fn number_arg<'a>(
    args: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a serde_json::Number, String> {
    match args.get(field) {
        Some(Value::Number(number)) => Ok(number),
        Some(_) => Err(format!("`{field}` must be a number")),
        None => Err(format!("`{field}` is required")),
    }
}

fn uint_arg(args: &Map<String, Value>, field: &str) -> Result<Option<u64>, String> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{field}` must be a non-negative integer")),
    }
}

/// Cursors are opaque to clients; this one hides an offset behind a prefix so that
/// a client passing anything but what it was given gets an error.
fn encode_cursor(offset: usize) -> String {
    format!("fixture-page-{offset:x}")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    usize::from_str_radix(cursor.strip_prefix("fixture-page-")?, 16).ok()
}

fn main() {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("fixture-server: {message}");
            process::exit(2);
        }
    };
    for i in 0..options.stderr_lines {
        eprintln!("fixture: stderr line {i}");
    }
    if !options.start_delay.is_zero() {
        thread::sleep(options.start_delay);
    }
    let children = if options.spawn_child {
        match process::Command::new("sleep")
            .arg("600")
            .stdin(process::Stdio::null())
            .stdout(process::Stdio::null())
            .spawn()
        {
            // Not waited for on purpose: the client must clean up the whole group.
            Ok(child) => vec![child.id()],
            Err(e) => {
                eprintln!("fixture-server: could not start the child: {e}");
                process::exit(2);
            }
        }
    } else {
        Vec::new()
    };
    let escapees = match options.escapee.map(spawn_escapee) {
        Some(Ok(pid)) => vec![pid],
        Some(Err(e)) => {
            eprintln!("fixture-server: could not start the escapee: {e}");
            process::exit(2);
        }
        None => Vec::new(),
    };
    let server = Arc::new(Server {
        tools: Mutex::new(initial_tools(&options)),
        options,
        out: Mutex::new(Some(io::stdout())),
        children,
        escapees,
        cancelled: Mutex::new(Vec::new()),
        cancelled_signal: Condvar::new(),
        sleeps: Mutex::new(BinaryHeap::new()),
        sleeps_signal: Condvar::new(),
        answers: Mutex::new(Map::new()),
        answered: Condvar::new(),
        call_threads: CallThreads::new(),
    });
    let timer = Arc::clone(&server);
    thread::spawn(move || timer.run_sleeps());
    let deaf = server.options.deaf_after_list;
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if !line.trim().is_empty() {
            server.handle_line(&line);
            if deaf
                && serde_json::from_str::<Value>(&line)
                    .is_ok_and(|m| m.get("method") == Some(&json!("tools/list")))
            {
                // Stdin is never read again: what the client writes piles up in the pipe.
                loop {
                    thread::sleep(Duration::from_secs(3600));
                }
            }
        }
    }
    // Stdin closed: the client is done with us. In-flight calls die with the process.
}

/// Starts `sleep 600` as a grandchild that leaves the process group and the
/// session (`setsid`), the way a daemon does: a shell starts it in the
/// background, prints its pid and exits, so it is orphaned at once. Returns its pid.
fn spawn_escapee(how: Escapee) -> io::Result<u32> {
    let env = if how == Escapee::CleanEnv {
        "env -i "
    } else {
        ""
    };
    let script = format!("{env}setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!");
    let out = process::Command::new("sh")
        .args(["-c", &script])
        .stdin(process::Stdio::null())
        .stderr(process::Stdio::inherit())
        .output()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| io::Error::other(format!("the shell printed no pid: {e}")))
}

/// Closes file descriptor 1 for real, so the client sees end of file on the pipe.
#[allow(unsafe_code)]
fn close_stdout_fd() {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: fd 1 is this process's stdout; the only `Stdout` handle that wrote to
    // it was taken out of `Server::out` above, so nothing uses the fd afterwards.
    drop(unsafe { OwnedFd::from_raw_fd(1) });
}

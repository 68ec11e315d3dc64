//! What the fixture server (`src/bin/fixture-server.rs`) serves, for tests that assert on it.
//!
//! The binary's own module docs list every flag and tool. The names that exist to
//! stress the registry's name rules live here so that the server and the tests
//! share one definition.

/// The fixture's tools that are present whatever the flags.
pub const BUILTIN_TOOLS: &[&str] = &[
    "echo",
    "add",
    "sleep",
    "fail",
    "crash",
    "cancellations",
    "add_tool",
    "log",
    "huge",
    "progress",
    "multi",
    "image",
    "flood",
    "close_stdout",
    "elicit",
    "sample",
    "raw_result",
    "pids",
    "read_text",
    "write_text",
    "env_var",
    "connect",
];

/// The first of two tool names that share their first 70 characters, so both
/// exceed 64 characters once namespaced and must still get distinct names.
pub const LONG_NAME_A: &str =
    "this_tool_name_is_much_longer_than_sixty_four_characters_on_purpose_0_alpha";

/// The second of the two long tool names; see [`LONG_NAME_A`].
pub const LONG_NAME_B: &str =
    "this_tool_name_is_much_longer_than_sixty_four_characters_on_purpose_0_beta";

/// Tools added by `--weird-names`: names with characters outside `[A-Za-z0-9_-]`
/// (ASCII punctuation, spaces, accented letters, an emoji), one name that is already
/// valid and must pass through unchanged, and the two long names.
pub const WEIRD_NAMES: &[&str] = &[
    "read.file",
    "héllo wörld",
    "a/b:c",
    "emoji🚀tool",
    "ok-name_1",
    LONG_NAME_A,
    LONG_NAME_B,
];

/// Tools added by `--collide`: distinct on the server, identical once sanitised.
pub const COLLIDING_NAMES: &[&str] = &["x.y", "x_y"];

/// The `initialize`-era protocol versions the fixture agrees to; it answers any other
/// requested version with the last of these.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The log line (`notifications/message` data) a server started with
/// `--announce-sleeps` sends when a `sleep` call arrives: the signal a test awaits
/// instead of sleeping itself until the call has reached the server.
pub const SLEEP_STARTED: &str = "sleep started";

/// Finds the fixture server binary from an integration test of this crate
/// (`tests/tests/`), as a `&'static str` path.
///
/// A library cannot see `CARGO_BIN_EXE_*`; a macro expands in the test that uses it,
/// where Cargo has set the variable and built the binary.
#[macro_export]
macro_rules! fixture_server {
    () => {
        env!("CARGO_BIN_EXE_fixture-server")
    };
}

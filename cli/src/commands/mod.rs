//! The subcommands of `mcpbox` that have a file of their own.

pub(crate) mod import;
pub(crate) mod resources;

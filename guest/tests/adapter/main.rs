//! The provider adapters (`mcpbox_guest::adapter`) on real tool schemas, checked by
//! the providers' own SDK types and against the original schemas.
//!
//! - `corpus/`: the `tools/list` of servers nobody here wrote — the reference npm
//!   servers, the Python SDK (pydantic models with `$defs`), the TypeScript SDK v1
//!   with zod (zod-to-json-schema `$ref`s into `#/properties/…`, zod 4's output) —
//!   exactly as they sent it. `tests/peers/adapter_corpus.py` regenerates it from the
//!   pinned peers.
//! - `corpus.rs`: every corpus tool in every dialect converts (or says why), its
//!   notes point into the original, and `tests/peers/provider_check.py` accepts the
//!   definitions with google-genai's `FunctionDeclaration`, the openai and anthropic
//!   SDKs' tool types and the documented strict-mode rules; definitions the providers
//!   refuse are refused by the checker too.
//! - `properties.rs`: instances valid under a schema (a corpus schema, or one made
//!   by the differential tests' generator) stay valid under each conversion, written
//!   as a model would write them, unless the conversion said it narrowed the schema;
//!   and mapped back, they are valid under the original again.
//!
//! The generated cases use a fixed seed; `MCPBOX_DIFF_CASES` and `MCPBOX_DIFF_SEED`
//! change them as for `tests/differential/`.

mod corpus;
mod properties;

// The differential tests' schema and instance generators (both are modules of
// the guest's unit tests, src/lib.rs).
use crate::differential_tests::schemas;

use serde::Deserialize;
use serde_json::value::RawValue;
use std::path::{Path, PathBuf};

/// One tool of the corpus, its schemas as the exact text the server sent.
#[derive(Debug)]
pub struct Tool {
    pub server: String,
    pub name: String,
    pub description: Option<String>,
    pub input_schema: String,
    pub output_schema: Option<String>,
    /// The whole tool definition, for the notes' pointers.
    pub definition: serde_json::Value,
}

#[derive(Deserialize)]
struct File {
    server: String,
    tools: Vec<Box<RawValue>>,
}

#[derive(Deserialize)]
struct RawTool {
    name: String,
    description: Option<String>,
    #[serde(rename = "inputSchema")]
    input_schema: Box<RawValue>,
    #[serde(rename = "outputSchema")]
    output_schema: Option<Box<RawValue>>,
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/adapter/corpus")
}

/// Every tool of every corpus file, in file-name order.
pub fn corpus() -> Vec<Tool> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("guest/tests/adapter/corpus")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut tools = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let file: File =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for raw in file.tools {
            let tool: RawTool = serde_json::from_str(raw.get()).unwrap();
            tools.push(Tool {
                server: file.server.clone(),
                name: tool.name,
                description: tool.description,
                input_schema: tool.input_schema.get().to_string(),
                output_schema: tool.output_schema.map(|o| o.get().to_string()),
                definition: serde_json::from_str(raw.get()).unwrap(),
            });
        }
    }
    assert!(tools.len() > 40, "the corpus has {} tools", tools.len());
    tools
}

//! Tool search: the `search_tools` tool of the gateway's search mode, a ranked
//! search over the served tools' names, descriptions and input-schema property
//! names, so a client with thousands of tools gets two tool definitions
//! (`search_tools` and `call_tool`) instead of thousands.
//!
//! Ranking is Okapi BM25 (k1 = 1.2, b = 0.75) over one bag of words per tool, the
//! name's words counted three times (a query word in the name says more than one
//! in a long description). Hand-written rather than a search crate: the crates
//! that rank (tantivy and its kin) need std, threads and files, none of which the
//! guest has; BM25 over an in-memory inverted index is a page of code. Words are
//! lowercase ASCII letter-and-digit runs, split at case changes (`readFile` →
//! `read`, `file`) and at `_`/`-`; the index is built at the first search after
//! the served list changes.

use crate::prelude::*;
use alloc::collections::BTreeMap;

use serde_json::Value;

use super::exposure::Exposure;

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// How many times a word of the name counts.
const NAME_WEIGHT: u32 = 3;

/// The most results one search returns.
pub const MAX_RESULTS: usize = 50;
/// Results when the caller does not say.
pub const DEFAULT_RESULTS: usize = 10;

/// An inverted index over one exposure.
#[derive(Debug, Default)]
pub struct Index {
    /// The exposure fingerprint it was built from.
    pub fingerprint: u64,
    /// word → (tool position in the exposure, term frequency).
    postings: BTreeMap<String, Vec<(u32, u32)>>,
    /// Words per tool, weighted.
    lengths: Vec<u32>,
    average: f64,
}

/// Splits text into lowercase words.
pub fn words(text: &str, into: &mut Vec<String>) {
    let mut current = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            // A lower→upper change starts a new word (`readFile`).
            if c.is_ascii_uppercase() && last_lower && !current.is_empty() {
                into.push(core::mem::take(&mut current));
            }
            last_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            current.push(c.to_ascii_lowercase());
        } else {
            last_lower = false;
            if !current.is_empty() {
                into.push(core::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        into.push(current);
    }
}

/// The property names of an input schema's top-level `properties`.
fn property_names(schema: &str, into: &mut Vec<String>) {
    if let Ok(Value::Object(schema)) = serde_json::from_str::<Value>(schema)
        && let Some(Value::Object(properties)) = schema.get("properties")
    {
        for key in properties.keys() {
            words(key, into);
        }
    }
}

impl Index {
    /// Indexes every tool of `exposure`.
    pub fn build(exposure: &Exposure) -> Index {
        let mut postings: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
        let mut lengths = Vec::with_capacity(exposure.tools.len());
        let mut bag: BTreeMap<String, u32> = BTreeMap::new();
        let mut scratch = Vec::new();
        for (doc, tool) in exposure.tools.iter().enumerate() {
            bag.clear();
            scratch.clear();
            words(&tool.name, &mut scratch);
            for w in scratch.drain(..) {
                *bag.entry(w).or_insert(0) += NAME_WEIGHT;
            }
            let def = &tool.entry.tool.def;
            for text in [def.title.as_deref(), def.description.as_deref()]
                .into_iter()
                .flatten()
            {
                words(text, &mut scratch);
            }
            property_names(&def.input_schema, &mut scratch);
            for w in scratch.drain(..) {
                *bag.entry(w).or_insert(0) += 1;
            }
            lengths.push(bag.values().sum());
            for (w, tf) in &bag {
                postings
                    .entry(w.clone())
                    .or_default()
                    .push((doc as u32, *tf));
            }
        }
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let average = if lengths.is_empty() {
            1.0
        } else {
            (total as f64 / lengths.len() as f64).max(1.0)
        };
        Index {
            fingerprint: exposure.fingerprint,
            postings,
            lengths,
            average,
        }
    }

    /// The positions of the best `limit` tools for `query`, best first, with
    /// their scores; tools that share no word with the query are not returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f64)> {
        let mut terms = Vec::new();
        words(query, &mut terms);
        terms.sort();
        terms.dedup();
        let n = self.lengths.len() as f64;
        let mut scores: BTreeMap<u32, f64> = BTreeMap::new();
        for term in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = libm::log((n - df + 0.5) / (df + 0.5) + 1.0);
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let len = f64::from(self.lengths[doc as usize]);
                let norm = K1 * (1.0 - B + B * len / self.average);
                *scores.entry(doc).or_insert(0.0) += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores
            .into_iter()
            .map(|(doc, score)| (doc as usize, score))
            .collect();
        // Best first; equal scores keep name order (positions are name-ordered).
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_case_and_separators() {
        let mut w = Vec::new();
        words("readFile fs__list_dir-v2 HTTPServer", &mut w);
        assert_eq!(w, ["read", "file", "fs", "list", "dir", "v2", "httpserver"]);
    }
}

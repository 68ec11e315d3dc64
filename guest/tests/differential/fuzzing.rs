//! One fuzzer input, for the fuzz target `differential` and the replay of its
//! corpus: the first byte chooses the comparison, the rest drives it.

use super::{patterns, schemas};
use arbitrary::Unstructured;

/// Runs one input; `Err` is a disagreement docs/testing.md does not document.
pub fn run(data: &[u8]) -> Result<(), String> {
    let Some((&which, rest)) = data.split_first() else {
        return Ok(());
    };
    let mut u = Unstructured::new(rest);
    let outcome = match which % 3 {
        // A generated pattern and strings drawn from it.
        0 => patterns::case(&mut u, &mut patterns::Tally::default()),
        // A generated schema and instances near its edges.
        1 => schemas::case(&mut u, &mut schemas::Tally::default()),
        // Pattern text as the fuzzer writes it, NUL, then the string to match:
        // syntax no generator thought of.
        _ => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return Ok(());
            };
            let (pattern, subject) = text.split_once('\0').unwrap_or((text, ""));
            if pattern.chars().count() > 64 || subject.chars().count() > 64 {
                return Ok(());
            }
            let subjects = [subject.to_string()];
            Ok(patterns::compare(
                pattern,
                false,
                &subjects,
                &mut patterns::Tally::default(),
            ))
        }
    };
    // An input too short to finish its case compares nothing.
    outcome.unwrap_or(Ok(()))
}

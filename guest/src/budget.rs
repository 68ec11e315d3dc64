//! What the guest may build from text it is handed: a client's message to the
//! gateway, a caller's tool arguments.
//!
//! The guest runs under one memory limit, shared by every server and every
//! client, and a guest that outgrows it traps: it is replaced, and every server
//! restarts. A byte cap on a text does not bound what reading it builds: 15 MiB of
//! `[0,0,0,…]` is eight million JSON values, each a node of a tree several
//! times its two bytes of text. So before a text is parsed, its values are
//! counted ([`count_values`]: one pass over the bytes, counting brackets, commas
//! and colons outside strings, allocating nothing), and the text is read only if
//!
//! - it holds at most [`MAX_VALUES`] values, and
//! - the memory reading it will take ([`Needs`], an estimate that errs high) is
//!   free at that moment: [`reserve`] allocates that much, fallibly, and gives it
//!   back at once. An allocation that fails there costs nothing; one that failed
//!   while the text was being read would trap the guest.
//!
//! Otherwise the text's caller alone gets an error ([`Refused`]): the call's
//! `InvalidArguments`, the gateway client's JSON-RPC error. The guest is single
//! threaded, so what was free when the check ran is still free when the text is
//! read.

use crate::prelude::*;

/// The most JSON values one text may hold (a message to the gateway, a call's
/// arguments): 1,048,576. Parsing that many takes about 100 ms and, in the
/// guest's 32-bit memory, some tens of MiB.
pub const MAX_VALUES: usize = 1 << 20;

/// Bytes of guest memory a parsed JSON value costs at most, allocation overhead
/// and a growing vector's spare room included (a `serde_json::Value` is 24 bytes
/// in wasm32; an object's entry adds its key and a share of a B-tree node).
const VALUE_BYTES: usize = 96;

/// Counts the JSON values in `text` without parsing it: every `[`, `{`, `,` and `:`
/// outside a string begins one more value, and a non-empty text holds one more.
/// Exact for valid JSON (an object's key counts as a value); for text that is not
/// JSON it is only a count, which the parser then refuses anyway.
pub fn count_values(text: &str) -> usize {
    let mut count = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut any = false;
    for &b in text.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                any = true;
            }
            b'[' | b'{' | b',' | b':' => {
                count += 1;
                any = true;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => any = true,
        }
    }
    // `[` and `{` count themselves and no element; `,` and `:` one more each; the
    // first element of a container is the one missing, which the non-empty text's
    // extra value stands for at the top level. An estimate, exact enough.
    count + usize::from(any)
}

/// What reading a text will cost the guest, at most: its copies and its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// The text's length in bytes.
    pub bytes: usize,
    /// Its JSON values ([`count_values`]).
    pub values: usize,
}

impl Needs {
    /// The text's needs.
    pub fn of(text: &str) -> Needs {
        Needs {
            bytes: text.len(),
            values: count_values(text),
        }
    }

    /// The bytes of memory to have free before reading it: `copies` of its text
    /// (the raw payloads, the request written on) and `trees` parsed trees of its
    /// values alive at once.
    pub fn memory(&self, copies: usize, trees: usize) -> usize {
        self.bytes
            .saturating_mul(copies)
            .saturating_add(self.values.saturating_mul(VALUE_BYTES * trees))
    }
}

/// Why a text is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It holds more than [`MAX_VALUES`] values; carries how many.
    TooManyValues(usize),
    /// Reading it needs this many bytes, which the guest does not have free now.
    NoMemory(usize),
}

impl Refused {
    /// Says why, for `what` ("the arguments of `mcp__fs__write`", "this message").
    pub fn describe(&self, what: &str) -> String {
        match self {
            Refused::TooManyValues(n) => format!(
                "{what} hold {n} JSON values, more than the {MAX_VALUES} the guest reads in one \
                 text; send fewer (a long string costs one value, an array of numbers one each)"
            ),
            Refused::NoMemory(bytes) => format!(
                "reading {what} needs about {} of the guest's memory, which is not free now \
                 (its memory limit is shared by every server and client); try again later, \
                 with smaller input, or raise the limit (Options::memory_limit, or the CLI's \
                 --memory-limit)",
                mib(*bytes)
            ),
        }
    }
}

/// `bytes` as "12.3 MiB".
fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Whether the guest may read a text of these needs, holding `copies` of the
/// text and `trees` parsed trees at once: within [`MAX_VALUES`], and with the
/// memory it will take free now.
pub fn admit(needs: Needs, copies: usize, trees: usize) -> Result<(), Refused> {
    if needs.values > MAX_VALUES {
        return Err(Refused::TooManyValues(needs.values));
    }
    let memory = needs.memory(copies, trees);
    if reserve(memory) {
        Ok(())
    } else {
        Err(Refused::NoMemory(memory))
    }
}

/// Whether `bytes` of memory can be allocated now. Allocates them fallibly and
/// frees them at once: the allocator keeps what it had to grow for, so the reading
/// that follows finds it free. (A failed growth costs nothing: the guest's memory
/// limit refuses it, and the allocator reports the failure instead of trapping.)
pub fn reserve(bytes: usize) -> bool {
    // Small needs are met from what the allocator has anyway.
    if bytes < 64 * 1024 {
        return true;
    }
    let mut probe: Vec<u8> = Vec::new();
    if probe.try_reserve_exact(bytes).is_err() {
        return false;
    }
    // An allocation nothing reads may be optimised away, and its success assumed.
    core::hint::black_box(probe.as_mut_ptr());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_from_brackets_commas_and_colons_outside_strings() {
        assert_eq!(count_values(""), 0);
        assert_eq!(count_values("  "), 0);
        assert_eq!(count_values("0"), 1);
        assert_eq!(count_values("\"a,b:[c]{\""), 1);
        assert_eq!(count_values("[0,0,0]"), 4);
        // The object, two keys, `1`, the array and its two elements.
        assert_eq!(count_values(r#"{"a":1,"b":[1,2]}"#), 7);
        // An escaped quote does not end the string.
        assert_eq!(count_values(r#"["a\",[", 1]"#), 3);
        assert_eq!(count_values(r#"["\\", 1]"#), 3);
        let dense = format!("[{}0]", "0,".repeat(1_000_000));
        assert_eq!(count_values(&dense), 1_000_002);
    }

    #[test]
    fn a_text_over_the_value_cap_is_refused_before_it_is_read() {
        let dense = format!("[{}0]", "0,".repeat(MAX_VALUES));
        let needs = Needs::of(&dense);
        assert_eq!(
            admit(needs, 2, 1),
            Err(Refused::TooManyValues(MAX_VALUES + 2))
        );
        let message = Refused::TooManyValues(MAX_VALUES + 2).describe("the arguments");
        assert!(message.contains("1048578 JSON values"), "{message}");
        // A long string is one value, whatever its length.
        let long = format!("\"{}\"", "x".repeat(4 << 20));
        assert_eq!(Needs::of(&long).values, 1);
        assert_eq!(admit(Needs::of(&long), 2, 1), Ok(()));
    }

    #[test]
    fn memory_that_cannot_be_had_is_refused_not_trapped_on() {
        // More than any address space holds: the allocation fails, and says so.
        assert!(!reserve(usize::MAX / 2));
        assert!(reserve(1 << 20));
        let message = Refused::NoMemory(300 << 20).describe("this message");
        assert!(message.contains("300.0 MiB"), "{message}");
    }
}

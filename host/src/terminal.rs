//! Text from servers on its way to a terminal.
//!
//! Everything an MCP server says (its `serverInfo`, tool descriptions, log lines,
//! stderr, error and result texts) is untrusted input. Printed raw, an escape
//! sequence in it can retitle the terminal, clear the screen, move the cursor to
//! draw a fake status line, or (on some terminals) answer back with keystrokes;
//! a bidi override can make text read differently from what it is. So every
//! human-readable output of the CLI goes through [`escape`], which shows such
//! characters instead of letting the terminal act on them. JSON output is not
//! escaped: a program reading it gets the exact text (JSON encoding already
//! escapes C0 controls).
//!
//! What is escaped, and how it looks:
//!
//! | characters | shown as |
//! |---|---|
//! | newline, carriage return, tab | `\n`, `\r`, `\t` (newline and tab are kept with [`Lines::Keep`]) |
//! | other C0 controls (U+0000–U+001F), DEL (U+007F), C1 controls (U+0080–U+009F) | `\x1b`, `\x7f`, `\x9b`, … |
//! | format characters (Unicode category Cf: bidi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, marks U+200E/U+200F/U+061C, zero-width space U+200B, word joiner, BOM, soft hyphen, tag characters, …), line and paragraph separators (U+2028, U+2029) | `\u{202e}` |
//!
//! Two format characters are kept: the zero-width joiner and non-joiner
//! (U+200D, U+200C), which emoji sequences and several scripts need and which
//! cannot reorder or hide text. A backslash is not escaped, so the text `\x1b`
//! written by a server looks like an escaped ESC; it is harmless either way,
//! since only the real character acts on the terminal.
//!
//! The classification comes from the `unicode-general-category` crate (the
//! Unicode Character Database), not from a hand-kept list.

use std::borrow::Cow;
use std::fmt::Write;

use unicode_general_category::{GeneralCategory, get_general_category};

/// What [`escape`] does with line breaks and tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Keep newlines and tabs (multi-line text: tool results, error messages).
    Keep,
    /// Escape them too (text that must stay on one line: names, versions).
    Escape,
}

/// `text` with every character a terminal would act on, rather than show,
/// replaced by a visible escape (see the module docs). Borrowed when nothing
/// needed escaping.
pub fn escape(text: &str, lines: Lines) -> Cow<'_, str> {
    let Some(first) = text.find(|c| needs_escape(c, lines)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !needs_escape(c, lines) {
            out.push(c);
            continue;
        }
        // Writing to a String cannot fail.
        let _ = match c {
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            c if u32::from(c) <= 0x9f => write!(out, "\\x{:02x}", u32::from(c)),
            c => write!(out, "\\u{{{:x}}}", u32::from(c)),
        };
    }
    Cow::Owned(out)
}

fn needs_escape(c: char, lines: Lines) -> bool {
    if c.is_ascii() {
        // The common case, without a table lookup.
        return match c {
            '\n' | '\t' => lines == Lines::Escape,
            c => c.is_ascii_control(),
        };
    }
    match get_general_category(c) {
        GeneralCategory::Control
        | GeneralCategory::LineSeparator
        | GeneralCategory::ParagraphSeparator => true,
        GeneralCategory::Format => !matches!(c, '\u{200c}' | '\u{200d}'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "héllo wörld — 你好 👩‍👩‍👧 naïve\\x1b";
        assert!(matches!(escape(text, Lines::Escape), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn controls_and_bidi_are_shown() {
        assert_eq!(
            escape("a\x1b]0;t\x07b\x1b[2J\u{9b}31m\x7f\r", Lines::Keep),
            r"a\x1b]0;t\x07b\x1b[2J\x9b31m\x7f\r"
        );
        assert_eq!(
            escape(
                "\u{202e}evil\u{202c} \u{2066}x\u{2069}\u{200b}\u{feff}\u{e0041}\u{2028}",
                Lines::Keep
            ),
            r"\u{202e}evil\u{202c} \u{2066}x\u{2069}\u{200b}\u{feff}\u{e0041}\u{2028}"
        );
        assert_eq!(escape("a\nb\tc", Lines::Keep), "a\nb\tc");
        assert_eq!(escape("a\nb\tc", Lines::Escape), r"a\nb\tc");
    }

    /// Every character the standard library calls a control (C0, DEL, C1) is
    /// escaped, and nothing of the escaped text is one any more.
    #[test]
    fn agrees_with_the_standard_librarys_control_characters() {
        // The planes in use, and the tags and variation selectors of plane 14.
        for c in (0..=0x2ffff)
            .chain(0xe0000..=0xe01ff)
            .filter_map(char::from_u32)
        {
            let escaped = escape(c.encode_utf8(&mut [0; 4]), Lines::Escape).into_owned();
            if c.is_control() {
                assert!(escaped.starts_with('\\'), "{c:?} -> {escaped:?}");
            }
            assert!(
                !escaped.chars().any(char::is_control),
                "{c:?} -> {escaped:?}"
            );
        }
    }
}

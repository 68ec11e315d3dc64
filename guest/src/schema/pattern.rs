//! A small ECMA-262 regular-expression matcher for `pattern` and `patternProperties`.
//!
//! JSON Schema patterns are ECMA-262 regexes, read with the `u` flag: a character
//! is a code point, not a UTF-16 unit. The `regex` crate has no lookahead, which
//! tool schemas use (`^(?!tmp_)`). `regress` implements ECMA-262 in full, and 0.12
//! (feature `alloc`) builds `no_std` without adding imports, but it is a classical
//! backtracking engine with no bound on its work: no step budget, no timeout, no
//! way to stop a match from outside (its docs: the `regex` crate "provides
//! linear-time matching guarantees, while regress does not"). Patterns come from
//! servers mcpbox does not trust, and an export runs to its end on the host's one
//! driver task. Measured natively: `^(a+)+$` against a run of `a`s and a `!` takes
//! regress time that doubles with each `a` (0.12.0: 33 s for 28 of them; 0.11.1:
//! 27 s for 30), and `((^|){2}){2}x` against the empty string makes it ask for
//! gigabytes of backtracking stack (both versions, found by `tests/differential/`).
//! One hostile schema would stall every server's calls until the host's epoch
//! deadline traps the guest, and three such calls in a minute stop the runtime.
//! (regress 0.12 would also grow the component from 0.71 MB to 1.2 MB.)
//!
//! This matcher backtracks too, but counts: a match may take `STEP_BUDGET` (a
//! million) steps and nest `DEPTH_BUDGET` (a thousand) calls deep, and past either
//! it gives up (`None`) instead of hanging or overflowing the stack. The validator
//! then treats the pattern as not checked for that string; the server still
//! checks it.
//!
//! Supported: literals and escapes (`\d \w \s \b`, `\cX`, `\uXXXX`, surrogate pairs
//! `\uD83D\uDE00`, `\u{…}`, `\xHH`, escaped punctuation), `.`, classes with
//! ranges and negation, `^ $`, groups (capturing, `(?:…)`, named), alternation,
//! greedy and lazy quantifiers (`* + ? {n} {n,} {n,m}`), and lookahead (`(?=…)`,
//! `(?!…)`). A few things the `u` flag forbids are read as Annex B (ECMA-262
//! without the flag) reads them, because servers write them and their meaning is
//! plain: an identity escape such as `\-` outside a class, a `{` that starts no
//! quantifier, a lone `]`, `[\d-z]`. Anything else (lookbehind, backreferences,
//! `\p{…}`, Python's `\A`/`\Z`, inline flags) is refused at compile time, so the
//! caller skips the pattern rather than check it with the wrong meaning.
//!
//! `tests/differential/` checks this matcher against regress on generated patterns
//! and strings; docs/testing.md lists the differences ("Documented differences").

use crate::prelude::*;

/// How many matching steps one `is_match` may take.
const STEP_BUDGET: u32 = 1_000_000;
/// How deeply matching may recurse (nested groups times repetitions).
const DEPTH_BUDGET: u32 = 1_000;

#[derive(Debug, Clone, PartialEq)]
enum ClassItem {
    Char(char),
    Range(char, char),
    Digit(bool),
    Word(bool),
    Space(bool),
}

impl ClassItem {
    fn matches(&self, c: char) -> bool {
        match *self {
            ClassItem::Char(x) => c == x,
            ClassItem::Range(a, b) => a <= c && c <= b,
            ClassItem::Digit(negated) => c.is_ascii_digit() != negated,
            ClassItem::Word(negated) => is_word(c) != negated,
            ClassItem::Space(negated) => is_space(c) != negated,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Empty,
    Char(char),
    Any,
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
    Start,
    End,
    WordBoundary(bool),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
    Look {
        node: Box<Node>,
        negated: bool,
    },
}

impl Node {
    /// Whether the node always consumes exactly one character: such repetitions
    /// are matched in a loop instead of by recursion.
    fn single(&self) -> bool {
        matches!(self, Node::Char(_) | Node::Any | Node::Class { .. })
    }
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// ECMA-262 `WhiteSpace` and `LineTerminator`.
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    root: Node,
    anchored: bool,
}

impl Pattern {
    /// Compiles an ECMA-262 pattern, or says why it is not supported.
    pub fn new(source: &str) -> Result<Pattern, String> {
        let mut p = Parser {
            chars: source.chars().collect(),
            pos: 0,
            names: Vec::new(),
        };
        let root = p.alternation()?;
        if p.pos < p.chars.len() {
            return Err(format!("unbalanced `)` at offset {}", p.pos));
        }
        let anchored = match &root {
            Node::Start => true,
            Node::Concat(items) => items.first() == Some(&Node::Start),
            _ => false,
        };
        Ok(Pattern { root, anchored })
    }

    /// Whether the pattern matches anywhere in `text`; `None` when matching gave
    /// up on its budget.
    pub fn is_match(&self, text: &str) -> Option<bool> {
        let input: Vec<char> = text.chars().collect();
        let m = Matcher {
            input: &input,
            steps: core::cell::Cell::new(0),
            depth: core::cell::Cell::new(0),
        };
        let last = if self.anchored { 0 } else { input.len() };
        for start in 0..=last {
            match m.node(&self.root, start, &|_| Ok(true)) {
                Ok(true) => return Some(true),
                Ok(false) => {}
                Err(GaveUp) => return None,
            }
        }
        Some(false)
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    /// Names of the named groups so far.
    names: Vec<String>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn alternation(&mut self) -> Result<Node, String> {
        let mut alternatives = vec![self.concatenation()?];
        while self.eat('|') {
            alternatives.push(self.concatenation()?);
        }
        Ok(if alternatives.len() == 1 {
            alternatives.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(alternatives)
        })
    }

    fn concatenation(&mut self) -> Result<Node, String> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            // A group may be quantified whatever it holds: `(^)*` is valid.
            let group = c == '(';
            let atom = self.atom()?;
            items.push(self.quantified(atom, group)?);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    fn quantified(&mut self, atom: Node, group: bool) -> Result<Node, String> {
        let (min, max) = match self.peek() {
            Some('*') => {
                self.pos += 1;
                (0, None)
            }
            Some('+') => {
                self.pos += 1;
                (1, None)
            }
            Some('?') => {
                self.pos += 1;
                (0, Some(1))
            }
            Some('{') => match self.braces() {
                Some(bounds) => bounds,
                // Annex B: a `{` that is not a quantifier is a literal.
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        // Lazy or greedy, the set of strings that match is the same.
        self.eat('?');
        if !group && matches!(atom, Node::Start | Node::End | Node::WordBoundary(_)) {
            return Err("a quantifier after an assertion".into());
        }
        if max.is_some_and(|m| m < min) {
            return Err("a {n,m} quantifier with m < n".into());
        }
        if matches!(self.peek(), Some('*' | '+' | '?'))
            || (self.peek() == Some('{') && self.lookahead_braces())
        {
            return Err("nothing to repeat".into());
        }
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    fn lookahead_braces(&mut self) -> bool {
        let save = self.pos;
        let found = self.braces().is_some();
        self.pos = save;
        found
    }

    /// Parses `{n}`, `{n,}` or `{n,m}` (consuming it) or returns `None` (consuming
    /// nothing).
    fn braces(&mut self) -> Option<(u32, Option<u32>)> {
        let save = self.pos;
        let result = (|| {
            if !self.eat('{') {
                return None;
            }
            let min = self.number()?;
            let max = if self.eat(',') {
                if self.peek() == Some('}') {
                    None
                } else {
                    Some(self.number()?)
                }
            } else {
                Some(min)
            };
            self.eat('}').then_some((min, max))
        })();
        if result.is_none() {
            self.pos = save;
        }
        result
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.pos;
        let mut n: u32 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(d);
            self.pos += 1;
        }
        (self.pos > start).then_some(n)
    }

    fn atom(&mut self) -> Result<Node, String> {
        let Some(c) = self.peek() else {
            return Err("unexpected end of pattern".into());
        };
        if c == '{' && self.lookahead_braces() {
            return Err("nothing to repeat".into());
        }
        self.pos += 1;
        Ok(match c {
            '.' => Node::Any,
            '^' => Node::Start,
            '$' => Node::End,
            '(' => self.group()?,
            '[' => self.class()?,
            '\\' => self.escape()?,
            '*' | '+' | '?' => return Err("nothing to repeat".into()),
            c => Node::Char(c),
        })
    }

    fn group(&mut self) -> Result<Node, String> {
        let look = if self.eat('?') {
            match self.peek() {
                Some(':') => {
                    self.pos += 1;
                    None
                }
                Some('=') => {
                    self.pos += 1;
                    Some(false)
                }
                Some('!') => {
                    self.pos += 1;
                    Some(true)
                }
                Some('<') if !matches!(self.chars.get(self.pos + 1), Some('=' | '!')) => {
                    // A named group: the name does not matter for matching, but a
                    // name ECMA-262 rejects makes the pattern an error.
                    self.pos += 1;
                    self.group_name()?;
                    None
                }
                _ => return Err("lookbehind and inline flags are not supported".into()),
            }
        } else {
            None
        };
        let inner = self.alternation()?;
        if !self.eat(')') {
            return Err("unclosed `(`".into());
        }
        Ok(match look {
            Some(negated) => Node::Look {
                node: Box::new(inner),
                negated,
            },
            None => inner,
        })
    }

    /// `name>` of `(?<name>…)`: an identifier, here only an ASCII one (the
    /// Unicode ID_Start/ID_Continue tables would cost more than such names are
    /// worth; a pattern that uses one is refused, so not checked). Names must be
    /// unique.
    fn group_name(&mut self) -> Result<(), String> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let first = self.pos == start;
            if !(c.is_ascii_alphabetic() || c == '_' || c == '$' || (!first && c.is_ascii_digit()))
            {
                break;
            }
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        if name.is_empty() || !self.eat('>') {
            return Err("a group name that is not an ASCII identifier".into());
        }
        if self.names.contains(&name) {
            return Err(format!("the group name {name:?} appears twice"));
        }
        self.names.push(name);
        Ok(())
    }

    fn class(&mut self) -> Result<Node, String> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err("unclosed `[`".into());
            };
            self.pos += 1;
            if c == ']' {
                break;
            }
            let item = if c == '\\' {
                self.class_escape()?
            } else {
                ClassItem::Char(c)
            };
            // A range, unless the `-` is last or an end is a class like \d.
            if let ClassItem::Char(lo) = item
                && self.peek() == Some('-')
                && !matches!(self.chars.get(self.pos + 1), None | Some(']'))
            {
                self.pos += 1;
                let hi_char = self.chars[self.pos];
                self.pos += 1;
                let hi = if hi_char == '\\' {
                    self.class_escape()?
                } else {
                    ClassItem::Char(hi_char)
                };
                match hi {
                    ClassItem::Char(hi) if hi >= lo => items.push(ClassItem::Range(lo, hi)),
                    ClassItem::Char(_) => return Err("a class range out of order".into()),
                    other => {
                        items.push(ClassItem::Char(lo));
                        items.push(ClassItem::Char('-'));
                        items.push(other);
                    }
                }
                continue;
            }
            items.push(item);
        }
        Ok(Node::Class { negated, items })
    }

    fn class_escape(&mut self) -> Result<ClassItem, String> {
        let Some(c) = self.peek() else {
            return Err("a `\\` at the end of the pattern".into());
        };
        self.pos += 1;
        Ok(match c {
            'd' => ClassItem::Digit(false),
            'D' => ClassItem::Digit(true),
            'w' => ClassItem::Word(false),
            'W' => ClassItem::Word(true),
            's' => ClassItem::Space(false),
            'S' => ClassItem::Space(true),
            'b' => ClassItem::Char('\u{8}'),
            '-' => ClassItem::Char('-'),
            c => ClassItem::Char(self.char_escape(c)?),
        })
    }

    fn escape(&mut self) -> Result<Node, String> {
        let Some(c) = self.peek() else {
            return Err("a `\\` at the end of the pattern".into());
        };
        self.pos += 1;
        let class = |item| Node::Class {
            negated: false,
            items: vec![item],
        };
        Ok(match c {
            'd' => class(ClassItem::Digit(false)),
            'D' => class(ClassItem::Digit(true)),
            'w' => class(ClassItem::Word(false)),
            'W' => class(ClassItem::Word(true)),
            's' => class(ClassItem::Space(false)),
            'S' => class(ClassItem::Space(true)),
            'b' => Node::WordBoundary(true),
            'B' => Node::WordBoundary(false),
            c => Node::Char(self.char_escape(c)?),
        })
    }

    /// Escapes that stand for one character.
    fn char_escape(&mut self, c: char) -> Result<char, String> {
        Ok(match c {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => '\0',
            // A control escape: `\cJ` is U+000A.
            'c' if self.peek().is_some_and(|l| l.is_ascii_alphabetic()) => {
                let letter = self.chars[self.pos];
                self.pos += 1;
                char::from(letter as u8 % 32)
            }
            'x' => self.hex(2)?,
            'u' => {
                if self.eat('{') {
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                        self.pos += 1;
                    }
                    let digits: String = self.chars[start..self.pos].iter().collect();
                    if !self.eat('}') {
                        return Err("an unclosed \\u{…}".into());
                    }
                    u32::from_str_radix(&digits, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or("an invalid \\u{…}")?
                } else {
                    self.utf16_escape()?
                }
            }
            '1'..='9' => return Err("backreferences are not supported".into()),
            c if c.is_ascii_alphanumeric() => {
                return Err(format!("the escape \\{c} is not an ECMA-262 escape"));
            }
            c => c,
        })
    }

    fn hex(&mut self, n: usize) -> Result<char, String> {
        char::from_u32(self.hex_value(n)?)
            .ok_or_else(|| "a hex escape that is not a character".into())
    }

    fn hex_value(&mut self, n: usize) -> Result<u32, String> {
        let digits: String = self.chars.iter().skip(self.pos).take(n).collect();
        if digits.chars().count() != n || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err("an incomplete hex escape".into());
        }
        self.pos += n;
        u32::from_str_radix(&digits, 16).map_err(|_| "an incomplete hex escape".into())
    }

    /// `\uHHHH` after the `u`: with the `u` flag a surrogate pair written as two
    /// escapes (`\uD83D\uDE00`, as JSON encoders write astral characters) is one
    /// character. A lone surrogate matches nothing in a Rust string; refused.
    fn utf16_escape(&mut self) -> Result<char, String> {
        let lone = "a lone surrogate escape (no string holds one)";
        let first = self.hex_value(4)?;
        if let Some(c) = char::from_u32(first) {
            return Ok(c);
        }
        if !(0xd800..0xdc00).contains(&first)
            || self.chars.get(self.pos) != Some(&'\\')
            || self.chars.get(self.pos + 1) != Some(&'u')
        {
            return Err(lone.into());
        }
        self.pos += 2;
        let second = self.hex_value(4)?;
        if !(0xdc00..0xe000).contains(&second) {
            return Err(lone.into());
        }
        char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00))
            .ok_or_else(|| lone.into())
    }
}

/// Matching ran out of budget.
struct GaveUp;

type Res = Result<bool, GaveUp>;

struct Matcher<'a> {
    input: &'a [char],
    steps: core::cell::Cell<u32>,
    depth: core::cell::Cell<u32>,
}

impl Matcher<'_> {
    fn tick(&self) -> Result<(), GaveUp> {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        if steps > STEP_BUDGET {
            Err(GaveUp)
        } else {
            Ok(())
        }
    }

    fn single(&self, node: &Node, pos: usize) -> bool {
        let Some(&c) = self.input.get(pos) else {
            return false;
        };
        match node {
            Node::Char(x) => c == *x,
            Node::Any => !is_line_terminator(c),
            Node::Class { negated, items } => items.iter().any(|i| i.matches(c)) != *negated,
            _ => false,
        }
    }

    fn boundary(&self, pos: usize) -> bool {
        let before = pos > 0 && is_word(self.input[pos - 1]);
        let after = self.input.get(pos).is_some_and(|&c| is_word(c));
        before != after
    }

    /// Matches `node` at `pos`, then the continuation `k` with the position after it.
    fn node(&self, node: &Node, pos: usize, k: &dyn Fn(usize) -> Res) -> Res {
        self.tick()?;
        let depth = self.depth.get() + 1;
        if depth > DEPTH_BUDGET {
            return Err(GaveUp);
        }
        self.depth.set(depth);
        let result = self.node_inner(node, pos, k);
        self.depth.set(depth - 1);
        result
    }

    fn node_inner(&self, node: &Node, pos: usize, k: &dyn Fn(usize) -> Res) -> Res {
        match node {
            Node::Empty => k(pos),
            Node::Char(_) | Node::Any | Node::Class { .. } => {
                if self.single(node, pos) {
                    k(pos + 1)
                } else {
                    Ok(false)
                }
            }
            Node::Start => {
                if pos == 0 {
                    k(pos)
                } else {
                    Ok(false)
                }
            }
            Node::End => {
                if pos == self.input.len() {
                    k(pos)
                } else {
                    Ok(false)
                }
            }
            Node::WordBoundary(want) => {
                if self.boundary(pos) == *want {
                    k(pos)
                } else {
                    Ok(false)
                }
            }
            Node::Concat(items) => self.sequence(items, pos, k),
            Node::Alt(alternatives) => {
                for a in alternatives {
                    if self.node(a, pos, k)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Node::Repeat { node, min, max } if node.single() => {
                // Greedy and iterative: count the run, then try the longest first.
                let mut n = 0usize;
                let limit = max.map_or(usize::MAX, |m| m as usize);
                while n < limit && self.single(node, pos + n) {
                    n += 1;
                }
                if n < *min as usize {
                    return Ok(false);
                }
                for len in (*min as usize..=n).rev() {
                    self.tick()?;
                    if k(pos + len)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Node::Repeat { node, min, max } => self.repeat(node, *min, *max, 0, pos, k),
            Node::Look { node, negated } => {
                let found = self.node(node, pos, &|_| Ok(true))?;
                if found != *negated { k(pos) } else { Ok(false) }
            }
        }
    }

    fn sequence(&self, items: &[Node], pos: usize, k: &dyn Fn(usize) -> Res) -> Res {
        match items.split_first() {
            None => k(pos),
            Some((first, rest)) => self.node(first, pos, &|p| self.sequence(rest, p, k)),
        }
    }

    fn repeat(
        &self,
        node: &Node,
        min: u32,
        max: Option<u32>,
        count: u32,
        pos: usize,
        k: &dyn Fn(usize) -> Res,
    ) -> Res {
        if count < min {
            return self.node(node, pos, &|p| self.repeat(node, min, max, count + 1, p, k));
        }
        if max.is_none_or(|m| count < m) {
            // An iteration that consumes nothing would loop forever.
            let more = self.node(node, pos, &|p| {
                if p == pos {
                    Ok(false)
                } else {
                    self.repeat(node, min, max, count + 1, p, k)
                }
            })?;
            if more {
                return Ok(true);
            }
        }
        k(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, text: &str) -> bool {
        Pattern::new(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
            .expect("within budget")
    }

    #[test]
    fn literals_anchors_and_search() {
        assert!(m("abc", "xxabcxx"));
        assert!(!m("^abc", "xabc"));
        assert!(m("^abc$", "abc"));
        assert!(!m("^abc$", "abc\n"), "$ is the end of input, not of a line");
        assert!(m("", "anything"));
        assert!(m("a.c", "abc"));
        assert!(!m("a.c", "a\nc"));
    }

    #[test]
    fn classes_and_escapes() {
        assert!(m("^[a-z0-9_-]+$", "my-tool_1"));
        assert!(!m("^[a-z0-9_-]+$", "My"));
        assert!(m(r"^\d{3}-\d{4}$", "555-1234"));
        assert!(!m(r"^\d{3}-\d{4}$", "55-1234"));
        assert!(m(r"^[^\s@]+@[^\s@]+\.[^\s@]+$", "a@b.co"));
        assert!(!m(r"^[^\s@]+@[^\s@]+\.[^\s@]+$", "a b@c.d"));
        assert!(m(r"^\w+$", "abc_123"));
        assert!(!m(r"^\w+$", "é"));
        assert!(m(r"\bword\b", "a word here"));
        assert!(!m(r"\bword\b", "swordfish"));
        assert!(m(r"^\u00e9\x41$", "éA"));
        assert!(
            m(r"^[\uD83D\uDE00]$", "😀"),
            "a surrogate pair is one character"
        );
        assert!(m(r"^\uD83D\uDE00$", "😀"));
        assert!(m(r"^\cJ[\ci]$", "\n\t"), "control escapes");
        assert!(m(r"^[\-\]a]+$", "-]a"));
        assert!(m(r"^[\d.]+$", "1.5"));
        assert!(m(r"^\/path\.json$", "/path.json"));
        assert!(m("^[a-]$", "-"));
    }

    #[test]
    fn groups_alternation_and_quantifiers() {
        assert!(m("^(get|list)_[a-z]+$", "list_items"));
        assert!(!m("^(get|list)_[a-z]+$", "put_items"));
        assert!(m("^(?:ab)+$", "ababab"));
        assert!(!m("^(?:ab)+$", "ababa"));
        assert!(m("^(?<year>[0-9]{4})-(?<m>[0-9]{2})$", "2024-05"));
        assert!(m("^a{2,3}$", "aaa"));
        assert!(!m("^a{2,3}$", "aaaa"));
        assert!(m("^a{2,}$", "aaaaa"));
        assert!(m("^a*?b$", "aaab"));
        assert!(m("^(a|ab)(c|bcd)(d*)$", "abcd"));
        assert!(m("x{", "x{"), "annex B: a lone brace is literal");
        assert!(m("^(a*)*$", "aaaa"), "empty iterations terminate");
        assert!(
            m("^(^)*a$", "a"),
            "a group of an assertion may be quantified"
        );
        assert!(m("^(?:a|$)+$", "aa"));
        assert!(m(
            "^(https?://)?[a-z.]+(:[0-9]+)?$",
            "http://example.com:8080"
        ));
    }

    #[test]
    fn lookahead() {
        let strong = "^(?=.*[A-Z])(?=.*[0-9]).{8,}$";
        assert!(m(strong, "Passw0rdX"));
        assert!(!m(strong, "password1"));
        assert!(m("^(?!tmp_).*$", "data"));
        assert!(!m("^(?!tmp_).*$", "tmp_x"));
    }

    #[test]
    fn unsupported_syntax_is_refused() {
        for p in [
            r"(?<=a)b",
            r"(a)\1",
            r"\p{L}",
            r"\Aabc\Z",
            "(?i)abc",
            "a**",
            "*a",
            "(a",
            "a)",
            "[a",
            "[z-a]",
            "(?<>a)",
            "(?<1a>a)",
            "(?<a>x)(?<a>y)",
            r"\uD83D",
            r"\uDE00\uD83D",
        ] {
            assert!(Pattern::new(p).is_err(), "{p} should not compile");
        }
    }

    #[test]
    fn long_inputs_and_catastrophic_patterns_stay_bounded() {
        let long = "a".repeat(200_000);
        assert!(m("^[a-z]+$", &long));
        let evil = Pattern::new("^(a+)+$").unwrap();
        let text = format!("{}!", "a".repeat(40));
        assert_eq!(evil.is_match(&text), None, "gives up instead of hanging");
        let deep = Pattern::new("^(ab)*$").unwrap();
        assert_eq!(
            deep.is_match(&"ab".repeat(5000)),
            None,
            "gives up instead of overflowing"
        );
    }
}

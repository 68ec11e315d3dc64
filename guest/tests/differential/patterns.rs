//! The pattern matcher (`mcpbox_guest::schema::Pattern`) against `regress`.
//!
//! A generator of ECMA-262 patterns, kept as trees so that strings they match can be
//! drawn from them, and the comparison of the two matchers on those strings. The
//! fuzz target `differential` (guest/fuzz/) includes this file, so it uses only
//! `arbitrary`, `regress` and the guest's public API.
//!
//! The rules the comparison enforces (docs/testing.md, "Documented differences"):
//! - JSON Schema patterns are ECMA-262 with the `u` flag, so `regress` runs with it;
//! - where regress gives an answer and the guest gives one, they are the same;
//! - the guest may give up on its step budget (`None`: the pattern is not checked
//!   for that string); regress runs only after the guest answered, so a pattern that
//!   is catastrophic for both never reaches regress's unbounded backtracking;
//! - the guest may refuse a pattern (it is then noted and skipped), but not one made
//!   only of the syntax it claims to support;
//! - the guest reads a few constructs the `u` flag forbids as Annex B does (an
//!   identity escape such as `\-` outside a class, a `{` that is not a quantifier,
//!   `[\d-z]`): such a pattern must then compile without the flag and match the
//!   same strings as it does there.

use arbitrary::{Result, Unstructured};
use mcpbox_guest::schema::Pattern;

/// Which constructs a generated pattern may use.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// Lookahead, `(?=…)` and `(?!…)` (boon cannot translate them).
    pub lookahead: bool,
    /// Annex B syntax that the `u` flag forbids and the guest accepts.
    pub annex_b: bool,
    /// Syntax the guest refuses (lookbehind, backreferences, `\p{…}`, …).
    pub unsupported: bool,
    /// The empty classes `[]` and `[^]`.
    pub empty_class: bool,
    /// Characters on which boon's regex translation and ECMA-262 disagree
    /// (line terminators, Unicode spaces, non-ASCII letters).
    pub unicode_edges: bool,
}

impl Dialect {
    /// Everything: the pattern tests against regress.
    pub const ALL: Dialect = Dialect {
        lookahead: true,
        annex_b: true,
        unsupported: true,
        empty_class: true,
        unicode_edges: true,
    };
    /// What boon's ECMA-262-to-`regex` translation means the same way: the
    /// schema tests against boon.
    pub const BOON: Dialect = Dialect {
        lookahead: false,
        annex_b: false,
        unsupported: false,
        empty_class: false,
        unicode_edges: false,
    };
}

/// A generated pattern.
#[derive(Debug, Clone)]
pub enum Re {
    /// One character: its source text and characters it matches.
    Char {
        src: String,
        matches: Vec<char>,
    },
    /// A character the source cannot sample from (a negated class).
    AnyOf {
        src: String,
    },
    /// A zero-width assertion: `^`, `$`, `\b`, `\B`, or a lookahead.
    Assert(String),
    /// `(…)`, `(?:…)` or `(?<name>…)` around an alternation.
    Group {
        open: &'static str,
        body: Box<Re>,
    },
    /// `(?=…)` or `(?!…)`.
    Look {
        negated: bool,
        body: Box<Re>,
    },
    Concat(Vec<Re>),
    Alt(Vec<Re>),
    Repeat {
        body: Box<Re>,
        min: u32,
        max: Option<u32>,
        src: String,
    },
    /// Syntax outside the supported subset, copied as is.
    Raw(String),
}

impl Re {
    /// The pattern's source text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Re::Char { src, .. } | Re::AnyOf { src } | Re::Assert(src) | Re::Raw(src) => {
                out.push_str(src)
            }
            Re::Group { open, body } => {
                out.push_str(open);
                body.render_into(out);
                out.push(')');
            }
            Re::Look { negated, body } => {
                out.push_str(if *negated { "(?!" } else { "(?=" });
                body.render_into(out);
                out.push(')');
            }
            Re::Concat(items) => items.iter().for_each(|i| i.render_into(out)),
            Re::Alt(alternatives) => {
                for (i, a) in alternatives.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    a.render_into(out);
                }
            }
            Re::Repeat { body, src, .. } => {
                body.render_into(out);
                out.push_str(src);
            }
        }
    }

    /// Whether the pattern uses only syntax the guest claims to support.
    pub fn supported(&self) -> bool {
        match self {
            Re::Raw(_) => false,
            Re::Char { .. } | Re::AnyOf { .. } | Re::Assert(_) => true,
            Re::Group { body, .. } | Re::Look { body, .. } | Re::Repeat { body, .. } => {
                body.supported()
            }
            Re::Concat(items) | Re::Alt(items) => items.iter().all(Re::supported),
        }
    }

    /// Appends a string the pattern probably matches (lookaheads are ignored);
    /// negated classes take a character of `alphabet`.
    pub fn sample(&self, u: &mut Unstructured, out: &mut String, alphabet: &[char]) -> Result<()> {
        match self {
            Re::Char { matches, .. } => out.push(*u.choose(matches)?),
            Re::AnyOf { .. } => out.push(*u.choose(alphabet)?),
            Re::Assert(_) | Re::Look { .. } => {}
            Re::Raw(src) => {
                // Its literal characters, as a guess.
                out.extend(src.chars().filter(|c| !"\\()[]{}?*+|^$".contains(*c)));
            }
            Re::Group { body, .. } => body.sample(u, out, alphabet)?,
            Re::Concat(items) => {
                for i in items {
                    i.sample(u, out, alphabet)?;
                }
            }
            Re::Alt(alternatives) => u.choose(alternatives)?.sample(u, out, alphabet)?,
            Re::Repeat { body, min, max, .. } => {
                let most = max.unwrap_or(min + 3).min(min + 3);
                for _ in 0..u.int_in_range(*min..=most)? {
                    body.sample(u, out, alphabet)?;
                }
            }
        }
        Ok(())
    }
}

/// Characters for subjects: ASCII word and punctuation characters, the ECMA-262
/// line terminators and white space, non-ASCII letters, an astral character.
pub const ALPHABET: &[char] = &[
    'a', 'b', 'c', 'A', 'Z', '0', '5', '9', '_', '-', ' ', '.', '/', '(', ')', '[', ']', '{', '}',
    '*', '+', '?', '|', '^', '$', '\\', ',', ':', '@', '\n', '\t', '\u{0}', '\u{8}', 'é', 'ß', '€',
    '😀', '\r', '\u{2028}', '\u{a0}', '\u{feff}', '\u{1680}', '\u{3000}', '\u{b}',
];

/// The part of [`ALPHABET`] on which boon's translation agrees with ECMA-262.
pub const PLAIN_ALPHABET: &[char] = &[
    'a', 'b', 'c', 'A', 'Z', '0', '5', '9', '_', '-', ' ', '.', '/', '(', ')', '[', ']', '{', '}',
    '*', '+', '?', '|', '^', '$', '\\', ',', ':', '@', '\n', '\t', '\u{0}', '€', '😀', '\u{a0}',
    '\u{feff}', '\u{b}',
];

/// `(source, characters it matches)` for escapes that stand for a set.
fn class_escapes(plain: bool) -> Vec<(&'static str, Vec<char>)> {
    let mut v = vec![
        (r"\d", vec!['0', '5', '9']),
        (r"\D", vec!['a', '-', ' ', '😀']),
        (r"\w", vec!['a', 'Z', '0', '_']),
        (r"\W", vec!['-', ' ', '€', '😀']),
        (r"\s", vec![' ', '\t', '\n', '\u{a0}', '\u{feff}', '\u{b}']),
        (r"\S", vec!['a', '0', '-', '😀']),
    ];
    if !plain {
        v[1].1.push('é');
        v[3].1.extend(['é', 'ß']);
        v[4].1.extend(['\r', '\u{2028}', '\u{1680}', '\u{3000}']);
    }
    v
}

/// `(source, character)` for one literal character, escaped where needed.
fn literals(plain: bool) -> Vec<(&'static str, char)> {
    let mut v = vec![
        ("a", 'a'),
        ("b", 'b'),
        ("c", 'c'),
        ("A", 'A'),
        ("0", '0'),
        ("_", '_'),
        ("-", '-'),
        (" ", ' '),
        ("/", '/'),
        (",", ','),
        ("@", '@'),
        ("€", '€'),
        ("😀", '😀'),
        (r"\.", '.'),
        (r"\*", '*'),
        (r"\+", '+'),
        (r"\?", '?'),
        (r"\(", '('),
        (r"\)", ')'),
        (r"\[", '['),
        (r"\]", ']'),
        (r"\{", '{'),
        (r"\}", '}'),
        (r"\|", '|'),
        (r"\^", '^'),
        (r"\$", '$'),
        (r"\\", '\\'),
        (r"\/", '/'),
        (r"\n", '\n'),
        (r"\t", '\t'),
        (r"\v", '\u{b}'),
        (r"\f", '\u{c}'),
        (r"\x41", 'A'),
        (r"\x2d", '-'),
        (r"\u0061", 'a'),
        (r"\u20ac", '€'),
        (r"\u{1F600}", '😀'),
        (r"\u{61}", 'a'),
        (r"\cJ", '\n'),
        (r"\ci", '\t'),
    ];
    if !plain {
        v.extend([
            ("é", 'é'),
            (r"\u00e9", 'é'),
            (r"\r", '\r'),
            ("\u{2028}", '\u{2028}'),
            // A NUL escape; boon's translation reads `\0` as a backreference.
            (r"\0", '\u{0}'),
            (r"\uD83D\uDE00", '😀'),
        ]);
    }
    v
}

/// Annex B atoms: the guest reads them as literals, the `u` flag forbids them.
const ANNEX_B: &[(&str, char)] = &[
    (r"\-", '-'),
    (r"\@", '@'),
    (r"\ ", ' '),
    (r"\,", ','),
    (r"\:", ':'),
    ("]", ']'),
    ("{", '{'),
    ("}", '}'),
];

/// Syntax the guest refuses, or that is not a pattern at all.
const UNSUPPORTED: &[&str] = &[
    "(?<=a)",
    "(?<!a)",
    r"(a)\1",
    r"(?<n>a)\k<n>",
    r"\p{L}",
    r"\P{Lu}",
    r"\c1",
    "(?i:a)",
    "(",
    ")",
    "[",
    "*",
    "a**",
    "x{2,1}",
    r"\",
    r"\q",
    "[z-a]",
    r"\u{110000}",
    r"\xZZ",
    "(?<>a)",
    "(?<1a>a)",
];

/// Generates patterns of one dialect.
#[derive(Debug)]
pub struct Generator {
    dialect: Dialect,
    escapes: Vec<(&'static str, Vec<char>)>,
    literals: Vec<(&'static str, char)>,
    groups: u32,
}

impl Generator {
    /// A generator for `dialect`.
    pub fn new(dialect: Dialect) -> Generator {
        Generator {
            dialect,
            escapes: class_escapes(!dialect.unicode_edges),
            literals: literals(!dialect.unicode_edges),
            groups: 0,
        }
    }

    /// A whole pattern: an alternation, nested at most `depth` groups deep.
    pub fn pattern(&mut self, u: &mut Unstructured, depth: u32) -> Result<Re> {
        self.groups = 0;
        let body = self.alternation(u, depth)?;
        // Most schema patterns are anchored; anchors also make mismatches likely.
        Ok(match u.int_in_range(0..=3)? {
            0 => body,
            1 => Re::Concat(vec![Re::Assert("^".into()), self.grouped(body)]),
            2 => Re::Concat(vec![self.grouped(body), Re::Assert("$".into())]),
            _ => Re::Concat(vec![
                Re::Assert("^".into()),
                self.grouped(body),
                Re::Assert("$".into()),
            ]),
        })
    }

    /// Wraps an alternation so that an anchor applies to all of it.
    fn grouped(&self, body: Re) -> Re {
        match body {
            Re::Alt(_) => Re::Group {
                open: "(?:",
                body: Box::new(body),
            },
            other => other,
        }
    }

    fn alternation(&mut self, u: &mut Unstructured, depth: u32) -> Result<Re> {
        let n = if chance(u, 25)? {
            u.int_in_range(2..=3)?
        } else {
            1
        };
        let mut alternatives = Vec::new();
        for _ in 0..n {
            alternatives.push(self.concatenation(u, depth)?);
        }
        Ok(if n == 1 {
            alternatives.pop().expect("one alternative")
        } else {
            Re::Alt(alternatives)
        })
    }

    fn concatenation(&mut self, u: &mut Unstructured, depth: u32) -> Result<Re> {
        let n = u.int_in_range(0..=4)?;
        let mut items = Vec::new();
        for _ in 0..n {
            let atom = self.atom(u, depth)?;
            items.push(self.quantified(u, atom)?);
        }
        Ok(if n == 1 {
            items.pop().expect("one item")
        } else {
            Re::Concat(items)
        })
    }

    fn quantified(&mut self, u: &mut Unstructured, atom: Re) -> Result<Re> {
        if matches!(atom, Re::Assert(_) | Re::Raw(_)) || !chance(u, 35)? {
            return Ok(atom);
        }
        let (src, min, max): (&str, u32, Option<u32>) = *u.choose(&[
            ("*", 0, None),
            ("+", 1, None),
            ("?", 0, Some(1)),
            ("{0}", 0, Some(0)),
            ("{1}", 1, Some(1)),
            ("{2}", 2, Some(2)),
            ("{0,1}", 0, Some(1)),
            ("{1,3}", 1, Some(3)),
            ("{2,}", 2, None),
            ("{0,}", 0, None),
        ])?;
        let lazy = if chance(u, 20)? { "?" } else { "" };
        if matches!(atom, Re::Look { .. }) && !self.dialect.annex_b {
            // A quantified lookahead is Annex B only.
            return Ok(atom);
        }
        Ok(Re::Repeat {
            body: Box::new(atom),
            min,
            max,
            src: format!("{src}{lazy}"),
        })
    }

    fn atom(&mut self, u: &mut Unstructured, depth: u32) -> Result<Re> {
        let d = self.dialect;
        Ok(match u.int_in_range(0..=99)? {
            0..=39 => {
                let (src, c) = *u.choose(&self.literals)?;
                Re::Char {
                    src: src.into(),
                    matches: vec![c],
                }
            }
            40..=51 => {
                let (src, set) = u.choose(&self.escapes)?.clone();
                Re::Char {
                    src: src.into(),
                    matches: set,
                }
            }
            52..=57 => {
                let mut matches = vec!['a', '0', ' ', '😀', '-'];
                if d.unicode_edges {
                    matches.extend(['é', '\u{a0}']);
                }
                Re::Char {
                    src: ".".into(),
                    matches,
                }
            }
            58..=72 => self.class(u)?,
            73..=78 => Re::Assert((*u.choose(&["^", "$", r"\b", r"\B"])?).into()),
            79..=90 if depth > 0 => {
                self.groups += 1;
                let open = *u.choose(&["(", "(?:", "(?<g>", "(?<name_1>"])?;
                // Group names must be unique.
                let open = if open.starts_with("(?<") && self.groups > 1 {
                    "("
                } else {
                    open
                };
                Re::Group {
                    open,
                    body: Box::new(self.alternation(u, depth - 1)?),
                }
            }
            91..=94 if depth > 0 && d.lookahead => Re::Look {
                negated: u.arbitrary()?,
                body: Box::new(self.alternation(u, depth - 1)?),
            },
            95..=96 if d.annex_b => {
                let (src, c) = *u.choose(ANNEX_B)?;
                Re::Char {
                    src: src.into(),
                    matches: vec![c],
                }
            }
            97 if d.unsupported => Re::Raw((*u.choose(UNSUPPORTED)?).into()),
            98 if d.empty_class => Re::Raw((*u.choose(&["[]", "[^]"])?).into()),
            99 if d.annex_b => Re::Raw(
                (*u.choose(&["x{", "x{,2}", "x{a}", r"[\d-z]", r"[a-\w]", "(?=a)*"])?).into(),
            ),
            _ => Re::Char {
                src: "a".into(),
                matches: vec!['a'],
            },
        })
    }

    fn class(&mut self, u: &mut Unstructured) -> Result<Re> {
        let negated = chance(u, 25)?;
        let mut src = String::from(if negated { "[^" } else { "[" });
        let mut matches = Vec::new();
        for i in 0..u.int_in_range(1..=4)? {
            match u.int_in_range(0..=9)? {
                0..=2 => {
                    let (s, c) = *u.choose(&[
                        ("a", 'a'),
                        ("b", 'b'),
                        ("0", '0'),
                        ("_", '_'),
                        (" ", ' '),
                        (".", '.'),
                        ("$", '$'),
                        ("(", '('),
                        ("€", '€'),
                        ("😀", '😀'),
                        (r"\]", ']'),
                        (r"\-", '-'),
                        (r"\\", '\\'),
                        (r"\^", '^'),
                        (r"\n", '\n'),
                        (r"\x41", 'A'),
                        (r"\u{1F600}", '😀'),
                        (r"\/", '/'),
                    ])?;
                    src.push_str(s);
                    matches.push(c);
                }
                // `[` inside a class: a literal in ECMA-262, a nested class for boon.
                3 if self.dialect.unicode_edges => {
                    src.push('[');
                    matches.push('[');
                }
                4..=6 => {
                    let (s, lo, hi) = *u.choose(&[
                        ("a-c", 'a', 'c'),
                        ("0-9", '0', '9'),
                        ("A-Z", 'A', 'Z'),
                        (r"\x41-\x5a", 'A', 'Z'),
                        ("!-/", '!', '/'),
                        (r"\u{1F600}-\u{1F64F}", '😀', '🙏'),
                        ("-", '-', '-'),
                    ])?;
                    // A bare `-` after the first item would make a range with its
                    // neighbours, which is an error in several of them.
                    let s = if s == "-" && i > 0 { r"\-" } else { s };
                    src.push_str(s);
                    matches.extend([lo, hi]);
                }
                7..=8 => {
                    let (s, set) = u.choose(&self.escapes)?.clone();
                    src.push_str(s);
                    matches.extend(set);
                }
                _ => {
                    if self.dialect.unicode_edges {
                        src.push_str(r"\b");
                        matches.push('\u{8}');
                    } else {
                        src.push('c');
                        matches.push('c');
                    }
                }
            }
        }
        src.push(']');
        Ok(if negated {
            Re::AnyOf { src }
        } else {
            Re::Char { src, matches }
        })
    }
}

/// True `percent` times in a hundred; false when the input is used up, so that
/// short inputs make small patterns.
pub fn chance(u: &mut Unstructured, percent: u32) -> Result<bool> {
    Ok(u.int_in_range(0..=99)? >= 100 - percent)
}

/// Strings to match `re` against: one drawn from it, the same with one character
/// changed, inserted or removed, a random one, and the empty string.
pub fn subjects(u: &mut Unstructured, re: &Re, alphabet: &[char]) -> Result<Vec<String>> {
    let mut drawn = String::new();
    re.sample(u, &mut drawn, alphabet)?;
    let mut changed: Vec<char> = drawn.chars().collect();
    let at = u.int_in_range(0..=changed.len())?;
    let c = *u.choose(alphabet)?;
    match u.int_in_range(0..=2)? {
        0 if at < changed.len() => changed[at] = c,
        1 if at < changed.len() => {
            changed.remove(at);
        }
        _ => changed.insert(at, c),
    }
    let mut random = String::new();
    for _ in 0..u.int_in_range(0..=6)? {
        random.push(*u.choose(alphabet)?);
    }
    Ok(vec![
        drawn,
        changed.into_iter().collect(),
        random,
        String::new(),
    ])
}

/// What the comparisons saw, to show that they compared something.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Patterns compared.
    pub patterns: u64,
    /// Strings both matchers answered for.
    pub answered: u64,
    /// ... of which matched.
    pub matched: u64,
    /// Strings the guest gave up on (its step or depth budget).
    pub gave_up: u64,
    /// Patterns the guest refused (noted and skipped by the validator).
    pub refused: u64,
    /// Patterns only Annex B allows, compared with regress without the `u` flag.
    pub annex_b: u64,
    /// Annex B patterns with `\u{…}`, whose meaning differs without the flag:
    /// compiled, not matched.
    pub annex_b_braced: u64,
    /// Patterns on which regress may not return (see [`regress_may_not_return`]):
    /// matched by the guest alone, to show that it does return.
    pub regress_loops: u64,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} patterns ({} refused by the guest, {} Annex B, {} that regress cannot run); {} strings answered by both ({} matched), {} given up by the guest",
            self.patterns,
            self.refused,
            self.annex_b + self.annex_b_braced,
            self.regress_loops,
            self.answered,
            self.matched,
            self.gave_up
        )
    }
}

/// Compares the guest's matcher with regress on `pattern` and `subjects`.
/// `supported`: the pattern uses only syntax the guest claims to support.
pub fn compare(
    pattern: &str,
    supported: bool,
    subjects: &[String],
    tally: &mut Tally,
) -> std::result::Result<(), String> {
    tally.patterns += 1;
    let unicode = regress::Regex::with_flags(&without_captures(pattern), "u");
    let guest = match Pattern::new(pattern) {
        Ok(p) => p,
        Err(why) => {
            tally.refused += 1;
            if supported && unicode.is_ok() {
                return Err(format!(
                    "the guest refuses {pattern:?} ({why}), though it uses only supported syntax"
                ));
            }
            return Ok(());
        }
    };
    let regress = match unicode {
        Ok(re) => re,
        Err(u_error) => match regress::Regex::new(&without_captures(pattern)) {
            // Annex B: the guest reads the pattern as ECMA-262 does without `u`.
            Ok(re) if pattern.contains(r"\u{") => {
                let _ = re;
                tally.annex_b_braced += 1;
                return Ok(());
            }
            Ok(re) => {
                tally.annex_b += 1;
                re
            }
            Err(e) => {
                return Err(format!(
                    "the guest accepts {pattern:?}, which ECMA-262 rejects with the u flag ({u_error}) and without it ({e})"
                ));
            }
        },
    };
    if regress_may_not_return(pattern) {
        tally.regress_loops += 1;
        for s in subjects {
            let _ = guest.is_match(s);
        }
        return Ok(());
    }
    for s in subjects {
        let Some(found) = guest.is_match(s) else {
            tally.gave_up += 1;
            continue;
        };
        let want = regress.find(s).is_some();
        if found != want {
            return Err(format!(
                "{pattern:?} on {s:?}: the guest says {}, regress says {}",
                verdict(found),
                verdict(want)
            ));
        }
        tally.answered += 1;
        tally.matched += u64::from(found);
    }
    Ok(())
}

/// `pattern` with its capturing and named groups made non-capturing (`(?:`).
/// Whether a pattern matches does not depend on captures (the guest has no
/// backreferences), and regress exhausts memory on some capturing shapes:
/// `((^|){2}){2}x` against the empty string asks for gigabytes.
pub fn without_captures(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(&next) = chars.get(i + 1) {
                    out.push(next);
                }
                i += 2;
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                let rest = &chars[i + 1..];
                if rest.first() != Some(&'?') {
                    out.push_str("(?:");
                    i += 1;
                    continue;
                }
                if rest.get(1) == Some(&'<')
                    && !matches!(rest.get(2), Some('=' | '!'))
                    && let Some(end) = rest.iter().position(|&c| c == '>')
                {
                    out.push_str("(?:");
                    i += end + 2;
                    continue;
                }
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Whether `pattern` has a shape on which regress (0.11.1 and 0.12.0) may not
/// return: a quantifier that may repeat its body, whose body holds another
/// quantifier that repeats, or that is optional over something that can match the
/// empty string. regress is a backtracker that remembers no failed position, so on
/// such nesting it either loops until memory runs out (`(?:(?:a?)?)*a` on "a",
/// `(?:a(?:a?)?)*b` on "aaac") or tries every way to split the string among the
/// inner repeats (`(?:a*?a*?a*?a*?)*b` on a dozen `a`s and a `c`: more than ten
/// seconds; `(?:a+)+b` on 25: a second). ECMA-262 defines all of them; the guest
/// answers them, or gives up at its step budget, and never hangs. Found by the
/// fuzz target. The shape is read from the text, so that the fuzzer's raw
/// patterns are covered as well as generated ones; reading more than the shape
/// needs is harmless (a skipped comparison).
pub fn regress_may_not_return(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut at = 0;
    shape::alternation(&chars, &mut at).looping
}

/// The little of a pattern's structure [`regress_may_not_return`] reads.
mod shape {
    /// What a piece of pattern is, as far as the shape is concerned.
    #[derive(Clone, Copy, Default)]
    pub struct Shape {
        /// It can match the empty string.
        pub nullable: bool,
        /// It holds an optional or repeating quantifier whose body can match
        /// the empty string.
        pub nullable_quantifier: bool,
        /// It holds a quantifier that may repeat (a maximum above one).
        pub repeating: bool,
        /// It holds the shape regress may not return on.
        pub looping: bool,
    }

    pub fn alternation(chars: &[char], at: &mut usize) -> Shape {
        let mut all = sequence(chars, at);
        while chars.get(*at) == Some(&'|') {
            *at += 1;
            let next = sequence(chars, at);
            all.nullable |= next.nullable;
            all.nullable_quantifier |= next.nullable_quantifier;
            all.repeating |= next.repeating;
            all.looping |= next.looping;
        }
        all
    }

    fn sequence(chars: &[char], at: &mut usize) -> Shape {
        let mut all = Shape {
            nullable: true,
            ..Shape::default()
        };
        while let Some(&c) = chars.get(*at) {
            if c == '|' || c == ')' {
                break;
            }
            let mut piece = atom(chars, at);
            if let Some((min, max)) = quantifier(chars, at) {
                piece.looping |= max > 1 && (piece.nullable_quantifier || piece.repeating);
                piece.nullable_quantifier |= piece.nullable && (min, max) != (1, 1);
                piece.repeating |= max > 1;
                piece.nullable |= min == 0;
            }
            all.nullable &= piece.nullable;
            all.nullable_quantifier |= piece.nullable_quantifier;
            all.repeating |= piece.repeating;
            all.looping |= piece.looping;
        }
        all
    }

    fn atom(chars: &[char], at: &mut usize) -> Shape {
        let c = chars[*at];
        *at += 1;
        let matches_one = Shape::default();
        match c {
            '(' => {
                let mut lookaround = false;
                if chars.get(*at) == Some(&'?') {
                    *at += 1;
                    match chars.get(*at) {
                        Some(':') => *at += 1,
                        Some('=' | '!') => {
                            *at += 1;
                            lookaround = true;
                        }
                        Some('<') if matches!(chars.get(*at + 1), Some('=' | '!')) => {
                            *at += 2;
                            lookaround = true;
                        }
                        Some('<') => {
                            while *at < chars.len() && chars[*at] != '>' {
                                *at += 1;
                            }
                            *at += 1;
                        }
                        _ => {}
                    }
                }
                let mut inner = alternation(chars, at);
                *at += 1; // ')'
                inner.nullable |= lookaround;
                inner
            }
            '[' => {
                while *at < chars.len() && chars[*at] != ']' {
                    *at += usize::from(chars[*at] == '\\') + 1;
                }
                *at += 1;
                matches_one
            }
            '\\' => {
                let escaped = chars.get(*at).copied().unwrap_or('\\');
                *at += 1;
                // The rest of a multi-character escape, so that it counts as one atom:
                // `\u{1F600}`, `\p{L}`, `\k<name>`, `\u00e9`, `\x41`, `\cJ`, `\12`.
                let closing = match (escaped, chars.get(*at)) {
                    ('u' | 'p' | 'P', Some('{')) => Some('}'),
                    ('k', Some('<')) => Some('>'),
                    _ => None,
                };
                if let Some(closing) = closing {
                    while *at < chars.len() && chars[*at] != closing {
                        *at += 1;
                    }
                    *at += 1;
                } else {
                    let (count, digits): (usize, fn(&char) -> bool) = match escaped {
                        'u' => (4, char::is_ascii_hexdigit),
                        'x' => (2, char::is_ascii_hexdigit),
                        'c' => (1, char::is_ascii_alphabetic),
                        '0'..='9' => (usize::MAX, char::is_ascii_digit),
                        _ => (0, char::is_ascii_digit),
                    };
                    let mut taken = 0;
                    while taken < count && chars.get(*at).is_some_and(digits) {
                        *at += 1;
                        taken += 1;
                    }
                }
                Shape {
                    // Assertions and backreferences can match the empty string.
                    nullable: matches!(escaped, 'b' | 'B' | '1'..='9' | 'k'),
                    ..Shape::default()
                }
            }
            '^' | '$' => Shape {
                nullable: true,
                ..Shape::default()
            },
            _ => matches_one,
        }
    }

    /// A quantifier at `at`, as (min, max), `usize::MAX` for no maximum.
    fn quantifier(chars: &[char], at: &mut usize) -> Option<(usize, usize)> {
        let bounds = match chars.get(*at)? {
            '?' => Some((0, 1)),
            '*' => Some((0, usize::MAX)),
            '+' => Some((1, usize::MAX)),
            '{' => braces(chars, at),
            _ => None,
        }?;
        *at += 1; // the quantifier's last character
        if chars.get(*at) == Some(&'?') {
            *at += 1; // lazy
        }
        Some(bounds)
    }

    /// `{n}`, `{n,}` or `{n,m}` at `at`, leaving `at` on its `}`; `None` (and
    /// `at` unmoved) when the brace is a literal, as Annex B reads it.
    fn braces(chars: &[char], at: &mut usize) -> Option<(usize, usize)> {
        let text: String = chars[*at + 1..].iter().take_while(|&&c| c != '}').collect();
        if *at + 1 + text.len() >= chars.len() {
            return None;
        }
        let number = |s: &str| -> Option<usize> {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().unwrap_or(usize::MAX))
        };
        let bounds = match text.split_once(',') {
            None => {
                let n = number(&text)?;
                (n, n)
            }
            Some((min, "")) => (number(min)?, usize::MAX),
            Some((min, max)) => (number(min)?, number(max)?),
        };
        *at += 1 + text.len();
        Some(bounds)
    }
}

fn verdict(matched: bool) -> &'static str {
    if matched { "match" } else { "no match" }
}

/// One generated case: a pattern of `dialect` and its subjects, compared.
pub fn case(u: &mut Unstructured, tally: &mut Tally) -> Result<std::result::Result<(), String>> {
    let mut generator = Generator::new(Dialect::ALL);
    let re = generator.pattern(u, 2)?;
    let subjects = subjects(u, &re, ALPHABET)?;
    Ok(compare(&re.render(), re.supported(), &subjects, tally))
}

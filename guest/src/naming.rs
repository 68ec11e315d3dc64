//! Namespaced tool names: `mcp__{server}__{tool}`.
//!
//! Agent platforms put every tool in one flat namespace and most of them limit
//! names to `[A-Za-z0-9_-]{1,64}`. So the server's name (or its configured
//! `toolPrefix`) and the tool's name are joined, every other character becomes `_`,
//! and a name longer than 64 characters is cut and given a short hash of the
//! *unsanitised* server and tool names: two long names that share a prefix still
//! differ, and the same server and tool always get the same name, on every run and
//! every platform (FNV-1a is fixed, unlike the std hasher).
//!
//! # Collisions between servers
//!
//! Joining with `__` is ambiguous when a server name holds `__` itself: server `x`
//! with tool `y__echo` and server `x__y` with tool `echo` are both
//! `mcp__x__y__echo`. Every name of a server starts with its [`space`], so two
//! servers can only collide when one's space is the start of the other's:
//! [`rivals`] finds those pairs when the configuration loads (in `O(n log n)`,
//! not by comparing every pair), and the registry keeps a name that a server
//! still starting could claim out of reach until it has listed its tools.

use crate::prelude::*;

/// The longest name platforms accept.
pub const MAX_LEN: usize = 64;

/// The hash suffix: `_` and 8 hex digits.
const SUFFIX_LEN: usize = 9;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`, one per character.
pub fn sanitize(segment: &str) -> String {
    segment
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The start of every name a server segment produces: `mcp__{segment}__`.
pub fn prefix(segment: &str) -> String {
    format!("mcp__{}__", sanitize(segment))
}

/// The start every registry name of a server with this segment shares: its
/// [`prefix`], or as much of it as a cut name keeps.
pub fn space(segment: &str) -> String {
    let mut space = prefix(segment);
    space.truncate(MAX_LEN - SUFFIX_LEN);
    space
}

/// The starts of `name` that could be some server's [`space`], shortest first:
/// every start ending in `__` no longer than a cut name keeps, and the start a cut
/// name keeps.
pub fn possible_spaces(name: &str) -> impl Iterator<Item = &str> {
    let keep = MAX_LEN - SUFFIX_LEN;
    let bytes = name.as_bytes();
    (2..=name.len().min(keep))
        .filter(move |&k| k == keep || bytes[k - 2..k] == *b"__")
        .filter(move |&k| name.is_char_boundary(k))
        .map(move |k| &name[..k])
}

/// For every segment some of whose names could also be names of another
/// segment's server: (its index, that other's index), one pair per segment, in
/// `segments` order. The other is the one with the shortest space (`x` for
/// `x__y`), or the first with the same space.
pub fn rivals(segments: &[&str]) -> Vec<(usize, usize)> {
    let spaces: Vec<String> = segments.iter().map(|s| space(s)).collect();
    let mut first = alloc::collections::BTreeMap::new();
    for (i, space) in spaces.iter().enumerate() {
        first.entry(space.as_str()).or_insert(i);
    }
    let mut pairs = Vec::new();
    for (j, space) in spaces.iter().enumerate() {
        let rival = possible_spaces(space)
            .filter_map(|start| first.get(start).copied())
            .find(|&i| i != j);
        if let Some(i) = rival {
            pairs.push((j, i));
        }
    }
    pairs
}

/// The registry name of `tool` on the server whose name segment is `segment`
/// (the server's name, or its `toolPrefix`).
pub fn tool_name(segment: &str, tool: &str) -> String {
    let full = format!("{}{}", prefix(segment), sanitize(tool));
    if full.len() <= MAX_LEN {
        return full;
    }
    let mut input = Vec::with_capacity(segment.len() + tool.len() + 1);
    input.extend_from_slice(segment.as_bytes());
    input.push(0);
    input.extend_from_slice(tool.as_bytes());
    shorten(&full, &input)
}

/// An ASCII name longer than [`MAX_LEN`] cut to fit, with a short hash of `input`
/// (what the name was made from, before sanitising) in place of its end: the
/// same input always gives the same name, and two that share a start still
/// differ. Also used by the provider adapters (`adapter/names.rs`).
pub fn shorten(full: &str, input: &[u8]) -> String {
    let hash = fnv1a64(input);
    let folded = ((hash >> 32) ^ (hash & 0xffff_ffff)) as u32;
    // Sanitised names are ASCII, so cutting at a byte index is a character boundary.
    format!("{}_{folded:08x}", &full[..MAX_LEN - SUFFIX_LEN])
}

/// FNV-1a, 64 bit: tiny, fixed and the same everywhere.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_and_sanitises() {
        assert_eq!(tool_name("demo", "echo"), "mcp__demo__echo");
        assert_eq!(
            tool_name("my.server", "get file"),
            "mcp__my_server__get_file"
        );
        assert_eq!(tool_name("srv", "a/b:c-d_e"), "mcp__srv__a_b_c-d_e");
        // One `_` per character, not per byte.
        assert_eq!(tool_name("s", "héllo"), "mcp__s__h_llo");
        assert_eq!(tool_name("s", "日本"), "mcp__s____");
    }

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn exactly_64_characters_are_kept_whole() {
        // "mcp__s__" is 8 characters, so a 56-character tool makes exactly 64.
        let tool = "t".repeat(56);
        let name = tool_name("s", &tool);
        assert_eq!(name.len(), 64);
        assert_eq!(name, format!("mcp__s__{tool}"));

        let longer = tool_name("s", &"t".repeat(57));
        assert_eq!(longer.len(), 64);
        assert_ne!(longer, name);
        assert!(longer.starts_with("mcp__s__ttt"));
        let suffix = &longer[55..];
        assert!(suffix.starts_with('_'));
        assert!(suffix[1..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn long_names_sharing_a_prefix_stay_distinct_and_stable() {
        let base = "x".repeat(70);
        let a = tool_name("server", &format!("{base}_alpha"));
        let b = tool_name("server", &format!("{base}_beta"));
        assert_eq!(a.len(), 64);
        assert_eq!(b.len(), 64);
        assert_eq!(a[..55], b[..55]);
        assert_ne!(a, b);
        // Deterministic: the same input gives the same name, and the value is pinned
        // so a change of hash (which would rename tools for users) fails here.
        assert_eq!(a, tool_name("server", &format!("{base}_alpha")));
        assert_eq!(&a[55..], "_b8472f20");
        assert_eq!(a, format!("mcp__server__{}_b8472f20", "x".repeat(42)));
    }

    #[test]
    fn every_name_starts_with_its_space() {
        for (segment, tool) in [
            ("x", "y__echo"),
            ("x__y", "echo"),
            ("s", &*"t".repeat(80)),
            (&*"long".repeat(20), "t"),
        ] {
            let name = tool_name(segment, tool);
            assert!(name.starts_with(&space(segment)), "{name}");
            assert!(
                possible_spaces(&name).any(|s| s == space(segment)),
                "{name} does not offer {}",
                space(segment)
            );
        }
        assert_eq!(space("x"), "mcp__x__");
        assert_eq!(space(&"long".repeat(20)).len(), MAX_LEN - SUFFIX_LEN);
        let starts: Vec<&str> = possible_spaces("mcp__x__y__echo").collect();
        assert_eq!(starts, ["mcp__", "mcp__x__", "mcp__x__y__"]);
    }

    #[test]
    fn rivals_are_servers_whose_names_can_meet() {
        // `x` and `x__y` (either order), `x` and `x_` (`mcp__x___…`), the same
        // name once sanitised, and two long names that share what a cut keeps.
        let long = "l".repeat(60);
        let segments = [
            "x__y", "other", "x", "x_", "a.b", "a_b", "a", "ab", &*long, &*long,
        ];
        assert_eq!(rivals(&segments), [(0, 2), (3, 2), (5, 4), (9, 8)]);
        assert_eq!(rivals(&["x", "y", "xy", "x-y"]), []);
    }

    #[test]
    fn rivals_scale_with_the_number_of_servers() {
        // 100,000 servers that all collide with one: one pair each, no pair of
        // every two.
        let names: Vec<String> = (0..100_000).map(|i| format!("x__{i}")).collect();
        let mut segments: Vec<&str> = names.iter().map(String::as_str).collect();
        segments.push("x");
        let pairs = rivals(&segments);
        assert_eq!(pairs.len(), 100_000);
        assert!(pairs.iter().all(|&(_, i)| i == 100_000));
        let same: Vec<&str> = vec!["same"; 100_000];
        assert_eq!(rivals(&same).len(), 99_999);
    }

    #[test]
    fn the_hash_sees_unsanitised_names() {
        // Both sanitise to the same text; the hash keeps them apart.
        let long = "y".repeat(60);
        let a = tool_name("s", &format!("{long}.a"));
        let b = tool_name("s", &format!("{long}/a"));
        assert_ne!(a, b);
    }
}

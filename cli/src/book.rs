//! The book's checks: README.md and docs/*.md against the tree they describe.
//!
//! Docs drift when code moves and nobody greps for the sentence that named it. These
//! tests read the tree and the pages at test time and fail on what drift leaves
//! behind: a source file of the guest, the host or the CLI missing from the map in
//! docs/architecture.md (or a map row naming a file that is gone), a relative link to a
//! file or heading that does not exist, a cited repository path that does not exist,
//! a test the security page names that no longer exists under that name, and an issue
//! number or a commit hash, which point at history the reader does not have. They live
//! beside the CLI reference's test ([`crate::reference`]), the other check that a page
//! says what the code does.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The repository's root (this crate is `cli/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

/// The source trees the architecture map covers.
const MAPPED: &[&str] = &["guest/src", "host/src", "cli/src"];

/// Top-level directories whose paths, cited in backticks, must exist.
const CITED_ROOTS: &[&str] = &[
    ".ci/",
    "bench/",
    "cli/",
    "docs/",
    "examples/",
    "guest/",
    "host/",
    "js/",
    "scripts/",
    "tests/",
    "wit/",
    "wit-stock/",
];

/// README.md and every page of docs/, relative to the root, in a stable order.
fn pages(root: &Path) -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<String> = fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("docs/ entry").file_name())
        .filter_map(|name| name.to_str().map(str::to_string))
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Every file under `dir` (relative to `root`), as `/`-separated paths from the root.
fn files_under(root: &Path, dir: &str, out: &mut BTreeSet<String>) {
    let mut stack = vec![root.join(dir)];
    while let Some(path) = stack.pop() {
        for entry in fs::read_dir(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
            let entry = entry.expect("directory entry");
            let path = entry.path();
            if entry.file_type().expect("file type").is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(root).expect("under the root");
                let parts: Vec<_> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(parts.join("/"));
            }
        }
    }
}

/// The page's lines with fenced code blocks blanked (kept as empty lines, so that
/// line numbers stay true).
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .map(|line| {
            if line.starts_with("```") {
                fenced = !fenced;
                ""
            } else if fenced {
                ""
            } else {
                line
            }
        })
        .collect()
}

/// `line` with its inline code spans removed.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The contents of the inline code spans of `line`.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces
/// turned into hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings; a repeated heading gets `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes + 1..]);
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        };
        *count += 1;
        anchors.insert(anchor);
    }
    anchors
}

/// The targets of the inline links `[text](target)` in a line of prose.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                targets.push(after[..end].to_string());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    targets
}

/// `base/relative` with `.` and `..` resolved, as a `/`-separated path from the root;
/// `None` when it climbs out of the repository.
fn resolve(base: &Path, relative: &str) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for component in base.join(relative).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    Some(parts.join("/"))
}

/// The rows of docs/architecture.md's map: `| \`path\` | concept |` for the mapped trees.
fn map_rows(text: &str) -> Vec<(String, String)> {
    prose_lines(text)
        .into_iter()
        .filter_map(|line| {
            let row = line.strip_prefix("| `")?;
            let (path, rest) = row.split_once('`')?;
            if !MAPPED
                .iter()
                .any(|dir| path.starts_with(&format!("{dir}/")))
            {
                return None;
            }
            let concept = rest.trim_start_matches(" |").trim_end_matches('|').trim();
            Some((path.to_string(), concept.to_string()))
        })
        .collect()
}

#[test]
fn architecture_map_lists_every_source_file() {
    let root = root();
    let mut files = BTreeSet::new();
    for dir in MAPPED {
        files_under(&root, dir, &mut files);
    }
    let map = fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let rows = map_rows(&map);
    let mapped: BTreeSet<String> = rows.iter().map(|(path, _)| path.clone()).collect();

    let unmapped: Vec<_> = files.difference(&mapped).collect();
    let gone: Vec<_> = mapped.difference(&files).collect();
    let empty: Vec<_> = rows
        .iter()
        .filter(|(_, concept)| concept.is_empty())
        .map(|(p, _)| p)
        .collect();
    let mut twice = BTreeSet::new();
    let mut once = BTreeSet::new();
    for (path, _) in &rows {
        if !once.insert(path) {
            twice.insert(path);
        }
    }
    assert!(
        unmapped.is_empty() && gone.is_empty() && empty.is_empty() && twice.is_empty(),
        "docs/architecture.md's map does not match the tree.\n\
         files with no row (add `| `PATH` | its concept |` under its crate): {unmapped:?}\n\
         rows naming no file (the file moved or went: change or remove the row): {gone:?}\n\
         rows with no concept: {empty:?}\n\
         rows given twice: {twice:?}"
    );
}

#[test]
fn every_relative_link_in_the_book_resolves() {
    let root = root();
    let pages = pages(&root);
    let texts: HashMap<String, String> = pages
        .iter()
        .map(|page| {
            (
                page.clone(),
                fs::read_to_string(root.join(page)).expect("page"),
            )
        })
        .collect();
    let anchors: HashMap<&String, BTreeSet<String>> = texts
        .iter()
        .map(|(page, text)| (page, anchors(text)))
        .collect();

    let mut broken = Vec::new();
    for page in &pages {
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for (number, line) in prose_lines(&texts[page]).into_iter().enumerate() {
            for target in link_targets(line) {
                let scheme = target.split_once(':').map(|(s, _)| s);
                if scheme.is_some_and(|s| s.chars().all(|c| c.is_ascii_alphabetic())) {
                    continue; // https:, mailto:
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    Some(page.clone())
                } else {
                    resolve(dir, path)
                };
                let at = format!("{page}:{}: ({target})", number + 1);
                let Some(file) = file.filter(|file| root.join(file).exists()) else {
                    broken.push(format!("{at}: no such file"));
                    continue;
                };
                if let Some(anchor) = anchor {
                    match anchors.get(&file) {
                        Some(known) if known.contains(anchor) => {}
                        Some(_) => broken.push(format!("{at}: {file} has no heading #{anchor}")),
                        None if file.ends_with(".md") => {
                            broken.push(format!("{at}: {file} is not a page of the book"))
                        }
                        None => {}
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn paths_the_book_cites_exist() {
    let root = root();
    let mut missing = Vec::new();
    for page in pages(&root) {
        let text = fs::read_to_string(root.join(&page)).expect("page");
        for (number, line) in text.lines().enumerate() {
            for span in code_spans(line) {
                let path = span.trim_end_matches(['.', ',', ':', ';', ')']);
                let cited = CITED_ROOTS.iter().any(|r| path.starts_with(r))
                    && !path.contains(char::is_whitespace)
                    // Patterns and placeholders (`guest/src/**`, `target/FEATURE/`) name no one file.
                    && !path.contains(['*', '{', '<']);
                if cited && !root.join(path).exists() {
                    missing.push(format!("{page}:{}: `{span}`", number + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths cited but not in the tree:\n{}",
        missing.join("\n")
    );
}

#[test]
fn tests_the_security_page_cites_exist() {
    let root = root();
    let page = fs::read_to_string(root.join("docs/security.md")).expect("docs/security.md");
    let mut functions = BTreeSet::new();
    for dir in ["guest", "host", "cli", "tests"] {
        let mut files = BTreeSet::new();
        files_under(&root, dir, &mut files);
        for file in files
            .iter()
            .filter(|f| f.ends_with(".rs") && !f.contains("/target/"))
        {
            let Ok(source) = fs::read_to_string(root.join(file)) else {
                continue;
            };
            for line in source.lines() {
                if let Some(rest) = line
                    .trim_start()
                    .strip_prefix("fn ")
                    .or_else(|| line.trim_start().strip_prefix("async fn "))
                {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    functions.insert(name);
                }
            }
        }
    }
    let mut missing = Vec::new();
    for (number, line) in page.lines().enumerate() {
        for span in code_spans(line) {
            // A test is cited as `name` or `module::name`, snake case with at least three
            // words joined (shorter spans are field and type names).
            let name = span.rsplit("::").next().unwrap_or(span);
            let test_like = name.matches('_').count() >= 3
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if test_like && !functions.contains(name) {
                missing.push(format!("docs/security.md:{}: `{span}`", number + 1));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "tests cited by docs/security.md that no longer exist under that name (find the test \
         that checks the defence now and cite it):\n{}",
        missing.join("\n")
    );
}

/// Whether `word` looks like a commit hash: 7 to 40 lower-case hex digits, letters and
/// digits both.
fn looks_like_a_commit(word: &str) -> bool {
    (7..=40).contains(&word.len())
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        && word.chars().any(|c| c.is_ascii_digit())
        && word.chars().any(|c| c.is_ascii_alphabetic())
}

#[test]
fn the_book_says_why_not_when() {
    let root = root();
    let mut found = Vec::new();
    for page in pages(&root) {
        let text = fs::read_to_string(root.join(&page)).expect("page");
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
            for pair in words.windows(2) {
                if matches!(pair[0], "issue" | "finding")
                    && !pair[1].is_empty()
                    && pair[1].chars().all(|c| c.is_ascii_digit())
                {
                    found.push(format!("{page}:{}: `{} {}`", number + 1, pair[0], pair[1]));
                }
            }
            for word in line.split(|c: char| !c.is_ascii_alphanumeric()) {
                if looks_like_a_commit(word) {
                    found.push(format!("{page}:{}: `{word}`", number + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the book points at a tracker or a commit the reader does not have (say what the \
         behaviour is and why; history is git's):\n{}",
        found.join("\n")
    );
}

#[test]
fn slugs_are_made_as_github_makes_them() {
    assert_eq!(
        slug("One MCP server for all of them: `mcpbox serve`"),
        "one-mcp-server-for-all-of-them-mcpbox-serve"
    );
    assert_eq!(slug("The guest's own limits"), "the-guests-own-limits");
    assert_eq!(slug("JavaScript (Node.js ≥ 20)"), "javascript-nodejs--20");
    assert!(looks_like_a_commit("3b2b002") && !looks_like_a_commit("1048576"));
    assert_eq!(
        anchors("# A\n## A\n```\n# not a heading\n```\n## A\n"),
        ["a", "a-1", "a-2"].into_iter().map(String::from).collect()
    );
}

//! Citations a reader can follow from inside the repository: no reference
//! to an issue number (issues live outside the tree and resolve nowhere
//! here), every repository path a comment or document names exists, none
//! points outside the repository, and every source cited by its short name
//! "(docs/SOURCES.md)" is listed there.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folders whose text is read by people: code, tests, docs, scripts,
/// data headers, CI.
const TREES: [&str; 8] = [
    "src",
    "tests",
    "docs",
    "scripts",
    "examples",
    "benches",
    "calibration",
    ".ci",
];
const TEXT: [&str; 8] = ["rs", "md", "sh", "csv", "txt", "toml", "py", "run"];

/// Every text file of [`TREES`] and the README, with its contents.
fn texts() -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = TREES.iter().map(|t| root().join(t)).collect();
    while let Some(p) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&p) else { continue };
        for e in rd.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !(TEXT.contains(&ext) || name == "run") {
                continue;
            }
            if let Ok(t) = std::fs::read_to_string(&path) {
                out.push((path, t));
            }
        }
    }
    let readme = root().join("README.md");
    out.push((readme.clone(), std::fs::read_to_string(&readme).unwrap()));
    assert!(out.len() > 100, "found only {} files under {:?}", out.len(), TREES);
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// Where `text` names an issue by number: the word, an optional plural and
/// '#', then a digit.
fn issue_numbers(text: &str) -> Vec<usize> {
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    let word = ["is", "sue"].concat();
    let mut hits = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find(&word) {
        let at = from + i;
        from = at + word.len();
        if at > 0 && b[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut j = from;
        if b.get(j) == Some(&b's') {
            j += 1;
        }
        let mut spaces = b[j..].iter().take_while(|c| **c == b' ').count();
        // A comment's line break between the word and its number: the
        // next line's indent and `//`, `///` or `//!` are space too.
        if b.get(j + spaces) == Some(&b'\n') {
            let leader = b[j + spaces + 1..]
                .iter()
                .take_while(|c| matches!(**c, b' ' | b'/' | b'!'))
                .count();
            spaces += 1 + leader;
        }
        j += spaces;
        if b.get(j) == Some(&b'#') {
            j += 1;
        }
        if (spaces > 0 || b.get(j - 1) == Some(&b'#')) && b.get(j).is_some_and(u8::is_ascii_digit) {
            hits.push(at);
        }
    }
    hits
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[test]
fn nothing_cites_an_issue_by_number() {
    // The finder itself first, so this test cannot pass by finding nothing.
    let n = ["is", "sue"].concat();
    for (s, want) in [
        (format!("see {n} 26"), 1),
        (format!("{n}s #3 and {n}#4"), 2),
        (format!("the {n} was filed in 2026"), 0),
        (format!("t{n} 5"), 0),
        (format!("counts them ({n}\n        // 26: 31 listed"), 1),
        (format!("an {n}\n\nfn f() {{ 3 }}"), 0),
    ] {
        assert_eq!(issue_numbers(&s).len(), want, "{s}");
    }
    // Another project's issue, listed in docs/SOURCES.md under its short
    // name ("flashbench issue #16"), is a source like any other.
    let listed: Vec<String> = short_names()
        .into_iter()
        .filter(|n| !issue_numbers(n).is_empty())
        .collect();
    assert!(!listed.is_empty());
    let mut found = Vec::new();
    for (path, text) in texts() {
        for at in issue_numbers(&text) {
            if listed
                .iter()
                .any(|n| text.match_indices(n.as_str()).any(|(p, _)| p <= at && at < p + n.len()))
            {
                continue;
            }
            let line = text[at..].lines().next().unwrap_or("");
            found.push(format!("{}:{}: {}", rel(&path), line_of(&text, at), line.trim()));
        }
    }
    assert!(
        found.is_empty(),
        "say what was seen instead of citing an issue number:\n{}",
        found.join("\n")
    );
}

/// Repository paths named in `text`: a top-level folder of the repository
/// followed by a path, with no wildcard or placeholder in it.
fn cited_paths(text: &str) -> Vec<(usize, String)> {
    const FOLDERS: [&str; 7] = [
        "calibration/",
        "docs/",
        "scripts/",
        "tests/",
        "examples/",
        "benches/",
        "src/",
    ];
    let mut out = Vec::new();
    for f in FOLDERS {
        let mut from = 0;
        while let Some(i) = text[from..].find(f) {
            let at = from + i;
            from = at + f.len();
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || "_/.-$".contains(c)) {
                continue;
            }
            let end = text[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
                .map_or(text.len(), |e| at + e);
            let path = text[at..end].trim_end_matches(['.', '-', '/']);
            // A folder alone, a glob or a placeholder ("NAME.N") is not a file.
            if path.len() <= f.len() || text[end..].starts_with(['*', '{', '<', '$']) {
                continue;
            }
            out.push((at, path.to_string()));
        }
    }
    out
}

#[test]
fn every_repository_path_cited_exists_and_none_is_outside() {
    assert_eq!(
        cited_paths("see `calibration/at91_mci.csv`, src/emulate/ and scripts/x-*.sh"),
        vec![
            (5, "calibration/at91_mci.csv".to_string()),
            (32, "src/emulate".to_string())
        ]
    );
    let mut missing = Vec::new();
    let outside = ["../", "shared/"].concat();
    // Another project's file, after that project's short name
    // ("embedded-sdmmc-rs src/sdcard/proto.rs"), is not this repository's.
    let names = short_names();
    for (path, text) in texts() {
        for (at, p) in cited_paths(&text) {
            let before = text[..at].trim_end();
            if names.iter().any(|n| before.ends_with(n.as_str())) {
                continue;
            }
            if !root().join(&p).exists() {
                missing.push(format!("{}:{}: {p}", rel(&path), line_of(&text, at)));
            }
        }
        for (at, _) in text.match_indices(&outside) {
            missing.push(format!(
                "{}:{}: a path outside the repository",
                rel(&path),
                line_of(&text, at)
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "cited paths a reader cannot find in the repository:\n{}",
        missing.join("\n")
    );
}

/// The bold short names of docs/SOURCES.md's table.
fn short_names() -> Vec<String> {
    let t = std::fs::read_to_string(root().join("docs/SOURCES.md")).unwrap();
    let mut names = Vec::new();
    for line in t.lines().filter(|l| l.starts_with("| **")) {
        let cell = line.split('|').nth(1).unwrap_or("");
        names.extend(cell.split("**").skip(1).step_by(2).map(str::to_string));
    }
    names
}

#[test]
fn every_source_cited_by_its_short_name_is_in_sources_md() {
    let names = short_names();
    assert!(names.iter().any(|n| n == "Bradford, Flashbenching"), "{names:?}");
    let mut unlisted = Vec::new();
    // This file's own patterns are not citations.
    for (path, text) in texts()
        .into_iter()
        .filter(|(p, _)| !p.ends_with("tests/integration/citations.rs"))
    {
        let csv_source = path.extension().is_some_and(|e| e == "csv");
        for (i, line) in text.lines().enumerate() {
            // "SHORT NAME (docs/SOURCES.md)" or "(SHORT NAME; docs/SOURCES.md)"
            // in code and docs; "# Source: SHORT NAME" heading a calibration
            // table.
            let heading = csv_source && i == 0;
            let at = line
                .find("(docs/SOURCES.md")
                .or_else(|| line.find("; docs/SOURCES.md)"));
            let known = match at {
                Some(at) => {
                    let before = line[..at].trim_end();
                    let opened = before.rsplit('(').next().unwrap_or("");
                    names
                        .iter()
                        .any(|n| before.ends_with(n.as_str()) || opened.starts_with(n.as_str()))
                }
                None if heading => {
                    let s = line.trim_start_matches("# Source:").trim_start();
                    names.iter().any(|n| s.starts_with(n.as_str()))
                }
                None => continue,
            };
            if !known {
                unlisted.push(format!("{}:{}: {}", rel(&path), i + 1, line.trim()));
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "sources cited by a name docs/SOURCES.md does not list (short names: {names:?}):\n{}",
        unlisted.join("\n")
    );
}

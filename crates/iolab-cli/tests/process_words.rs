//! The repository speaks to its users. Words of the project's own process —
//! work-step numbers, tracker numbers and section marks of a tracker, who
//! was at work on the machine ("other engineers measuring") — belong in no
//! document, comment, test name or message: a user cannot look them up.
//! Name the rule or the behaviour instead. Commit hashes are history, and
//! only the changelog and the measured results (`docs/results/`) carry
//! them.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Phrases that name the process, lower case. A `#` stands for a number
/// (digits, optionally after `#`).
const PHRASES: &[&str] = &[
    "stop #",
    "stops #",
    "issue #",
    "issues #",
    "§#",
    "§ #",
    "engineers measuring",
    "engineer measuring",
    "engineers compiling",
    "engineers compiled",
    "other engineer",
    "this session",
    "the issue's",
    "this issue",
    "done-means",
    "done means",
    "tracker number",
    "filed by",
];

/// Known occurrences still to be reworded: (file, how many). A count that
/// no longer matches fails too, so the list only shrinks.
const STILL_TO_REWORD: &[(&str, usize)] = &[];

/// Where `phrase` occurs in `line` (already lower case), starting at a word
/// boundary.
fn find(line: &str, phrase: &str) -> bool {
    let (head, number) = match phrase.strip_suffix('#') {
        Some(h) => (h, true),
        None => (phrase, false),
    };
    let mut from = 0;
    while let Some(i) = line[from..].find(head) {
        let at = from + i;
        from = at + head.len().max(1);
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !head.starts_with('§') {
            continue;
        }
        let rest = &line[at + head.len()..];
        if !number {
            // The phrase ends at a word boundary, or its plural does
            // ("other engineers").
            let rest = rest.strip_prefix('s').unwrap_or(rest);
            let after = rest.chars().next();
            if after.is_none_or(|c| !c.is_alphanumeric()) {
                return true;
            }
            continue;
        }
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        if rest.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return true;
        }
    }
    false
}

/// A word that looks like an abbreviated commit hash: 7 to 12 lower-case
/// hex digits with at least one digit and one letter, alone.
fn commit_hash(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    (7..=12).contains(&w.len())
        && w == word.trim_matches(|c: char| "()[],.;:".contains(c))
        && w.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        && w.chars().any(|c| c.is_ascii_digit())
        && w.chars().any(|c| c.is_ascii_alphabetic())
}

/// Commit hashes in a Markdown page's prose (not in code blocks or spans).
fn hashes_in_prose(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") {
            continue;
        }
        for (k, part) in line.split('`').enumerate() {
            if k % 2 == 0 {
                found.extend(
                    part.split_whitespace()
                        .filter(|w| commit_hash(w))
                        .map(str::to_string),
                );
            }
        }
    }
    found
}

/// Every text file of the repository, relative paths, except build output,
/// hidden folders and this file (which has to name the phrases).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') && name != ".ci" || name == "target" || name == "__pycache__" {
            continue;
        }
        if p.is_dir() && !p.is_symlink() {
            files(&p, out);
        } else if p.is_file() && !p.ends_with("crates/iolab-cli/tests/process_words.rs") {
            out.push(p);
        }
    }
}

/// What `path` says of the process: one line per hit.
fn hits(root: &Path, path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new(); // not text
    };
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let low = line.to_lowercase();
        for p in PHRASES.iter().filter(|p| find(&low, p)) {
            out.push(format!("{rel}:{}: {:?} in: {}", i + 1, p, line.trim()));
        }
    }
    let history = rel == "CHANGELOG.md" || rel.starts_with("docs/results/");
    if rel.ends_with(".md") && !history {
        for h in hashes_in_prose(&text) {
            out.push(format!(
                "{rel}: a commit hash ({h}): history goes in CHANGELOG.md"
            ));
        }
    }
    out
}

#[test]
fn no_words_of_the_process_anywhere() {
    let root = root().canonicalize().unwrap();
    let mut all = Vec::new();
    files(&root, &mut all);
    assert!(
        all.len() > 100,
        "found only {} files under {}",
        all.len(),
        root.display()
    );
    let mut problems = Vec::new();
    let mut tolerated: Vec<(String, usize)> = Vec::new();
    for p in &all {
        let h = hits(&root, p);
        let rel = p.strip_prefix(&root).unwrap().display().to_string();
        match STILL_TO_REWORD.iter().find(|(f, _)| *f == rel) {
            Some(&(_, n)) if n == h.len() => tolerated.push((rel, n)),
            Some(&(_, n)) => problems.push(format!(
                "{rel}: {} process words, STILL_TO_REWORD says {n}: update the list\n  {}",
                h.len(),
                h.join("\n  ")
            )),
            None => problems.extend(h),
        }
    }
    for (f, _) in STILL_TO_REWORD {
        if !tolerated.iter().any(|(t, _)| t == f) && !problems.iter().any(|p| p.starts_with(f)) {
            problems.push(format!(
                "{f}: in STILL_TO_REWORD but clean (or gone): remove it from the list"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "words of the process:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_phrases_are_found_where_they_are_and_only_there() {
    // The phrases are built here, so that this file carries none itself.
    let n = |head: &str, tail: &str| format!("{head}{}{tail}", 13);
    let yes = [
        (n("measured at stop ", " with"), "stop #"),
        (n("(stops ", "-24)"), "stops #"),
        (n("see issue ", " for"), "issue #"),
        (n("closes issue #", ""), "issue #"),
        (n("rule of \u{a7}", ""), "\u{a7}#"),
        (
            "while two other engineers compiled".to_string(),
            "other engineer",
        ),
        (
            "no other engineer measuring".to_string(),
            "engineer measuring",
        ),
        ("this session's host".to_string(), "this session"),
    ];
    for (line, p) in &yes {
        assert!(find(line, p), "{p:?} not found in {line:?}");
    }
    let no = [
        ("the run will stop after 5 s".to_string(), "stop #"),
        (n("nonstop ", " times"), "stop #"),
        ("a known issue with".to_string(), "issue #"),
        (
            "session.rs holds the session's options".to_string(),
            "this session",
        ),
        ("storage engineers use it".to_string(), "other engineer"),
    ];
    for (line, p) in &no {
        assert!(!find(line, p), "{p:?} found in {line:?}");
    }
    assert!(commit_hash("(5468ad8)"));
    assert!(commit_hash("e79f339,"));
    assert!(!commit_hash("0x1af4"));
    assert!(!commit_hash("decade"));
    assert!(!commit_hash("1234567"));
    assert_eq!(
        hashes_in_prose("before (5468ad8)\n```\n822a59b4\n```\nthe value `822a59b4`\n"),
        ["(5468ad8)"]
    );
}

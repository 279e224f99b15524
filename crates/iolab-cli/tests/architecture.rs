//! `docs/ARCHITECTURE.md` names only what exists: every path in backticks
//! is a file or folder of the repository, and every type-like name in
//! backticks is defined in the crates' sources.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The spans between backticks.
fn quoted(doc: &str) -> Vec<String> {
    doc.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, s)| s.to_string())
        .collect()
}

fn sources(dir: &Path, out: &mut String) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push_str(&std::fs::read_to_string(&p).unwrap());
        }
    }
}

#[test]
fn every_path_and_type_the_architecture_names_exists() {
    let root = root();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let mut src = String::new();
    sources(&root.join("crates"), &mut src);
    let (mut paths, mut types, mut missing) = (0, 0, Vec::new());
    for q in quoted(&doc) {
        if q.starts_with("crates/") || q.starts_with("scripts/") || q.starts_with("docs/") {
            paths += 1;
            if !root.join(&q).exists() {
                missing.push(format!("path {q}"));
            }
        } else if q.ends_with(".rs") && !q.contains('/') {
            // A file named alone stands in the folder the text is about:
            // it must exist somewhere under crates/.
            paths += 1;
            if !src.is_empty() && !file_exists(&root.join("crates"), &q) {
                missing.push(format!("file {q}"));
            }
        } else if q.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && q.chars().all(|c| c.is_ascii_alphanumeric() || c == ':')
        {
            // A type, or Type::Variant, or a constant: it must be defined.
            types += 1;
            let ty = q.split("::").next().unwrap();
            let defined = ["struct", "enum", "trait", "type", "const", "static"]
                .iter()
                .any(|k| src.contains(&format!("{k} {ty}")));
            if !defined {
                missing.push(format!("type {q}"));
            }
            if let Some(v) = q.split("::").nth(1) {
                if !src.contains(v) {
                    missing.push(format!("item {q}"));
                }
            }
        } else if q.chars().all(|c| c.is_ascii_lowercase() || c == '_') && q.contains('_') {
            // A function name (run_once, drain_in_flight).
            if !src.contains(&format!("fn {q}")) {
                missing.push(format!("function {q}"));
            }
        }
    }
    assert!(
        paths >= 20 && types >= 15,
        "{paths} paths, {types} types checked"
    );
    assert!(missing.is_empty(), "named but not found: {missing:?}");
}

fn file_exists(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            file_exists(&p, name)
        } else {
            p.file_name().is_some_and(|n| n == name)
        }
    })
}

/// The crates of the workspace's `Cargo.toml`, and each one's dependencies on
/// other crates of the workspace (normal dependencies, not dev ones).
fn workspace_crates(root: &Path) -> Vec<(String, Vec<String>)> {
    let ws = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = ws
        .split("members = [")
        .nth(1)
        .unwrap()
        .split(']')
        .next()
        .unwrap();
    let mut out = Vec::new();
    for m in members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
    {
        let toml = std::fs::read_to_string(root.join(m).join("Cargo.toml")).unwrap();
        let deps = toml
            .split("[dependencies]")
            .nth(1)
            .map(|d| d.split("\n[").next().unwrap())
            .unwrap_or("");
        let mut uses: Vec<String> = deps
            .lines()
            .filter_map(|l| l.split(['=', '.', ' ']).next())
            .filter(|n| *n == "iolab" || n.starts_with("iolab-"))
            .map(String::from)
            .collect();
        uses.sort();
        out.push((m.to_string(), uses));
    }
    out
}

#[test]
fn the_crate_table_matches_the_workspace() {
    let root = root();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let mut table: Vec<(String, Vec<String>)> = doc
        .lines()
        .filter(|l| l.starts_with("| `crates/"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`').to_string();
            let mut uses: Vec<String> = cells[3]
                .split(',')
                .map(|u| u.trim().to_string())
                .filter(|u| u.starts_with("iolab"))
                .collect();
            uses.sort();
            (name, uses)
        })
        .collect();
    table.sort();
    let mut crates = workspace_crates(&root);
    crates.sort();
    assert_eq!(
        table, crates,
        "docs/ARCHITECTURE.md's crate table (left) against the workspace (right)"
    );
}

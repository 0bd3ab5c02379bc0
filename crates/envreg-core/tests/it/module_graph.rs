//! No module of any crate in the workspace imports itself through others (issues 14
//! §4b and 22).
//!
//! Walks every crate under `crates/`: from each crate root (`src/lib.rs`, `src/main.rs`)
//! it follows the `mod name;` declarations that are not `#[cfg(test)]` into
//! `name.rs` / `name/mod.rs`, at any depth. In each module's source, outside the
//! `#[cfg(test)]` module and comments, every `crate::…`, `super::…` and `self::…`
//! path, and every `child::…` path to one of the module's own children, is an edge to
//! the deepest module it names. A name re-exported by a module (`pub use a::X;`,
//! `crate::X` at a crate root) counts as the module it comes from, so a facade adds no
//! edge. Crate roots are not nodes: they only declare and re-export. The graph must
//! have no circle but those `KNOWN_CIRCLES` names, and each of those must remain one.
//!
//! The test lives in envreg-core (whose layering it also checks) because one place
//! runs it once in `cargo test --workspace`. A text scan rather than a compiler query:
//! it needs no nightly tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// One crate's module tree: module path (`a::b`, root = empty) → its production text.
struct Tree {
    /// `envreg-core` for the library, `envreg-core(bin)` for `src/main.rs`.
    name: String,
    modules: BTreeMap<Vec<String>, String>,
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The non-test part of a module's source, line comments removed.
fn production_text(text: &str) -> String {
    let cut = regex::Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([\w:]+\))?\s+)?mod \w+\s*\{").unwrap();
    let end = cut.find(text).map_or(text.len(), |m| m.start());
    text[..end]
        .lines()
        .map(|line| match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `mod name;` declarations of a module that are not behind `#[cfg(test)]`.
fn children(text: &str) -> Vec<String> {
    let decl =
        regex::Regex::new(r"(#\[cfg\(test\)\]\s*)?(?:pub(?:\([\w:]+\))?\s+)?mod (\w+);").unwrap();
    decl.captures_iter(text)
        .filter(|cap| cap.get(1).is_none())
        .map(|cap| cap[2].to_owned())
        .collect()
}

fn tree(name: String, root: &Path) -> Tree {
    let mut modules = BTreeMap::new();
    // (module path, its file, the directory its children live in)
    let mut todo = vec![(
        Vec::new(),
        root.to_path_buf(),
        root.parent().unwrap().to_path_buf(),
    )];
    while let Some((path, file, dir)) = todo.pop() {
        let text = production_text(&std::fs::read_to_string(&file).unwrap());
        for child in children(&text) {
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let mut child_path = path.clone();
            child_path.push(child.clone());
            if flat.is_file() {
                todo.push((child_path, flat, dir.join(&child)));
            } else if nested.is_file() {
                todo.push((child_path, nested, dir.join(&child)));
            }
        }
        modules.insert(path, text);
    }
    Tree { name, modules }
}

fn trees() -> Vec<Tree> {
    let mut trees = Vec::new();
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let krate = dir.file_name().unwrap().to_string_lossy().into_owned();
        for (root, name) in [
            ("lib.rs", krate.clone()),
            ("main.rs", format!("{krate}(bin)")),
        ] {
            let file = dir.join("src").join(root);
            if file.is_file() {
                trees.push(tree(name, &file));
            }
        }
    }
    trees
}

/// Every path a `use`-tree or expression starting at `at` spells, as segments:
/// `a::{b::C, d}` gives `[a, b, C]` and `[a, d]`.
fn paths(text: &str, at: usize) -> Vec<Vec<String>> {
    fn parse(bytes: &[u8], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let mut path = prefix;
        loop {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'{' {
                i += 1;
                loop {
                    i = parse(bytes, i, path.clone(), out);
                    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    match bytes.get(i) {
                        Some(b',') => i += 1,
                        Some(b'}') => return i + 1,
                        _ => return i,
                    }
                    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    if bytes.get(i) == Some(&b'}') {
                        return i + 1;
                    }
                }
            }
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            if i == start {
                out.push(path);
                return i;
            }
            path.push(String::from_utf8_lossy(&bytes[start..i]).into_owned());
            if bytes[i..].starts_with(b"::") {
                i += 2;
            } else {
                out.push(path);
                return i;
            }
        }
    }
    let mut out = Vec::new();
    parse(text.as_bytes(), at, Vec::new(), &mut out);
    out
}

fn graph() -> Graph {
    let start = regex::Regex::new(r"(?:^|[^\w:])((?:crate|super|self|\w+)::)").unwrap();
    let reexport = regex::Regex::new(r"pub(?:\([\w:]+\))?\s+use\s+").unwrap();
    let mut graph = Graph::new();
    for tree in trees() {
        // Resolves a path spelled in `module` to the deepest module it names.
        let resolve = |module: &[String], segments: &[String]| -> Option<Vec<String>> {
            let mut base: Vec<String> = module.to_vec();
            let mut rest = segments;
            match rest.first().map(String::as_str) {
                Some("crate") => {
                    base.clear();
                    rest = &rest[1..];
                }
                Some("self") => rest = &rest[1..],
                Some("super") => {
                    while rest.first().map(String::as_str) == Some("super") {
                        base.pop()?;
                        rest = &rest[1..];
                    }
                }
                Some(child) => {
                    let mut path = base.clone();
                    path.push(child.to_owned());
                    if !tree.modules.contains_key(&path) {
                        return None;
                    }
                }
                None => return None,
            }
            descend(&tree, &mut base, &mut rest);
            // A name the module re-exports belongs to the module it comes from.
            if let Some(name) = rest.first() {
                let text = &tree.modules[&base];
                let source = reexport.find_iter(text).find_map(|m| {
                    paths(text, m.end())
                        .into_iter()
                        .find(|p| p.last() == Some(name))
                });
                if let Some(mut source) = source {
                    source.pop();
                    // A name from another crate stays with the module re-exporting it.
                    if let Some(origin) = resolve_plain(&tree, &base, &source) {
                        base = origin;
                    }
                }
            }
            Some(base)
        };
        for (module, text) in &tree.modules {
            if module.is_empty() {
                continue;
            }
            let mut edges = BTreeSet::new();
            for cap in start.captures_iter(text) {
                let at = cap.get(1).unwrap().start();
                for path in paths(text, at) {
                    if let Some(target) = resolve(module, &path)
                        && !target.is_empty()
                        && &target != module
                    {
                        edges.insert(format!("{}::{}", tree.name, target.join("::")));
                    }
                }
            }
            graph.insert(format!("{}::{}", tree.name, module.join("::")), edges);
        }
    }
    graph
}

/// Moves `base` down through the modules `rest` names, as far as they exist.
fn descend(tree: &Tree, base: &mut Vec<String>, rest: &mut &[String]) {
    while let Some(next) = rest.first() {
        let mut deeper = base.clone();
        deeper.push(next.clone());
        if !tree.modules.contains_key(&deeper) {
            break;
        }
        *base = deeper;
        *rest = &rest[1..];
    }
}

/// The module a re-export's source path (without its final name) names.
fn resolve_plain(tree: &Tree, module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = segments;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => {}
    }
    for next in rest {
        base.push(next.clone());
        if !tree.modules.contains_key(&base) {
            return None;
        }
    }
    Some(base)
}

/// A path from `from` back to itself, if there is one.
fn circle_through(graph: &Graph, from: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &Graph,
        at: &str,
        goal: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == goal {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, goal, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_owned()];
    walk(graph, from, from, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_module_imports_itself_through_others() {
    let graph = graph();
    // The scan must actually see edges, or "no circle" would prove nothing: a
    // `crate::` path, a `super::` path, a nested module and a binary's module.
    for (from, to) in [
        ("envreg-core::registry", "envreg-core::load"),
        ("envreg-core::validate", "envreg-core::snapshot"),
        (
            "agent-exec-backends::acp::session",
            "agent-exec-backends::acp::policy",
        ),
        ("agent-exec(bin)::run", "agent-exec(bin)::cli"),
    ] {
        assert!(
            graph.get(from).is_some_and(|edges| edges.contains(to)),
            "{from} → {to} not seen: {:#?}",
            graph.get(from)
        );
    }
    let circles: Vec<Vec<String>> = graph
        .keys()
        .filter_map(|m| circle_through(&graph, m))
        .collect();
    let new: Vec<String> = circles
        .iter()
        .filter(|c| !c.iter().all(|m| KNOWN_CIRCLES.contains(&m.as_str())))
        .map(|c| c.join(" → "))
        .collect();
    assert!(new.is_empty(), "module circles:\n{}", new.join("\n"));
    // The list only shrinks: a module no longer on a circle leaves it.
    let on_circle: BTreeSet<&str> = circles.iter().flatten().map(String::as_str).collect();
    let fixed: Vec<&&str> = KNOWN_CIRCLES
        .iter()
        .filter(|m| !on_circle.contains(**m))
        .collect();
    assert!(
        fixed.is_empty(),
        "no longer on a circle, take off KNOWN_CIRCLES: {fixed:?}"
    );
}

/// Modules on a circle this test found that is not untangled yet (issue 22); any other
/// circle fails. `command` ↔ `agent_program` share the execution-id variable and the
/// cancel check (the agent driver's rework owns both files); `dsh_bridge` and its
/// children share the bridge's state types.
const KNOWN_CIRCLES: &[&str] = &[
    "agent-exec-backends::agent_program",
    "agent-exec-backends::command",
    "facet::dsh_bridge",
    "facet::dsh_bridge::guard",
    "facet::dsh_bridge::tool",
];

/// The flow ARCHITECTURE.md states for envreg-core: files → load → typed records →
/// snapshot → validation, with the handle above them all.
#[test]
fn loading_flows_one_way_into_validation() {
    let graph = graph();
    let below = |module: &str, forbidden: &[&str]| {
        let edges = &graph[&format!("envreg-core::{module}")];
        for f in forbidden {
            assert!(
                !edges.contains(&format!("envreg-core::{f}")),
                "{module} must not import {f}: {edges:?}"
            );
        }
    };
    // The typed data knows no parser, no snapshot, no validation.
    below("model", &["load", "snapshot", "validate", "registry"]);
    below("config", &["load", "snapshot", "validate", "registry"]);
    // Per-record checks read one record.
    below(
        "record_checks",
        &["load", "snapshot", "validate", "registry"],
    );
    // The loader makes records; it does not validate snapshots.
    below("load", &["snapshot", "validate", "registry"]);
    // The snapshot holds records; validation reads it, never the reverse.
    below("snapshot", &["load", "validate", "registry"]);
    below("validate", &["load", "registry", "write", "session"]);
    // The handle sits above: nothing it uses extends it.
    below(
        "registry",
        &["read", "write", "session", "resolve", "operation", "tools"],
    );
}

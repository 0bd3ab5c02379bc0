//! The crate's modules import one another in one direction only (issue 14 §4b).
//!
//! Reads `src/*.rs`, takes every `crate::<module>` reference outside the `#[cfg(test)]`
//! module (a name re-exported at the crate root, `crate::Registry`, counts as its
//! module), and asserts the graph has no circle. On the code before this test, `load`,
//! `model`, `validate`, `snapshot` and `config` (with `registry`, `session`, `watch`,
//! `write`) formed one circle, and `error` ↔ `kind` another.
//!
//! A text scan rather than a compiler query: it needs no nightly tool, and every edge
//! the crate has is spelled `crate::…` (house style: no `super::` outside tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The non-test part of a module's source, line comments removed.
fn production_text(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|line| match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn graph() -> Graph {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
        {
            modules.insert(stem.to_owned());
        }
    }
    // `pub use module::{A, B};` at the crate root: `crate::A` is an edge to `module`.
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let reexport = regex::Regex::new(r"pub use (\w+)::\{?([^;]*?)\}?;").unwrap();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for cap in reexport.captures_iter(&lib) {
        for name in cap[2].split(|c: char| c == ',' || c.is_whitespace()) {
            if !name.is_empty() {
                owner.insert(name.to_owned(), cap[1].to_owned());
            }
        }
    }
    let path = regex::Regex::new(r"crate::(\w+)").unwrap();
    let group = regex::Regex::new(r"use crate::\{([^;]*)\};").unwrap();
    let head = regex::Regex::new(r"(?:^|[{,\s])(\w+)").unwrap();
    let target = |name: &str| {
        if modules.contains(name) {
            Some(name.to_owned())
        } else {
            owner.get(name).cloned()
        }
    };
    let mut graph = Graph::new();
    for module in &modules {
        let text = std::fs::read_to_string(src_dir().join(format!("{module}.rs"))).unwrap();
        let text = production_text(&text);
        let mut edges = BTreeSet::new();
        for cap in path.captures_iter(&text) {
            edges.extend(target(&cap[1]));
        }
        for cap in group.captures_iter(&text) {
            for item in cap[1].split(',') {
                if let Some(first) = head.captures(item.trim()) {
                    edges.extend(target(&first[1]));
                }
            }
        }
        edges.remove(module);
        graph.insert(module.clone(), edges);
    }
    graph
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
        for next in &graph[at] {
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
    // The scan must actually see edges, or "no circle" would prove nothing.
    assert!(graph["registry"].contains("load"), "{graph:#?}");
    assert!(graph["validate"].contains("snapshot"), "{graph:#?}");
    let circles: Vec<String> = graph
        .keys()
        .filter_map(|m| circle_through(&graph, m))
        .map(|c| c.join(" → "))
        .collect();
    assert!(
        circles.is_empty(),
        "module circles:\n{}",
        circles.join("\n")
    );
}

/// The flow ARCHITECTURE.md states: files → load → typed records → snapshot →
/// validation, with the handle above them all.
#[test]
fn loading_flows_one_way_into_validation() {
    let graph = graph();
    let below = |module: &str, forbidden: &[&str]| {
        for f in forbidden {
            assert!(
                !graph[module].contains(*f),
                "{module} must not import {f}: {:?}",
                graph[module]
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

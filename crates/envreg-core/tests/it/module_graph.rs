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
//! have no circle at all.
//!
//! One level up, between crates: every crate's `Cargo.toml` (parsed with `toml`) must
//! import exactly the workspace crates ARCHITECTURE.md's floors table names for it,
//! and no edge may run to a higher floor or from shipped code to test support. The
//! same walk also keeps agent-exec's errors typed (`agent_exec_errors_are_typed`).
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
    let circles: Vec<String> = graph
        .keys()
        .filter_map(|m| circle_through(&graph, m))
        .map(|c| c.join(" → "))
        .collect();
    assert!(
        circles.is_empty(),
        "module circles (move what both modules share into a module below both):\n{}",
        circles.join("\n")
    );
}

/// agent-exec's backends, journal and runtime return typed errors (thiserror enums
/// whose messages are the sentences a caller reads), never `Result<_, String>`
/// (issue 22): a `String` error cannot be matched on, and each caller re-words it.
/// The runtime's structured-output checks keep theirs for now: their bounded reason
/// *is* the product (fuzzed and property-tested as text).
#[test]
fn agent_exec_errors_are_typed() {
    const LEFT: &[&str] = &[
        "agent-exec-runtime::structured",
        "agent-exec-runtime::executor",
    ];
    let string_error = regex::Regex::new(r"(?s)Result<[^;{=]*?,\s*String\s*>").unwrap();
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for tree in trees() {
        if ![
            "agent-exec-backends",
            "agent-exec-runtime",
            "agent-exec-journal",
        ]
        .contains(&tree.name.as_str())
        {
            continue;
        }
        for (module, text) in &tree.modules {
            let name = format!("{}::{}", tree.name, module.join("::"));
            for hit in string_error.find_iter(text) {
                seen.insert(name.clone());
                if !LEFT.contains(&name.as_str()) {
                    let line = text[..hit.start()].lines().count();
                    found.push(format!("{name} line {line}: {}", hit.as_str()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "`Result<_, String>` where a typed error belongs (a thiserror enum keeping the \
         words):\n{}",
        found.join("\n")
    );
    // The list only shrinks: a module typed since leaves it.
    let typed: Vec<&&str> = LEFT.iter().filter(|m| !seen.contains(**m)).collect();
    assert!(typed.is_empty(), "typed now, take off LEFT: {typed:?}");
}

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

/// A floor of ARCHITECTURE.md's table, lowest first; the crates beside the floors last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Floor {
    Bottom,
    Middle,
    Top,
    /// `build-commit`: imported by build scripts only.
    Build,
    /// Test support: imported by tests only.
    Tests,
}

impl Floor {
    fn read(cell: &str) -> Floor {
        match cell {
            "bottom" => Floor::Bottom,
            "middle" => Floor::Middle,
            "top" => Floor::Top,
            "beside: build" => Floor::Build,
            "beside: tests" => Floor::Tests,
            other => panic!("ARCHITECTURE.md's floors table: unknown floor {other:?}"),
        }
    }

    fn shipped(self) -> bool {
        self <= Floor::Top
    }
}

/// One row of the floors table.
#[derive(Debug)]
struct Row {
    floor: Floor,
    imports: BTreeSet<String>,
    test_imports: BTreeSet<String>,
}

/// ARCHITECTURE.md's floors table: crate → its row.
fn floors_table() -> BTreeMap<String, Row> {
    let text = std::fs::read_to_string(crates_dir().join("../ARCHITECTURE.md")).unwrap();
    parse_floors(&text)
}

/// The table whose header starts `| floor | crate | imports | its tests also import |`;
/// a cell names crates in backticks, `—` for none.
fn parse_floors(text: &str) -> BTreeMap<String, Row> {
    let header = "| floor | crate | imports | its tests also import |";
    let start = text
        .find(header)
        .expect("ARCHITECTURE.md has the floors table");
    let names = regex::Regex::new(r"`([\w-]+)`").unwrap();
    let named = |cell: &str| -> BTreeSet<String> {
        names
            .captures_iter(cell)
            .map(|cap| cap[1].to_owned())
            .collect()
    };
    let mut table = BTreeMap::new();
    for line in text[start..]
        .lines()
        .skip(2)
        .take_while(|line| line.starts_with('|'))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, floor, krate, imports, test_imports, ..] = cells[..] else {
            panic!("ARCHITECTURE.md's floors table: a short row: {line}");
        };
        let krate = krate.trim_matches('`').to_owned();
        let row = Row {
            floor: Floor::read(floor),
            imports: named(imports),
            test_imports: named(test_imports),
        };
        assert!(
            table.insert(krate.clone(), row).is_none(),
            "ARCHITECTURE.md's floors table names {krate} twice"
        );
    }
    table
}

/// One crate's imports of workspace crates, as its Cargo.toml declares them.
#[derive(Debug, Default)]
struct Manifest {
    /// `[dependencies]` and `[target.*.dependencies]`.
    normal: BTreeSet<String>,
    /// `[build-dependencies]`, also per target.
    build: BTreeSet<String>,
    /// `[dev-dependencies]`, also per target.
    dev: BTreeSet<String>,
}

impl Manifest {
    /// The imports of the crates named `ours` that `manifest` (a parsed Cargo.toml)
    /// declares, per kind, target sections included.
    fn read(manifest: &toml::Table, ours: &BTreeSet<String>) -> Manifest {
        // A dependency's package: its key, or `package = "…"` when it is renamed.
        let imports = |section: Option<&toml::Value>| -> BTreeSet<String> {
            let Some(deps) = section.and_then(toml::Value::as_table) else {
                return BTreeSet::new();
            };
            deps.iter()
                .map(|(key, spec)| {
                    spec.get("package")
                        .and_then(toml::Value::as_str)
                        .unwrap_or(key)
                        .to_owned()
                })
                .filter(|name| ours.contains(name))
                .collect()
        };
        let targets = manifest
            .get("target")
            .and_then(toml::Value::as_table)
            .into_iter()
            .flat_map(|targets| targets.values())
            .filter_map(toml::Value::as_table);
        let mut read = Manifest::default();
        for section in std::iter::once(manifest).chain(targets) {
            read.normal.extend(imports(section.get("dependencies")));
            read.build
                .extend(imports(section.get("build-dependencies")));
            read.dev.extend(imports(section.get("dev-dependencies")));
        }
        read
    }
}

/// Every crate under `crates/`: package name → its manifest's imports of the others.
fn manifests() -> BTreeMap<String, Manifest> {
    let mut tables = BTreeMap::new();
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let file = entry.unwrap().path().join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&file) {
            let table: toml::Table =
                toml::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            let name = table["package"]["name"].as_str().unwrap().to_owned();
            tables.insert(name, table);
        }
    }
    let ours: BTreeSet<String> = tables.keys().cloned().collect();
    tables
        .iter()
        .map(|(name, table)| (name.clone(), Manifest::read(table, &ours)))
        .collect()
}

/// What is wrong between the floors table and the manifests, one line per finding.
fn floor_findings(
    table: &BTreeMap<String, Row>,
    manifests: &BTreeMap<String, Manifest>,
) -> Vec<String> {
    let mut findings = Vec::new();
    for krate in manifests.keys().filter(|k| !table.contains_key(*k)) {
        findings.push(format!("{krate}: no row in the floors table"));
    }
    for krate in table.keys().filter(|k| !manifests.contains_key(*k)) {
        findings.push(format!(
            "{krate}: a row in the floors table, but no such crate"
        ));
    }
    for (krate, manifest) in manifests {
        let Some(row) = table.get(krate) else {
            continue;
        };
        let imports: BTreeSet<String> = manifest.normal.union(&manifest.build).cloned().collect();
        // A crate the crate itself imports is no extra import of its tests.
        let test_imports: BTreeSet<String> = manifest.dev.difference(&imports).cloned().collect();
        for (column, named, declared) in [
            ("imports", &row.imports, &imports),
            ("its tests also import", &row.test_imports, &test_imports),
        ] {
            for edge in declared.difference(named) {
                findings.push(format!(
                    "{krate} → {edge}: in Cargo.toml, not in the table's \"{column}\""
                ));
            }
            for edge in named.difference(declared) {
                findings.push(format!(
                    "{krate} → {edge}: in the table's \"{column}\", not in Cargo.toml"
                ));
            }
        }
        let edges = imports
            .iter()
            .map(|edge| (edge, false))
            .chain(test_imports.iter().map(|edge| (edge, true)));
        for (edge, by_tests) in edges {
            let Some(to) = table.get(edge).map(|row| row.floor) else {
                continue;
            };
            let from = row.floor;
            let what = if by_tests {
                "its tests import"
            } else {
                "imports"
            };
            if from.shipped() && to.shipped() && to > from {
                findings.push(format!(
                    "{krate} ({from:?}) {what} {edge} ({to:?}): an import to a higher floor"
                ));
            }
            if from == Floor::Bottom && to == Floor::Bottom && edge != "containment" {
                findings.push(format!(
                    "{krate} {what} {edge}: a foundation imports no other but containment"
                ));
            }
            if from.shipped() && !by_tests && to == Floor::Tests {
                findings.push(format!(
                    "{krate} imports {edge}: a shipped crate imports no test-only crate \
                     (make it a dev-dependency)"
                ));
            }
            let build_only = manifest.build.contains(edge)
                && !manifest.normal.contains(edge)
                && !manifest.dev.contains(edge);
            if to == Floor::Build && !build_only {
                findings.push(format!(
                    "{krate} → {edge}: for build scripts only ([build-dependencies])"
                ));
            }
        }
    }
    findings
}

/// ARCHITECTURE.md's floors table names every edge between the workspace's crates and
/// no other, and the edges keep the floors (issue 22).
#[test]
fn the_floors_table_names_every_crate_edge_and_none_runs_up() {
    let table = floors_table();
    let manifests = manifests();
    // The reading must see what it checks: a normal, a build and a dev-dependency, and
    // the backends' import of the runtime.
    assert!(manifests["envreg-core"].normal.contains("containment"));
    assert!(
        manifests["agent-exec-backends"]
            .normal
            .contains("agent-exec-runtime")
    );
    assert!(manifests["envreg"].build.contains("build-commit"));
    assert!(
        manifests["agent-exec-runtime"]
            .dev
            .contains("agent-exec-conformance")
    );
    assert!(
        table["agent-exec-backends"]
            .imports
            .contains("agent-exec-runtime")
    );
    let findings = floor_findings(&table, &manifests);
    assert!(
        findings.is_empty(),
        "ARCHITECTURE.md's floors table and the crates' Cargo.toml disagree; fix the \
         import or the table:\n{}",
        findings.join("\n")
    );
}

/// Each rule of the floors check finds its breach (the real workspace keeps them all,
/// so only a made-up one shows the check can fail).
#[test]
fn each_floor_rule_finds_its_breach() {
    let ours: BTreeSet<String> = [
        "base",
        "containment",
        "other",
        "logic",
        "bin",
        "script",
        "support",
    ]
    .map(str::to_owned)
    .into();
    let table = parse_floors(
        "| floor | crate | imports | its tests also import | knows |
|---|---|---|---|---|
| bottom | `containment` | — | — | |
| bottom | `other` | — | — | |
| bottom | `base` | `containment` | — | |
| middle | `logic` | `base`, `other` | `support` | |
| top | `bin` | `logic`, `script` | — | |
| beside: build | `script` | — | — | |
| beside: tests | `support` | — | — | |
| middle | `gone` | — | — | |
",
    );
    let manifest = |text: &str| Manifest::read(&toml::from_str(text).unwrap(), &ours);
    let manifests: BTreeMap<String, Manifest> = [
        ("containment", manifest("")),
        ("other", manifest("")),
        // A target dependency counts; `base` names no `other` and reaches up to `logic`.
        (
            "base",
            manifest(
                "[dependencies]\ncontainment = {}\n[target.'cfg(unix)'.dependencies]\n\
                 other = {}\nup = { package = \"logic\" }",
            ),
        ),
        // The table's `other` import is none; `support` is a normal dependency.
        ("logic", manifest("[dependencies]\nbase = {}\nsupport = {}")),
        // `script` as a normal dependency; `support` for tests, not in the table.
        (
            "bin",
            manifest("[dependencies]\nlogic = {}\nscript = {}\n[dev-dependencies]\nsupport = {}"),
        ),
        ("script", manifest("")),
        ("support", manifest("")),
        ("unlisted", manifest("")),
    ]
    .into_iter()
    .map(|(name, manifest)| (name.to_owned(), manifest))
    .collect();
    let findings = floor_findings(&table, &manifests);
    for expected in [
        "unlisted: no row in the floors table",
        "gone: a row in the floors table, but no such crate",
        "base → other: in Cargo.toml, not in the table's \"imports\"",
        "base → logic: in Cargo.toml, not in the table's \"imports\"",
        "base (Bottom) imports logic (Middle): an import to a higher floor",
        "base imports other: a foundation imports no other but containment",
        "logic → other: in the table's \"imports\", not in Cargo.toml",
        "logic → support: in Cargo.toml, not in the table's \"imports\"",
        "logic → support: in the table's \"its tests also import\", not in Cargo.toml",
        "logic imports support: a shipped crate imports no test-only crate (make it a \
         dev-dependency)",
        "bin → support: in Cargo.toml, not in the table's \"its tests also import\"",
        "bin → script: for build scripts only ([build-dependencies])",
    ] {
        assert!(
            findings.iter().any(|finding| finding == expected),
            "not found: {expected}\nfound:\n{}",
            findings.join("\n")
        );
    }
    assert_eq!(findings.len(), 12, "{findings:#?}");
}

//! The port against the seed itself: the normative JavaScript (`fixtures/scope.mjs`,
//! the seed verbatim) is run under Node on a few hundred generated cases, and every
//! output of the Rust port must be byte-identical. This covers what snapshot tests
//! cannot: JavaScript's `trim` set, `displayPath`'s prefix rules, empty and odd inputs.

use std::io::Write;
use std::process::{Command, Stdio};

use facet_core::Mode;
use facet_core::seed::{
    ContextInput, display_path, facet_context_text, facet_rule_text, implicit_search_reason,
    is_widening_call, outside_reason, path_arguments_for, widen_reason,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

const CHARS: &[char] = &[
    'a', 'b', '/', '/', '.', ' ', '~', '-', 'é', '\t', '\n', '\u{a0}', '\u{feff}', '\u{85}',
    '\u{2028}', '\u{3000}', '\u{200b}',
];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(CHARS), 0..10).prop_map(String::from_iter)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..5).prop_map(|n| json!(n)),
        text().prop_map(Value::String),
        prop::sample::select(vec!["add", "status", "remove", "reset", "ADD", " add"])
            .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["file_path", "path", "focus", "action", "paths", "x"])
        .prop_map(str::to_string)
}

fn args() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => json_value(),
        3 => prop::collection::btree_map(key(), json_value(), 0..4)
            .prop_map(|map| Value::Object(map.into_iter().collect())),
    ]
}

fn tool() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "read",
        "write",
        "edit",
        "read_image",
        "grep",
        "glob",
        "str_replace_editor",
        "recall",
        "lsp",
        "bash",
        "facet",
        "Read",
        "",
    ])
    .prop_map(str::to_string)
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(vec![Mode::Ask, Mode::Deny, Mode::Off])
}

/// One case: the JSON the Node driver reads, and the Rust port's answer.
fn case() -> impl Strategy<Value = (Value, Value)> {
    prop_oneof![
        (text(), text()).prop_map(|(cwd, path)| {
            let ours = json!(display_path(&cwd, &path));
            (json!({"fn": "display", "cwd": cwd, "path": path}), ours)
        }),
        (
            text(),
            prop::option::of(text()),
            prop::collection::vec(text(), 0..3),
            mode(),
            any::<bool>()
        )
            .prop_map(|(cwd, root, extras, mode, can_ask)| {
                let ours = json!(facet_context_text(&ContextInput {
                    cwd: &cwd,
                    root: root.as_deref(),
                    extras: &extras,
                    mode,
                    can_ask,
                }));
                let mut input =
                    json!({"cwd": cwd, "extras": extras, "mode": mode.as_str(), "canAsk": can_ask});
                if let Some(root) = root {
                    input["root"] = json!(root);
                }
                (json!({"fn": "context", "input": input}), ours)
            }),
        (
            text(),
            text(),
            text(),
            prop::sample::select(vec![Mode::Ask, Mode::Deny])
        )
            .prop_map(|(cwd, path, root, mode)| {
                let ours = json!(outside_reason(&cwd, &path, &root, mode));
                let input = json!({"cwd": cwd, "path": path, "root": root, "mode": mode.as_str()});
                (json!({"fn": "outside", "input": input}), ours)
            }),
        (text(), text()).prop_map(|(cwd, root)| {
            let ours = json!(implicit_search_reason(&cwd, &root));
            (
                json!({"fn": "implicit", "input": {"cwd": cwd, "root": root}}),
                ours,
            )
        }),
        prop::collection::vec(text(), 0..4).prop_map(|paths| {
            let ours = json!(widen_reason(&paths));
            (json!({"fn": "widen", "paths": paths}), ours)
        }),
        (tool(), prop::collection::btree_map(key(), text(), 0..4)).prop_map(|(tool, strings)| {
            let args = Value::Object(strings.into_iter().map(|(k, v)| (k, json!(v))).collect());
            let ours = json!(path_arguments_for(&tool, &args));
            (json!({"fn": "pathArgs", "tool": tool, "args": args}), ours)
        }),
        (tool(), args()).prop_map(|(tool, args)| {
            let ours = json!(path_arguments_for(&tool, &args));
            (json!({"fn": "pathArgs", "tool": tool, "args": args}), ours)
        }),
        (tool(), args()).prop_map(|(tool, args)| {
            let ours = json!(is_widening_call(&tool, &args, &["facet".to_string()]));
            (json!({"fn": "widening", "tool": tool, "args": args}), ours)
        }),
    ]
}

fn run_seed(cases: &[Value]) -> Vec<Value> {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut child = Command::new("node")
        .arg("seed_oracle.mjs")
        .current_dir(fixtures)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the seed oracle needs Node (`node` on PATH); run scripts/test.sh, which installs the npm peers");
    let input = serde_json::to_vec(cases).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "node seed_oracle.mjs failed");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_port_matches_the_seed_byte_for_byte() {
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let mut cases = vec![json!({"fn": "rule"})];
    let mut expected = vec![json!(facet_rule_text())];
    for _ in 0..1000 {
        let (input, ours) = strategy.new_tree(&mut runner).unwrap().current();
        cases.push(input);
        expected.push(ours);
    }
    let seed = run_seed(&cases);
    assert_eq!(seed.len(), cases.len());
    let mut mismatches = 0;
    for ((input, ours), theirs) in cases.iter().zip(&expected).zip(&seed) {
        if ours != theirs {
            mismatches += 1;
            eprintln!("case {input}\n  rust {ours}\n  seed {theirs}");
        }
    }
    assert_eq!(mismatches, 0, "the port differs from the seed");
}

//! The CI twin of `fuzz/fuzz_targets/facet_tool_args.rs`: arbitrary JSON arguments for
//! every known tool (and unknown ones), in every mode and channel, never panic, and a
//! decision is always one of the three.

use std::fs;

use facet_core::{Decision, FacetAction, Mode, Policy, Session};
use proptest::prelude::*;
use serde_json::Value;

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(
            prop::sample::select(vec![
                "..", ".", "/", "~", "*", "**", "[", "{a,b}", "\0", "src", " ", "\u{feff}", "{",
                "}", ",", "{..,", ",/", "{~"
            ]),
            0..8
        )
        .prop_map(|parts| parts.concat()),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|n| serde_json::json!(n)),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        let key = prop_oneof![
            prop::sample::select(vec![
                "file_path",
                "path",
                "focus",
                "pattern",
                "glob",
                "notebook_path",
                "action",
                "paths",
            ])
            .prop_map(str::to_string),
            any::<String>(),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn judge_never_panics(
        tool_index in 0usize..40,
        other_tool in any::<String>(),
        args in json(),
        mode in prop::sample::select(vec![Mode::Ask, Mode::Deny, Mode::Off]),
        can_ask in any::<bool>(),
        focused in any::<bool>(),
    ) {
        let dir = std::env::temp_dir();
        let cwd = fs::canonicalize(&dir).unwrap();
        let policy = Policy::default();
        let mut names: Vec<String> = policy.tools().names().map(str::to_string).collect();
        names.extend(["facet".to_string(), "mcp__facet__facet".to_string()]);
        let tool = names.get(tool_index).cloned().unwrap_or(other_tool);
        let mut session = Session::new("p", cwd.clone(), true, mode);
        if focused {
            session.focus = Some(cwd.join("no-such-focus"));
        }
        let decision = policy.judge(&tool, &args, &cwd, &session, can_ask);
        if mode == Mode::Off {
            prop_assert_eq!(&decision, &Decision::NoOpinion);
        }
        if let Decision::Ask(reason) = &decision {
            prop_assert!(can_ask && !reason.is_empty());
        }
        let _ = FacetAction::parse(&args);
        let _ = facet_core::session::requested_paths(&args);
    }

    #[test]
    fn config_parse_never_panics(text in prop_oneof![
        any::<String>(),
        prop::collection::vec(prop::sample::select(vec![
            "default_mode = ", "\"ask\"", "[tools]\n", "\"mcp__x\" = ", "[\"path\"]", "\n",
            "project_markers = ", "[\"..\"]", "facet_tool_names", " = [", "]", "\"\"", "=",
            "grants = ", "[projects.\"/w\"]\n", "prune_after_days = ", "30",
        ]), 0..10).prop_map(|parts| parts.concat()),
    ]) {
        let _ = facet_core::Config::from_toml(&text, std::path::Path::new("p.toml"));
        let _ = facet_core::standing::ProjectFile::parse(&text);
    }
}

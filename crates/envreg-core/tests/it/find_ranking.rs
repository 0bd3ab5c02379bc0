//! `Registry::find` against an independent model of the contract's ranking (§2.3), on
//! random registries written to disk and loaded the normal way.
//!
//! The model is deliberately naive (lower-case everything, test the fields in the
//! contract's order) so that it shares no code with the indexed, pre-lowered search it
//! checks: exact id, id prefix, name, alias, category, then id substring; ties broken
//! by kind order (environments before services) and id; at most 25 hits.
#![allow(clippy::unwrap_used)]

use envreg_core::Registry;
use proptest::prelude::*;

/// One generated record. Ids, names and aliases are drawn from a tiny alphabet so that
/// queries hit many records at different ranks.
#[derive(Debug, Clone)]
struct Generated {
    environment: bool,
    id: String,
    name: String,
    aliases: Vec<String>,
    category: Option<String>,
}

fn word() -> impl Strategy<Value = String> {
    "[ab]([abc-]{0,4}[abc])?"
}

fn record() -> impl Strategy<Value = Generated> {
    (
        any::<bool>(),
        word(),
        "[A-Ca-c ]{1,8}",
        proptest::collection::vec("[a-c]{1,4}", 0..3),
        proptest::option::of("[a-c]{2,5}"),
    )
        .prop_map(|(environment, id, name, aliases, category)| Generated {
            environment,
            id,
            name: name.trim().to_owned().replace("  ", " "),
            aliases,
            category,
        })
}

fn yaml(r: &Generated) -> String {
    let name = if r.name.is_empty() { "x" } else { &r.name };
    let mut text = format!(
        "id: {}\nschemaVersion: 1\nname: \"{name}\"\naliases: [{}]\n",
        r.id,
        r.aliases.join(", ")
    );
    if let Some(category) = &r.category {
        text.push_str(&format!("category: {category}\n"));
    }
    if r.environment {
        text.push_str("tier: dev\nplatform: docker\n");
    }
    text
}

/// The contract's rank of a record for `query`, computed the slow, obvious way.
fn model_rank(r: &Generated, query: &str) -> Option<(u8, &'static str)> {
    let q = query.to_lowercase();
    let id = r.id.to_lowercase();
    let name = if r.name.is_empty() { "x" } else { &r.name }.to_lowercase();
    if id == q {
        Some((0, "id"))
    } else if id.starts_with(&q) {
        Some((1, "id"))
    } else if name.contains(&q) {
        Some((2, "name"))
    } else if r.aliases.iter().any(|a| a.to_lowercase().contains(&q)) {
        Some((3, "alias"))
    } else if r
        .category
        .as_ref()
        .is_some_and(|c| c.to_lowercase().contains(&q))
    {
        Some((4, "category"))
    } else if id.contains(&q) {
        Some((5, "id"))
    } else {
        None
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn find_ranks_as_the_contract_says(
        records in proptest::collection::vec(record(), 1..60),
        query in "[abcABC-]{2,3}",
    ) {
        // One record per (kind, id): a duplicate id would be a load error, not a hit.
        let mut seen = std::collections::BTreeSet::new();
        let records: Vec<Generated> = records
            .into_iter()
            .filter(|r| seen.insert((r.environment, r.id.clone())))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("envreg.yaml"), "{}\n").unwrap();
        for r in &records {
            let folder = if r.environment { "environments" } else { "services" };
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
            std::fs::write(dir.path().join(folder).join(format!("{}.yaml", r.id)), yaml(r)).unwrap();
        }
        let registry = Registry::open(dir.path()).unwrap();
        let found = registry.find(&query).unwrap();
        let got: Vec<(String, String, String)> = found
            .hits
            .iter()
            .map(|hit| {
                let value = serde_json::to_value(hit).unwrap();
                (
                    value["kind"].as_str().unwrap().to_owned(),
                    value["id"].as_str().unwrap().to_owned(),
                    value["field"].as_str().unwrap().to_owned(),
                )
            })
            .collect();

        let mut expected: Vec<(u8, u8, String, &'static str)> = records
            .iter()
            .filter_map(|r| {
                model_rank(r, query.trim()).map(|(rank, field)| {
                    (rank, u8::from(!r.environment), r.id.clone(), field)
                })
            })
            .collect();
        expected.sort();
        expected.truncate(25);
        let expected: Vec<(String, String, String)> = expected
            .into_iter()
            .map(|(_, kind, id, field)| {
                let kind = if kind == 0 { "environment" } else { "service" };
                (kind.to_owned(), id, field.to_owned())
            })
            .collect();
        prop_assert_eq!(got, expected);
    }
}

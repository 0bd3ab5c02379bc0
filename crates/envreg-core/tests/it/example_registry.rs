//! The shipped example registry loads and validates clean through the core.

use std::path::PathBuf;

use envreg_core::{RecordKind, Registry};

fn example_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/registry")
}

#[test]
fn example_registry_validates_clean() {
    let registry = Registry::open(example_root()).unwrap();
    let report = registry.validate();
    let errors: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == envreg_core::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(report.counts.environment >= 3);
    let list = registry.list(Some(RecordKind::Environment), None).unwrap();
    assert!(list.items.iter().all(|i| i.kind == RecordKind::Environment));
}

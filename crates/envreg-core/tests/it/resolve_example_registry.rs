//! `resolve` and `resolve_operation` through [`Registry`] on the shipped example
//! registry: the real loader, the real skill folder, the real default-environment chain.

use std::path::PathBuf;

use envreg_core::operation::Availability;
use envreg_core::skills::SkillSource;
use envreg_core::{ErrorCode, RecordKind, Registry};

fn example() -> Registry {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/registry");
    Registry::open(root).expect("the example registry opens")
}

#[test]
fn every_deployment_of_the_example_resolves() {
    let registry = example();
    let snapshot = registry.snapshot();
    let mut resolved = 0;
    for record in snapshot.records(RecordKind::Deployment) {
        let d = record.as_deployment().unwrap();
        let ctx = registry
            .resolve(None, Some(&d.environment_ref), &d.service_ref, Some(&d.id))
            .unwrap_or_else(|e| panic!("{}: {e}", d.id));
        assert_eq!(ctx.deployment.id, d.id);
        assert_eq!(ctx.environment.id, d.environment_ref);
        // Nothing unresolved leaks into the answer.
        let json = serde_json::to_string(&ctx).unwrap();
        let without_provenance = serde_json::to_string(&(
            &ctx.paths,
            &ctx.log_sources,
            &ctx.class_locations,
            &ctx.variables,
        ))
        .unwrap();
        assert!(
            !without_provenance.contains("{{"),
            "{}: {without_provenance}",
            d.id
        );
        assert!(json.contains("\"provenance\""));
        resolved += 1;
    }
    assert!(resolved >= 4, "the example has deployments");
}

#[test]
fn the_config_default_environment_is_used_when_none_is_given() {
    let registry = example();
    // envreg.yaml sets defaults.environmentId: staging.
    let ctx = registry.resolve(None, None, "storefront", None).unwrap();
    assert_eq!(ctx.environment.id, "staging");
}

#[test]
fn a_service_deployed_twice_in_one_environment_is_ambiguous() {
    let registry = example();
    let err = registry
        .resolve(None, Some("prod"), "checkout-api", None)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::DeploymentAmbiguous);
    let candidates = &err.details.unwrap()["candidates"];
    assert_eq!(
        candidates,
        &serde_json::json!(["checkout-api-prod-blue", "checkout-api-prod-green"])
    );
}

#[test]
fn operations_resolve_with_skills_from_the_registry_folder() {
    let registry = example();
    let got = registry
        .resolve_operation(
            None,
            "redeploy",
            Some("staging"),
            Some("checkout-api"),
            None,
        )
        .unwrap();
    assert_eq!(got.matched_binding_id, "redeploy-checkout-api-staging");
    assert_eq!(got.skill.available, Availability::Available);
    assert_eq!(got.skill.source, Some(SkillSource::Custom));
    assert!(got.parameters.values().all(|v| !v.contains("{{")));

    let got = registry
        .resolve_operation(None, "restart", None, None, Some("checkout-api-prod-blue"))
        .unwrap();
    assert_eq!(got.requested.environment_id, "prod");
    assert!(got.policy.requires_approval);

    let err = registry
        .resolve_operation(None, "deploy", Some("prod"), Some("storefront"), None)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PolicyDenied);

    let err = registry
        .resolve_operation(None, "make-coffee", Some("prod"), Some("storefront"), None)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::OperationUnknown);
}

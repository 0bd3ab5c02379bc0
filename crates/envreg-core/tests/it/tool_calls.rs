//! `envreg_core::tools::call_tool` end to end, the path both edges (MCP, CLI) take:
//! approval between plan and commit, and the session-scoped tools without a session.
#![allow(clippy::unwrap_used)] // test-support helpers outside #[test] fns

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use envreg_core::tools::{
    ApprovalDecision, ApprovalRequest, Approver, CallContext, ToolOutput, call_tool,
};
use envreg_core::{EnvError, ErrorCode, Registry};
use serde_json::{Value, json};

/// An approver with nobody behind it (no terminal, no elicitation): every question is
/// answered `Unavailable` and counted, so a test can tell whether anyone was asked.
#[derive(Default)]
struct NobodyToAsk {
    asked: AtomicUsize,
}

impl Approver for NobodyToAsk {
    fn request<'a>(
        &'a self,
        _req: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::ready(ApprovalDecision::Unavailable))
    }
}

/// Drive a future that never waits on I/O (the approver answers at once) to completion
/// without an async runtime: the core has none and needs none.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

fn call(
    registry: &Registry,
    approver: &NobodyToAsk,
    session: Option<envreg_core::SessionId>,
    tool: &str,
    args: Value,
) -> Result<ToolOutput, EnvError> {
    let ctx = CallContext { session, approver };
    block_on(call_tool(registry, tool, args, &ctx))
}

/// A registry with one production environment and a deployment in it.
fn production_registry(dir: &std::path::Path) -> Registry {
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "environments/prod.yaml",
        "id: prod\nschemaVersion: 1\nname: Production\ntier: production\nplatform: vm\n",
    );
    write(
        "services/shop.yaml",
        "id: shop\nschemaVersion: 1\nname: Shop\n",
    );
    write(
        "deployments/shop-prod.yaml",
        "id: shop-prod\nschemaVersion: 1\nname: shop on prod\nenvironmentRef: prod\nserviceRef: shop\n",
    );
    Registry::open(dir).unwrap()
}

/// Contract §3.1: `dryRun` validates and reports without writing, so it needs no
/// approval even for production; a real save of the same record still does.
#[test]
fn a_dry_run_of_a_production_save_asks_nobody_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let registry = production_registry(dir.path());
    let path = dir.path().join("deployments/shop-prod.yaml");
    let before = std::fs::read_to_string(&path).unwrap();
    let record = json!({ "id": "shop-prod", "schemaVersion": 1, "name": "renamed",
        "environmentRef": "prod", "serviceRef": "shop" });
    let approver = NobodyToAsk::default();

    let dry = call(
        &registry,
        &approver,
        None,
        "env_save",
        json!({ "kind": "deployment", "record": record.clone(), "dryRun": true }),
    )
    .unwrap();
    assert_eq!(dry.value["dryRun"], true);
    assert_eq!(dry.value["created"], false);
    assert_eq!(approver.asked.load(Ordering::Relaxed), 0, "nobody is asked");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert!(!dir.path().join(".backups").exists(), "no backup either");

    let real = call(
        &registry,
        &approver,
        None,
        "env_save",
        json!({ "kind": "deployment", "record": record }),
    )
    .unwrap_err();
    assert_eq!(real.code, ErrorCode::PolicyDenied);
    assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

/// `approvalChannel: host` says who approves (the MCP host); the approver is still asked,
/// so an edge without a host in front of it (the CLI) can refuse.
#[test]
fn the_host_channel_still_goes_through_the_approver() {
    let dir = tempfile::tempdir().unwrap();
    let registry = production_registry(dir.path());
    std::fs::write(
        dir.path().join("envreg.yaml"),
        "writePolicy: { approvalChannel: host }\n",
    )
    .unwrap();
    let approver = NobodyToAsk::default();
    let err = call(
        &registry,
        &approver,
        None,
        "env_delete",
        json!({ "kind": "deployment", "id": "shop-prod", "confirm": true }),
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::PolicyDenied);
    assert_eq!(approver.asked.load(Ordering::Relaxed), 1);
    assert!(dir.path().join("deployments/shop-prod.yaml").exists());
}

/// Contract §1.3: the session-scoped tools never guess a session.
#[test]
fn context_tools_without_a_session_are_session_context_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let registry = production_registry(dir.path());
    let approver = NobodyToAsk::default();
    for (tool, args) in [
        ("env_get_context", json!({})),
        ("env_set_context", json!({ "environmentId": "prod" })),
        ("env_set_context", json!({ "environmentId": null })),
    ] {
        let err = call(&registry, &approver, None, tool, args).unwrap_err();
        assert_eq!(err.code, ErrorCode::SessionContextUnavailable, "{tool}");
        assert!(err.message.contains(tool), "{}", err.message);
    }
    assert!(
        !dir.path().join("sessions").exists(),
        "nothing stored for a session that does not exist"
    );
    // With a session the same calls succeed: the code is about the missing session.
    let session = envreg_core::SessionId::new("agent-1").unwrap();
    let set = call(
        &registry,
        &approver,
        Some(session),
        "env_set_context",
        json!({ "environmentId": "prod" }),
    )
    .unwrap();
    assert_eq!(set.value["defaultEnvironmentId"], "prod");
}

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns
//! The resolver: names, aliases, verified capabilities.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_exec_contract::*;
use async_trait::async_trait;

/// A backend whose probe verifies only some of what it declares. Test-only; it never
/// executes anything (execution is not what the resolver decides on).
struct Probed {
    name: &'static str,
    declared: Vec<Capability>,
    verified: Vec<Capability>,
    probes: Arc<AtomicUsize>,
}

#[async_trait]
impl Backend for Probed {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: self.name.into(),
            capabilities: self.declared.clone(),
            adapter_version: String::new(),
        }
    }
    async fn verify(&self) -> Verification {
        self.probes.fetch_add(1, Ordering::SeqCst);
        Verification {
            verified: self.verified.clone(),
            adapter_version: "1".into(),
            problems: vec!["`pi` not found; install @mariozechner/pi-coding-agent".into()],
        }
    }
    async fn execute(&self, _: &ContractRequest, _: ExecutionContext) -> ContractResult {
        ContractResult::failed(Error::new(
            ErrorCode::Internal,
            "not executable in this test",
            SideEffects::None,
        ))
    }
}

fn registry(probes: Arc<AtomicUsize>) -> Registry {
    let mut registry = Registry::new();
    registry
        .register(Arc::new(Probed {
            name: AGENT_NATIVE,
            declared: vec![Capability::Text, Capability::Files, Capability::Cancel],
            // `stream` is not declared: a probe cannot grant it.
            verified: vec![Capability::Text, Capability::Stream],
            probes,
        }))
        .unwrap();
    registry
}

#[tokio::test]
async fn deprecated_alias_resolves_with_a_warning() {
    let registry = registry(Arc::default());
    let resolved = registry
        .resolve(PI_NATIVE_ALIAS, &[Capability::Text])
        .await
        .unwrap();
    assert_eq!(resolved.name, AGENT_NATIVE);
    let warning = resolved.deprecation_warning.unwrap();
    assert!(
        warning.contains("pi-native") && warning.contains("agent-native"),
        "{warning}"
    );
    let canonical = registry.resolve(AGENT_NATIVE, &[]).await.unwrap();
    assert_eq!(canonical.deprecation_warning, None);
}

#[tokio::test]
async fn unknown_name_is_an_error_naming_the_known_ones() {
    let err = registry(Arc::default())
        .resolve("stub", &[])
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ResolveError::UnknownBackend { .. }));
    assert!(err.to_string().contains("agent-native"), "{err}");
    assert_eq!(err.to_contract_error().side_effects, SideEffects::None);
}

#[tokio::test]
async fn declared_but_unverified_capability_is_missing() {
    let registry = registry(Arc::default());
    let err = registry
        .resolve(AGENT_NATIVE, &[Capability::Text, Capability::Files])
        .await
        .err()
        .unwrap();
    let ResolveError::MissingCapability { missing, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(missing, &vec![Capability::Files]);
    let contract = err.to_contract_error();
    assert_eq!(contract.code, ErrorCode::MissingCapability);
    assert!(contract.reason.contains("install"), "{}", contract.reason);
    // Verified but undeclared does not count either.
    assert!(
        registry
            .resolve(AGENT_NATIVE, &[Capability::Stream])
            .await
            .is_err()
    );
}

#[tokio::test]
async fn probe_runs_once() {
    let probes = Arc::new(AtomicUsize::new(0));
    let registry = registry(Arc::clone(&probes));
    for _ in 0..3 {
        registry
            .resolve(AGENT_NATIVE, &[Capability::Text])
            .await
            .unwrap();
    }
    assert_eq!(probes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn duplicate_registration_and_alias_shadowing_are_refused() {
    let mut registry = registry(Arc::default());
    let again = Arc::new(Probed {
        name: PI_NATIVE_ALIAS,
        declared: vec![],
        verified: vec![],
        probes: Arc::default(),
    });
    assert!(matches!(
        registry.register(again),
        Err(ResolveError::Duplicate(_))
    ));
}

#[tokio::test]
async fn cancellation_remembers_its_first_cause_and_children_follow() {
    let cancel = Cancellation::new();
    let child = cancel.child();
    assert_eq!(cancel.cause(), None);
    cancel.cancel(CancelCause::Deadline);
    cancel.cancel(CancelCause::Caller);
    assert_eq!(cancel.cause(), Some(CancelCause::Deadline));
    assert!(child.is_cancelled());
    assert_eq!(child.cause(), Some(CancelCause::Deadline));
}

#[tokio::test]
async fn event_sink_keeps_order_and_never_blocks() {
    use futures::StreamExt;
    let (sink, receiver) = EventSink::channel();
    for i in 0..10_000 {
        sink.emit(Event::text_delta(i.to_string()));
    }
    drop(sink);
    let texts: Vec<String> = receiver.map(|e| e.text).collect().await;
    assert_eq!(texts.len(), 10_000);
    assert!(texts.iter().enumerate().all(|(i, t)| *t == i.to_string()));
    EventSink::discard().emit(Event::text_delta("dropped"));
}

#[tokio::test]
async fn refusal_messages_users_read() {
    let registry = registry(Arc::default());
    let unknown = registry.resolve("stub", &[]).await.err().unwrap();
    let missing = registry
        .resolve(PI_NATIVE_ALIAS, &[Capability::Files, Capability::Resume])
        .await
        .err()
        .unwrap();
    let warning = registry
        .resolve(PI_NATIVE_ALIAS, &[])
        .await
        .unwrap()
        .deprecation_warning
        .unwrap();
    insta::assert_snapshot!(
        format!(
            "{unknown}\n{missing}\n{warning}\n{}",
            serde_json::to_string(&missing.to_contract_error()).unwrap()
        ),
        @r#"
        unknown backend `stub`; known backends: agent-native
        backend `agent-native` lacks verified capabilities: files, resume (`pi` not found; install @mariozechner/pi-coding-agent)
        backend name `pi-native` is deprecated; use `agent-native` instead
        {"code":"agent.missing_capability","reason":"backend `agent-native` lacks verified capabilities: files, resume (`pi` not found; install @mariozechner/pi-coding-agent)","side_effects":"none"}
        "#
    );
}

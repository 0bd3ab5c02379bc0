//! Where the time of one `tools/call env_resolve` goes inside the server, stage by
//! stage, on the 10,000-record synthetic registry, next to the same stages for `echo`.
//! The whole-process figures are `benches/roundtrip.rs`; this bench explains them.
//!
//! Stages (each measured alone, in the order a call runs them):
//! - `core_resolve`: `Registry::resolve` (freshness check + Service Context);
//! - `to_value`: the typed Service Context → `serde_json::Value` (rmcp's
//!   `structuredContent` is a `Value`);
//! - `check_arguments`, `render_line`: the tool layer's argument check and summary;
//! - `call_tool`: all of the tool layer (= the four above, plus dispatch);
//! - `shape`: `mcp_shape::success` (the JSON text block; moves the value in);
//! - `wire`: the JSON-RPC response serialized as the transports do (`serde_json::to_vec`);
//! - `drop`: freeing the result after it was written;
//! - `json_text_display` vs `json_text_compact`: the JSON text block written through
//!   `Display` (what `mcp_shape` did before) and through `mcp_shape::compact_json`.
//!
//! Runs with the servers' global allocator ([`envreg_mcp::ServerAllocator`]).
//!
//! Run: `CARGO_TARGET_DIR=/work/main/target cargo bench -p envreg-mcp --bench call_path`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::pin::Pin;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use envreg_core::synth::{self, SynthSpec};
use envreg_core::tools::{self, ApprovalDecision, ApprovalRequest, Approver, CallContext};
use envreg_core::{Registry, SessionId};
use rmcp::model::{
    CallToolResponse, CallToolResult, NumberOrString, ServerJsonRpcMessage, ServerResult,
};
use serde_json::{Value, json};

/// The allocator the server binaries install, so these stages cost what they cost there.
#[global_allocator]
static ALLOCATOR: envreg_mcp::ServerAllocator = envreg_mcp::ServerAllocator;

/// `env_resolve` never asks; a read tool must not reach an approver.
struct NeverAsked;

impl Approver for NeverAsked {
    fn request<'a>(
        &'a self,
        _req: &'a ApprovalRequest,
    ) -> Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>> {
        unreachable!("a read tool asked for approval")
    }
}

/// The response line a transport writes for `result`.
fn wire(result: CallToolResult) -> Vec<u8> {
    let message = ServerJsonRpcMessage::response(
        ServerResult::from(CallToolResponse::from(result)),
        NumberOrString::Number(7),
    );
    serde_json::to_vec(&message).unwrap()
}

fn stages(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let spec = SynthSpec::default();
    synth::generate(dir.path(), &spec).unwrap();
    let s = synth::sample(&spec);
    let registry = Registry::open(dir.path()).unwrap();
    let args = json!({
        "environmentId": s.environment,
        "serviceId": s.service,
        "deploymentId": s.deployment,
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let session = SessionId::new("bench").unwrap();
    let ctx = CallContext {
        session: Some(session.clone()),
        approver: &NeverAsked,
    };
    let call = || {
        runtime
            .block_on(tools::call_tool(
                &registry,
                "env_resolve",
                args.clone(),
                &ctx,
            ))
            .unwrap()
    };
    let resolve = || {
        registry
            .resolve(
                Some(&session),
                Some(&s.environment),
                &s.service,
                Some(&s.deployment),
            )
            .unwrap()
    };
    let output = call();
    let shaped = || mcp_shape::success(output.value.clone(), &output.render);
    let context = resolve();
    eprintln!(
        "env_resolve answer: {} bytes of JSON, {} bytes on the wire",
        mcp_shape::compact_json(&output.value).len(),
        wire(shaped()).len()
    );

    let mut g = c.benchmark_group("env_resolve");
    g.bench_function("core_resolve", |b| b.iter(|| black_box(resolve())));
    g.bench_function("to_value", |b| {
        b.iter(|| black_box(serde_json::to_value(&context).unwrap()))
    });
    g.bench_function("check_arguments", |b| {
        b.iter(|| black_box(tools::check_arguments("env_resolve", &args).is_ok()))
    });
    g.bench_function("render_line", |b| {
        b.iter(|| black_box(tools::render_line("env_resolve", &args, &output.value)))
    });
    g.bench_function("call_tool", |b| b.iter(|| black_box(call())));
    g.bench_function("shape", |b| {
        b.iter_batched(
            || output.value.clone(),
            |value| black_box(mcp_shape::success(value, &output.render)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("wire", |b| {
        b.iter_batched(shaped, |r| black_box(wire(r)), BatchSize::SmallInput)
    });
    g.bench_function("drop", |b| {
        b.iter_batched(shaped, drop, BatchSize::SmallInput)
    });
    g.bench_function("json_text_display", |b| {
        b.iter(|| black_box(output.value.to_string()))
    });
    g.bench_function("json_text_compact", |b| {
        b.iter(|| black_box(mcp_shape::compact_json(&output.value)))
    });
    g.finish();

    let echo_args = json!({"text": "hello"});
    c.bench_function("echo/shape_wire", |b| {
        b.iter(|| {
            let text = echo_args.get("text").and_then(Value::as_str).unwrap();
            black_box(wire(mcp_shape::success(json!({ "text": text }), "echo.")))
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = stages
}
criterion_main!(benches);

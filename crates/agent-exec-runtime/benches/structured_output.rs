//! What `--output-schema` adds to a run: the runtime's validation of a 100 KB answer.
//!
//! Not a criterion bench (criterion is not a dependency of this crate; medians of
//! interleaved rounds are what the figure needs). Each round runs the same execution
//! through `Runtime::run` twice, in alternating order — once without a schema (the
//! baseline) and once with one the answer matches — on an in-bench backend that returns
//! the same 100 KB JSON answer at once, so what differs is the schema's compile and the
//! parse + validation of the answer. Prints both medians, the difference and the ratio,
//! and — for scale, in the same run — the parts: compiling the schema alone,
//! `Schema::check_text` on the answer alone (parse + validation, schema compiled once),
//! and parsing the answer alone with `serde_json` (what any consumer of JSON pays).
//!
//! Run: `cargo bench -p agent-exec-runtime --bench structured_output` (`BENCH_N` rounds,
//! default 200), or `scripts/bench-agent-exec-structured.sh`, which also measures the
//! whole `agent-exec run` with the `openai` backend.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_exec_contract::*;
use agent_exec_runtime::{RunOptions, Runtime};
use async_trait::async_trait;

struct Answer(String);

#[async_trait]
impl Backend for Answer {
    fn descriptor(&self) -> BackendDescriptor {
        BackendDescriptor {
            name: "answer".into(),
            capabilities: vec![Capability::Text, Capability::StructuredOutput],
            adapter_version: String::new(),
        }
    }
    async fn verify(&self) -> Verification {
        Verification {
            verified: vec![Capability::Text, Capability::StructuredOutput],
            ..Default::default()
        }
    }
    async fn execute(&self, _: &ContractRequest, _: ExecutionContext) -> ContractResult {
        ContractResult::succeeded(self.0.clone())
    }
}

/// About 100 KB: 700 records of a realistic shape.
fn answer() -> String {
    let items: Vec<serde_json::Value> = (0..700)
        .map(|i| {
            let severity = ["low", "medium", "high"][i % 3];
            serde_json::json!({
                "id": i,
                "path": format!("src/module_{i}/file_{i}.rs"),
                "severity": severity,
                "line": i * 7,
                "message": "a finding the reviewing agent reported, in a sentence",
            })
        })
        .collect();
    serde_json::json!({"summary": "review done", "findings": items}).to_string()
}

fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["summary", "findings"],
        "properties": {
            "summary": {"type": "string"},
            "findings": {"type": "array", "items": {
                "type": "object",
                "required": ["id", "path", "severity", "line", "message"],
                "additionalProperties": false,
                "properties": {
                    "id": {"type": "integer", "minimum": 0},
                    "path": {"type": "string", "pattern": "^src/"},
                    "severity": {"enum": ["low", "medium", "high"]},
                    "line": {"type": "integer"},
                    "message": {"type": "string", "maxLength": 200}
                }
            }}
        }
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("BENCH_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let text = answer();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let resolved = runtime.block_on(async {
        let mut registry = Registry::new();
        registry.register(Arc::new(Answer(text.clone()))).unwrap();
        registry.resolve("answer", &[]).await.unwrap()
    });
    let request = |schema: Option<serde_json::Value>| ContractRequest {
        execution_id: "bench".into(),
        prompt: "review".into(),
        output_schema: schema,
        ..Default::default()
    };
    let run_once = |schema: Option<serde_json::Value>| {
        let started = Instant::now();
        let result =
            runtime.block_on(Runtime::new().run(request(schema), &resolved, RunOptions::default()));
        let took = started.elapsed();
        assert_eq!(result.outcome, Outcome::Succeeded, "{:?}", result.err);
        took
    };
    // Warm up both paths.
    for _ in 0..10 {
        run_once(None);
        run_once(Some(schema()));
    }
    let (mut plain, mut checked) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        if round % 2 == 0 {
            plain.push(run_once(None));
            checked.push(run_once(Some(schema())));
        } else {
            checked.push(run_once(Some(schema())));
            plain.push(run_once(None));
        }
    }
    let (mut compile, mut check, mut parse) = (Vec::new(), Vec::new(), Vec::new());
    let compiled = agent_exec_runtime::structured::check_schema(&schema()).unwrap();
    for _ in 0..rounds {
        let started = Instant::now();
        let fresh = agent_exec_runtime::structured::check_schema(&schema()).unwrap();
        compile.push(started.elapsed());
        drop(fresh);
        let started = Instant::now();
        let verdict = compiled.check_text(&text);
        check.push(started.elapsed());
        assert_eq!(verdict, Ok(()));
        let started = Instant::now();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        parse.push(started.elapsed());
        drop(value);
    }
    let (p, c) = (median(plain), median(checked));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("answer: {} bytes, {rounds} interleaved rounds", text.len());
    println!(
        "Runtime::run without output_schema      median {:>8.3} ms",
        ms(p)
    );
    println!(
        "Runtime::run with output_schema         median {:>8.3} ms",
        ms(c)
    );
    println!(
        "added by validation                     {:>8.3} ms  (ratio {:.2})",
        ms(c.saturating_sub(p)),
        c.as_secs_f64() / p.as_secs_f64()
    );
    println!(
        "  of which: compiling the schema        median {:>8.3} ms",
        ms(median(compile))
    );
    let (check, parse) = (median(check), median(parse));
    println!(
        "  Schema::check_text on the answer alone median {:>7.3} ms  ({:.0} MB/s)",
        ms(check),
        text.len() as f64 / check.as_secs_f64() / 1e6
    );
    println!(
        "  for scale: serde_json parse alone     median {:>8.3} ms  (check_text / parse = {:.2})",
        ms(parse),
        check.as_secs_f64() / parse.as_secs_f64()
    );
}

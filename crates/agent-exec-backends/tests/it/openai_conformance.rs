//! The conformance suite (the contract's seven invariants) on the `openai` backend, each
//! scenario a script of the loopback OpenAI-compatible server in `support`.
use crate::support;

use std::sync::Arc;

use agent_exec_backends::openai::{OpenAiBackend, OpenAiConfig};
use agent_exec_conformance::{Harness, Scenario};
use agent_exec_contract::Backend;
use support::ScriptedServer;

struct OpenAiHarness {
    server: ScriptedServer,
}

impl OpenAiHarness {
    fn new() -> Self {
        OpenAiHarness {
            server: ScriptedServer::start(),
        }
    }
}

impl Harness for OpenAiHarness {
    fn backend(&self, name: &str, scenario: Scenario) -> Arc<dyn Backend> {
        let model = match scenario {
            Scenario::Echo => "echo",
            Scenario::Silent => "silent",
            Scenario::Fail => "reject",
            Scenario::Crash => "cut",
            Scenario::Hang => "hang",
            // A chat API declares no `files`: the suite skips file scenarios for it.
            Scenario::WriteTarget | Scenario::WriteThenFail => "reject",
        };
        let mut config = OpenAiConfig::new(name, &self.server.base_url, model);
        config.retry_base_ms = 1;
        Arc::new(OpenAiBackend::new(config))
    }

    fn invocations(&self) -> Option<Vec<String>> {
        Some(self.server.invocations())
    }

    fn leftover_processes(&self, _execution_id: &str) -> Option<usize> {
        None
    }
}

agent_exec_conformance::conformance_tests!(OpenAiHarness::new());

//! The conformance suite (the contract's seven invariants, resume) on the
//! `agent-native` backend: the real `PiBackend` — its argv, its sessions, its parser,
//! its verify ladder, the one agent-CLI driver — with an `sh` stand-in for `pi` that
//! speaks `pi --mode json` as recorded from pi 0.73.1 (`tests/data/pi-*.jsonl`): the
//! `session` header, then `agent_end` judged by its last message's `stopReason`. The
//! processes, their trees, the session files and the files they write are real; only
//! pi's words are scripted. The live suite is `pi_live.rs`.

use std::sync::Arc;

use agent_exec_backends::pi::PiBackend;
use agent_exec_backends::session_store::SessionStore;

use crate::stand_in;
use stand_in::StandInHarness;

/// The stand-in: `--version` and the verify probes (no execution id in the
/// environment) answer as pi does, keeping each session as a `<stamp>_<id>.jsonl` file
/// in `--session-dir` and continuing the one `--session FILE` names; a run plays
/// `stand_in::SCENARIOS`.
const STAND_IN: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "0.73.1"; exit 0; }
dir=; file=; prev=
for arg in "$@"; do
  case "$prev" in --session-dir) dir=$arg ;; --session) file=$arg ;; esac
  prev=$arg
done
if [ -n "$file" ]; then
  id=$(basename "$file" .jsonl); id=${id##*_}
else
  id=$(cat /proc/sys/kernel/random/uuid)
  file="$dir/$(date -u +%Y-%m-%dT%H-%M-%S-000Z)_$id.jsonl"
fi
body=$(cat)
header='{"type":"session","version":3,"id":"'"$id"'","timestamp":"2026-12-01T02:58:56.721Z","cwd":"/"}'
[ -n "$dir" ] && printf '%s\n' "$header" >> "$file"
printf '%s\n' "$header"
end() {
  printf '%s\n' '{"type":"agent_end","messages":[{"role":"assistant","content":[{"type":"text","text":"'"$1"'"}],"usage":{"input":3,"output":2,"cacheRead":0,"cacheWrite":0},"stopReason":"'"$2"'","errorMessage":"'"$3"'"}]}'
}
if [ -z "$AGENT_EXEC_EXECUTION_ID" ]; then
  # A verify probe: pi's answer to the refused provider.
  end "" error "Connection error."; exit 0
fi
answer() { end "$1" stop ""; }
fail() { end "" error "401 Incorrect API key provided"; }
"#;

fn harness() -> StandInHarness {
    StandInHarness::sh("pi", STAND_IN, |config, dir| {
        Arc::new(PiBackend::new(config).with_session_store(SessionStore::at(dir.join("sessions"))))
    })
}

agent_exec_conformance::conformance_tests!(harness());

#[tokio::test]
async fn the_stand_in_passes_verify_with_every_declared_capability() {
    stand_in::passes_verify_with_every_declared_capability(&harness()).await;
}

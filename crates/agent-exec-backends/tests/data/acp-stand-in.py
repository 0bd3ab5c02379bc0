#!/usr/bin/env python3
"""A stand-in ACP v1 agent (stdlib only) for the conformance suite on the `acp` backend
(tests/acp_conformance.rs). It speaks what codex-acp 0.16 speaks on the wire
(tests/data/acp-codex-*.jsonl): newline-delimited JSON-RPC 2.0 on stdin/stdout,
`initialize` advertising `loadSession`, `session/new`, `session/load` (replaying the
session's history as updates before its answer), `session/prompt` answered with a stop
reason after `agent_message_chunk` updates, and `session/cancel`. Only its words are
scripted; its processes and the files it writes are real.

A prompt does what $SCENARIO says:
  echo             the prompt's text back, as two chunks, `end_turn`
  silent           `end_turn` with no text
  fail             a JSON-RPC error (the provider refused), nothing touched
  crash            SIGSEGV before any answer (the session was created already)
  hang             starts `sleep` children (one behind a shell), answers only a cancel
  write-target     writes the prompt into every file the prompt lists, then as echo
  write-then-fail  a tool call writes partial.txt, then a JSON-RPC error

Each prompt appends $AGENT_EXEC_EXECUTION_ID to the file $INVOCATIONS names. Sessions
are kept as JSON files in `sessions/` beside this program, so a later process can load
one; an unknown session id is refused, as an agent that lost it would."""
import json, os, signal, subprocess, sys, uuid

HOME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sessions")
SCENARIO = os.environ.get("SCENARIO", "echo")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(rid, result):
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def refuse(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def update(session, body):
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": session, "update": body}})


def text_chunk(kind, text):
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def session_path(session):
    # The id is ours (a UUID) or the client's claim of one: never a path.
    uuid.UUID(session)
    return os.path.join(HOME, session + ".json")


def load(session):
    with open(session_path(session)) as f:
        return json.load(f)


def save(session, history):
    os.makedirs(HOME, exist_ok=True)
    with open(session_path(session), "w") as f:
        json.dump(history, f)


def prompt_text(params):
    return "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")


def targets(text):
    """The files the prompt asks for: `- PATH` lines after agent-exec's header."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Write these files"):
            return [l[2:] for l in lines[i + 1:] if l.startswith("- ")]
    return []


def say(session, text, history):
    half = len(text) // 2
    for piece in (text[:half], text[half:]):
        if piece:
            update(session, text_chunk("agent_message_chunk", piece))
    history.append(["agent", text])


def prompt(rid, params, pending):
    session = params["sessionId"]
    text = prompt_text(params)
    with open(os.environ["INVOCATIONS"], "a") as f:
        f.write(os.environ.get("AGENT_EXEC_EXECUTION_ID", "") + "\n")
    history = load(session)
    history.append(["user", text])
    save(session, history)
    if SCENARIO == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if SCENARIO == "hang":
        subprocess.Popen(["sleep", "1000"])
        subprocess.Popen(["sh", "-c", "sleep 1000 & wait"])
        pending.append(rid)
        return
    if SCENARIO in ("fail", "write-then-fail"):
        if SCENARIO == "write-then-fail":
            update(session, {"sessionUpdate": "tool_call", "toolCallId": "call_1",
                             "title": "write partial.txt", "kind": "edit", "status": "in_progress"})
            with open("partial.txt", "w") as f:
                f.write("partial\n")
            update(session, {"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                             "status": "completed"})
        refuse(rid, -32603, "unexpected status 401 Unauthorized: refused")
        return
    if SCENARIO == "write-target":
        for target in targets(text):
            if os.path.dirname(target):
                os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f:
                f.write(text)
    if SCENARIO != "silent":
        say(session, text, history)
    save(session, history)
    answer(rid, {"stopReason": "end_turn"})


def main():
    pending = []
    for line in sys.stdin:
        message = json.loads(line)
        method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method == "initialize":
            answer(rid, {"protocolVersion": 1,
                         "agentCapabilities": {"loadSession": True},
                         "agentInfo": {"name": "acp-stand-in", "version": "1.0.0"},
                         "authMethods": []})
        elif method == "session/new":
            session = str(uuid.uuid4())
            save(session, [])
            answer(rid, {"sessionId": session})
        elif method == "session/load":
            session = params.get("sessionId", "")
            try:
                history = load(session)
            except (ValueError, OSError):
                refuse(rid, -32002, "Resource not found: session " + session)
                continue
            for role, text in history:
                kind = "user_message_chunk" if role == "user" else "agent_message_chunk"
                update(session, text_chunk(kind, text))
            answer(rid, {})
        elif method == "session/prompt":
            prompt(rid, params, pending)
        elif method == "session/cancel":
            while pending:
                answer(pending.pop(), {"stopReason": "cancelled"})
        elif rid is not None:
            refuse(rid, -32601, "Method not found: " + str(method))


main()

#!/usr/bin/env python3
"""The smallest ACP client: run one prompt (from stdin) against the agent given as argv,
in the current directory, approving every permission once; print the agent's text.
The "direct" side of the end-to-end overhead of `agent-exec run --backend acp`
(docs/agent-exec-acp.md): stdlib only, protocol v1, no checks beyond the stop reason.
Like agent-exec it ends the agent's process group with SIGTERM once the turn is over
(codex-acp does not exit when its stdin closes)."""
import json, os, signal, subprocess, sys

agent = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
next_id = 0

def send(obj):
    agent.stdin.write((json.dumps(obj) + "\n").encode()); agent.stdin.flush()

def request(method, params):
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
    return next_id

text = []
def wait_for(rid):
    for line in agent.stdout:
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            if "error" in msg: sys.exit(f"error: {msg['error']}")
            return msg["result"]
        if msg.get("method") == "session/update":
            u = msg["params"]["update"]
            if u.get("sessionUpdate") == "agent_message_chunk" and u["content"].get("type") == "text":
                text.append(u["content"]["text"])
        elif msg.get("method") == "session/request_permission":
            opt = next(o["optionId"] for o in msg["params"]["options"] if o["kind"] == "allow_once")
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": {"outcome": "selected", "optionId": opt}}})
        elif "method" in msg and "id" in msg:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not supported"}})
    sys.exit("the agent closed its stdout")

wait_for(request("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}))
session = wait_for(request("session/new", {"cwd": os.getcwd(), "mcpServers": []}))["sessionId"]
result = wait_for(request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": sys.stdin.read()}]}))
agent.stdin.close()
os.killpg(agent.pid, signal.SIGTERM)
agent.wait()
if result.get("stopReason") != "end_turn": sys.exit(f"stop reason {result}")
print("".join(text))

"""Bad input over the wire: each gets a clear error, the server keeps serving, nothing is
half written.

Usage: bad_input.py
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time

import httpx2
import mcp.types as types
from common import SERVER, Checker, HttpServer, connect, fresh_registry, run_tests

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def sse_json(text: str) -> list[dict]:
    """JSON-RPC messages from an SSE or JSON response body."""
    out = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:]))
    if not out and text.strip().startswith("{"):
        out.append(json.loads(text))
    return out


def leftovers(registry: str) -> list[str]:
    """Temp files or other non-record debris in the record folders."""
    bad = []
    for kind_dir in ["environments", "services", "deployments", "rule-profiles", "operation-bindings"]:
        for name in os.listdir(os.path.join(registry, kind_dir)):
            if not name.endswith(".yaml"):
                bad.append(f"{kind_dir}/{name}")
    return bad


async def test_malformed_jsonrpc_stdio():
    registry = fresh_registry()
    proc = subprocess.Popen([SERVER, "--registry", registry], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        lines = [
            json.dumps(INIT),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            "{not json at all",
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "oops"}),
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}),
            json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                        "params": {"name": "env_get", "arguments": {"kind": 5, "id": []}}}),
            json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "env_validate"}}),
        ]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        answers = {}
        parse_errors = []
        deadline = time.monotonic() + 15
        while not {2, 3, 4, 5} <= answers.keys() and time.monotonic() < deadline:
            message = json.loads(proc.stdout.readline())
            if message.get("id") is None and "error" in message:
                parse_errors.append(message)
            elif "id" in message:
                answers[message["id"]] = message
        # Not JSON: a parse error (-32700, id null), not silence.
        assert [m["error"]["code"] for m in parse_errors] == [-32700], parse_errors
        # JSON of the wrong shape: Invalid Request with the request's own id.
        assert answers[2]["error"]["code"] == -32600, answers[2]
        assert answers[3]["error"]["code"] == -32601, answers[3]
        bad_types = answers[4]["result"]
        assert bad_types["isError"] is True and bad_types["content"][0]["text"].startswith("INVALID_ARGUMENT: ")
        assert "result" in answers[5], answers[5]
        assert proc.poll() is None, "server died"
    finally:
        proc.kill()
        proc.wait()


async def test_malformed_jsonrpc_http():
    registry = fresh_registry()
    server = HttpServer(registry)
    try:
        async with httpx2.AsyncClient() as client:
            garbage = await client.post(server.url, content=b"{not json", headers=ACCEPT)
            assert 400 <= garbage.status_code < 500, garbage.status_code
            wrong = await client.post(server.url, json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, headers=ACCEPT)
            assert 400 <= wrong.status_code < 500, f"request without a session answered {wrong.status_code}"
            huge = await client.post(server.url, content=b"[" + b"1," * (3 * 1024 * 1024) + b"1]", headers=ACCEPT)
            assert huge.status_code == 413, huge.status_code
        assert server.alive()
        async with connect("http", registry, http=server) as session:
            assert not (await session.call_tool("env_validate", {})).is_error
    finally:
        server.stop()


async def test_oversized_argument_http_keeps_serving():
    registry = fresh_registry()
    server = HttpServer(registry)
    try:
        async with connect("http", registry, http=server) as session:
            record = {"id": "big", "schemaVersion": 1, "name": "Big", "description": "y" * (1536 * 1024)}
            value = Checker.error("env_save", await session.call_tool("env_save", {"kind": "service", "record": record}),
                                  "INVALID_ARGUMENT")
            assert "1 MiB" in value["message"]
            assert not (await session.call_tool("env_validate", {})).is_error
        assert not os.path.exists(os.path.join(registry, "services", "big.yaml"))
    finally:
        server.stop()


async def test_client_disconnects_mid_call():
    """A client asks for a delete that needs approval and vanishes while the prompt is open."""
    registry = fresh_registry()
    server = HttpServer(registry)
    prompt_open = asyncio.Event()

    async def hang(context, params):
        prompt_open.set()
        await asyncio.sleep(3600)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def doomed():
        async with connect("http", registry, http=server, elicitation=hang) as session:
            await session.call_tool("env_delete", {"kind": "operationBinding", "id": "rollback-storefront", "confirm": True})

    try:
        task = asyncio.create_task(doomed())
        await asyncio.wait_for(prompt_open.wait(), timeout=30)
        task.cancel()
        try:
            await task
        except BaseException:  # noqa: BLE001 - the cancellation we caused
            pass
        await asyncio.sleep(0.5)
        assert server.alive(), "server died when a client vanished"
        assert os.path.exists(os.path.join(registry, "operation-bindings", "rollback-storefront.yaml"))
        async with connect("http", registry, http=server) as session:
            assert not (await session.call_tool("env_validate", {})).is_error
            got = await session.call_tool("env_get", {"kind": "operationBinding", "id": "rollback-storefront"})
            assert not got.is_error
        assert leftovers(registry) == []
    finally:
        server.stop()


async def test_save_races_hand_edit():
    """env_save and a person's editor write the same file at once, many times."""
    registry = fresh_registry()
    path = os.path.join(registry, "services", "storefront.yaml")
    original = open(path).read()
    stop = threading.Event()
    hand_versions = []

    def editor():
        n = 0
        while not stop.is_set():
            n += 1
            name = f"Hand {n}"
            text = original.replace("name: ", f"name: {name}\nx-old-name: ", 1)
            tmp = os.path.join(registry, "services", f".storefront.yaml.edit{n}~")
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)  # editors that save atomically
            hand_versions.append(name)
            time.sleep(0.002)

    async with connect("stdio", registry) as session:
        record = (await session.call_tool("env_get", {"kind": "service", "id": "storefront"})).structured_content["record"]
        thread = threading.Thread(target=editor)
        thread.start()
        saved_names = []
        try:
            for i in range(60):
                name = f"Saved {i}"
                result = await session.call_tool("env_save", {"kind": "service", "record": dict(record, name=name)})
                assert not result.is_error, result.content[0].text
                saved_names.append(name)
        finally:
            stop.set()
            thread.join()
        final = await session.call_tool("env_get", {"kind": "service", "id": "storefront"})
        assert not final.is_error, final.content[0].text
        final_name = final.structured_content["record"]["name"]
        assert final_name in saved_names or final_name in hand_versions, final_name
        report = (await session.call_tool("env_validate", {})).structured_content
        assert report["ok"], report["diagnostics"]
    assert leftovers(registry) == [], leftovers(registry)


async def test_bearer_token_and_remote_refusal():
    registry = fresh_registry()
    server = HttpServer(registry, env={"ENVREG_HTTP_TOKEN": "s3cret-token"})
    try:
        async with httpx2.AsyncClient() as client:
            init = {**INIT}
            missing = await client.post(server.url, json=init, headers=ACCEPT)
            assert missing.status_code == 401, missing.status_code
            wrong = await client.post(server.url, json=init, headers={**ACCEPT, "Authorization": "Bearer nope"})
            assert wrong.status_code == 401, wrong.status_code
        async with connect("http", registry, http=server, headers={"Authorization": "Bearer s3cret-token"}) as session:
            assert not (await session.call_tool("env_validate", {})).is_error
    finally:
        server.stop()
    refused = subprocess.run([SERVER, "--registry", registry, "--http", "0.0.0.0:0"],
                             capture_output=True, text=True, timeout=30, env={**os.environ, "ENVREG_HTTP_TOKEN": ""})
    assert refused.returncode != 0 and "--allow-remote" in refused.stderr, refused.stderr
    no_token = subprocess.run([SERVER, "--registry", registry, "--http", "0.0.0.0:0", "--allow-remote"],
                              capture_output=True, text=True, timeout=30, env={**os.environ, "ENVREG_HTTP_TOKEN": ""})
    assert no_token.returncode != 0 and "bearer token" in no_token.stderr, no_token.stderr


TESTS = [(name, fn) for name, fn in globals().items() if name.startswith("test_")]

if __name__ == "__main__":
    sys.exit(asyncio.run(run_tests(TESTS)))

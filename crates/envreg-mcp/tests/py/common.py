"""Shared helpers for the envreg MCP client tests (driven by crates/envreg-mcp/tests/*.rs).

The client is the official Python MCP SDK (PyPI `mcp` 2.x): nothing here speaks the
protocol by hand except the deliberately malformed requests in bad_input.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from typing import Any, AsyncIterator, Awaitable, Callable

import jsonschema
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SERVER = os.environ.get("ENVREG_MCP_BIN", "")
TEMPLATE = os.environ.get("ENVREG_REGISTRY_TEMPLATE", "")


def fresh_registry() -> str:
    """A private copy of the example registry (writes never touch the repo)."""
    root = tempfile.mkdtemp(prefix="envreg-mcp-test-")
    dest = os.path.join(root, "registry")
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns("sessions", ".backups"))
    return dest


class HttpServer:
    """`envreg-mcp --http 127.0.0.1:0`, its URL read from the one stderr line it prints."""

    def __init__(self, registry: str, extra: list[str] | None = None, env: dict[str, str] | None = None):
        args = [SERVER, "--registry", registry, "--http", "127.0.0.1:0", *(extra or [])]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r}")
        self.url = match.group(1)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    registry: str,
    *,
    elicitation: Callable[..., Awaitable[Any]] | None = None,
    session_id: str | None = None,
    http: HttpServer | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session to a server on `registry`."""
    if transport == "stdio":
        args = ["--registry", registry]
        if session_id:
            args += ["--session", session_id]
        env = {k: v for k, v in os.environ.items() if k != "ENVREG_SESSION_ID"}
        params = StdioServerParameters(command=SERVER, args=args, env=env)
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, elicitation_callback=elicitation) as session:
                    await session.initialize()
                    yield session
    else:
        own = http is None
        server = http or HttpServer(registry)
        try:
            client = create_mcp_http_client(headers=headers)
            async with client:
                async with streamable_http_client(server.url, http_client=client) as (read, write):
                    async with ClientSession(read, write, elicitation_callback=elicitation) as session:
                        await session.initialize()
                        yield session
        finally:
            if own:
                server.stop()


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


def audience(block: Any) -> list[str] | None:
    if block.annotations is None or block.annotations.audience is None:
        return None
    return [str(getattr(a, "value", a)) for a in block.annotations.audience]


class Checker:
    """Validates results against the tools' declared schemas and the result shape."""

    def __init__(self, tools: list[Any]):
        self.output_schemas = {t.name: t.output_schema for t in tools}

    def ok(self, name: str, result: Any) -> dict:
        assert not result.is_error, f"{name} failed: {texts(result)}"
        value = result.structured_content
        schema = self.output_schemas[name]
        jsonschema.Draft202012Validator(schema).validate(value)
        assert len(result.content) == 2, result.content
        assert audience(result.content[0]) == ["user"], result.content[0]
        assert audience(result.content[1]) == ["assistant"], result.content[1]
        assert json.loads(result.content[1].text) == value, "JSON text differs from structuredContent"
        return value

    @staticmethod
    def error(name: str, result: Any, code: str) -> dict:
        assert result.is_error, f"{name}: expected {code}, got success {result.structured_content}"
        first = texts(result)[0]
        assert first.startswith(code + ": "), f"{name}: expected {code}, got {first!r}"
        # {code, message, details} is the JSON text block; structuredContent stays empty
        # on errors (clients check it against the success outputSchema).
        assert result.structured_content is None, f"{name}: structuredContent on an error"
        value = json.loads(result.content[1].text)
        assert value["code"] == code and isinstance(value["message"], str), value
        assert audience(result.content[1]) == ["assistant"], result.content[1]
        return value


async def run_tests(tests: list[tuple[str, Callable[[], Awaitable[None]]]]) -> int:
    """Run each test, print one line per test and the closing 'N passed, N failed' line."""
    only = os.environ.get("ENVREG_PY_ONLY")
    passed = failed = 0
    for name, test in tests:
        if only and only not in name:
            continue
        try:
            await asyncio.wait_for(test(), timeout=120)
            passed += 1
            print(f"ok   {name}", flush=True)
        except BaseException as error:  # noqa: BLE001 - report every failure, keep going
            failed += 1
            print(f"FAIL {name}: {error!r}", flush=True)
            traceback.print_exc(file=sys.stdout)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0

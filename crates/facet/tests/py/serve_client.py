"""The official Python MCP SDK client (PyPI `mcp` 2.x) against `facet serve` over stdio.

Driven by crates/facet/tests/serve.rs, which passes the binary in FACET_BIN, a state
folder in FACET_STATE_DIR holding a recorded session `known`, and a scratch folder in
FACET_SCRATCH (with a symbolic link `link` -> `real`). Prints one PASS/FAIL line per
check and a closing `N passed, N failed` line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback

import jsonschema
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

BIN = os.environ["FACET_BIN"]
SCRATCH = os.environ["FACET_SCRATCH"]
results: list[tuple[str, bool]] = []


def check(name: str, condition: bool, detail: object = "") -> None:
    results.append((name, condition))
    print(("PASS " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


async def with_server(args: list[str], body) -> None:
    params = StdioServerParameters(command=BIN, args=["serve", *args], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await body(session)


def text_blocks(result) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", "") == "text"]


async def unscoped(session: ClientSession) -> None:
    tools = (await session.list_tools()).tools
    check("one tool named facet", [tool.name for tool in tools] == ["facet"], [t.name for t in tools])
    tool = tools[0]
    action = tool.input_schema.get("properties", {}).get("action", {})
    check("input schema requires action", "action" in tool.input_schema.get("required", []), tool.input_schema)
    check("output schema is declared", bool(tool.output_schema), tool.output_schema)
    del action

    status = await session.call_tool("facet", {"action": "status"})
    structured = status.structured_content or {}
    check("status succeeds", status.is_error is False, status)
    jsonschema.validate(structured, tool.output_schema)
    check("status structuredContent matches outputSchema", True)
    check("status says the hook records", structured.get("recordedBy") == "hook", structured)
    check("status without a session has no binding", structured.get("binding") is None, structured)
    check("status note says the server cannot know the session", "cannot know" in structured.get("note", ""), structured)

    link = os.path.join(SCRATCH, "link", "x.rs")
    add = await session.call_tool("facet", {"action": "add", "paths": [link, "../shared"]})
    structured = add.structured_content or {}
    jsonschema.validate(structured, tool.output_schema)
    paths = structured.get("paths", [])
    check("add succeeds", add.is_error is False, add)
    check(
        "absolute path resolved to its canonical target",
        paths and paths[0].get("canonical") == os.path.join(os.path.realpath(SCRATCH), "real", "x.rs"),
        paths,
    )
    check("relative path left for the hook", len(paths) == 2 and paths[1].get("canonical") is None, paths)
    check("add note says the hook records it", "facet hook records" in structured.get("note", ""), structured)
    texts = text_blocks(add)
    check("render line names the grant", texts and texts[0].startswith("facet: grant "), texts)

    missing = await session.call_tool("facet", {"action": "add"})
    structured = error_object(missing)
    check("add without paths is an expected error", missing.is_error is True, missing)
    check("error code INVALID_ARGUMENT", structured.get("code") == "INVALID_ARGUMENT", structured)
    check("error names the field", "`paths`" in structured.get("message", ""), structured)

    unknown = await session.call_tool("facet", {"action": "grow", "paths": ["a"], "extra": True})
    issues = [issue["path"] for issue in error_object(unknown).get("details", {}).get("issues", [])]
    check("every bad field is named", unknown.is_error is True and issues == ["extra", "action"], error_object(unknown))


def error_object(result) -> dict:
    """{code, message, details} of an expected failure: its JSON text block. An error
    carries no structuredContent (clients check that against the success schema)."""
    check("an error has no structuredContent", result.structured_content is None, result.structured_content)
    blocks = text_blocks(result)
    try:
        return json.loads(blocks[1]) if len(blocks) > 1 else {}
    except ValueError:
        return {}


async def with_session(session: ClientSession) -> None:
    tools = (await session.list_tools()).tools
    status = await session.call_tool("facet", {"action": "status"})
    structured = status.structured_content or {}
    jsonschema.validate(structured, tools[0].output_schema)
    binding = structured.get("binding") or {}
    check("status with --session reads the binding", binding.get("session") == "known", structured)
    check("binding shows the mode", binding.get("mode") == "ask", binding)


async def main() -> None:
    for name, args, body in [
        ("unscoped", [], unscoped),
        ("session", ["--session", "known"], with_session),
    ]:
        try:
            await with_server(args, body)
        except Exception:  # noqa: BLE001 - report, then count as a failure
            traceback.print_exc()
            check(f"{name}: no exception", False)
    passed = sum(1 for _, ok in results if ok)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(0 if failed == 0 else 1)


asyncio.run(main())

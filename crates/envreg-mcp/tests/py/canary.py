"""Issue 14 §1 over MCP: no tool result carries anything of a file outside the registry.

A copy of the example registry gets symbolic links to outside files holding a canary
string (a record, a text file, a skill, a session folder); every tool is called, and no
result (content blocks or structuredContent, successes and errors) may contain it.

Usage: canary.py stdio|http   (ENVREG_MCP_BIN and ENVREG_REGISTRY_TEMPLATE set by the Rust test)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from common import connect, fresh_registry, run_tests, texts

TRANSPORT = sys.argv[1] if len(sys.argv) > 1 else "stdio"
CANARY = "canary-7f3a9c-outside"


def registry_with_links() -> str:
    registry = fresh_registry()
    outside = os.path.join(os.path.dirname(registry), "outside")
    os.makedirs(os.path.join(outside, "sessions"))
    secret = os.path.join(outside, "secret.yaml")
    with open(secret, "w") as f:
        f.write(f"id: evil\nschemaVersion: 1\nname: {CANARY}\naliases: [{CANARY}]\n"
                f"variables: {{ token: {CANARY} }}\n")
    os.symlink(secret, os.path.join(registry, "services", "evil.yaml"))
    notes = os.path.join(outside, "notes.txt")
    with open(notes, "w") as f:
        f.write(f"{CANARY}: [a line of some text file\n")
    os.symlink(notes, os.path.join(registry, "environments", "leak.yaml"))
    skill = os.path.join(outside, "skill.md")
    with open(skill, "w") as f:
        f.write(f"---\nname: helm-deploy-evil\ndescription: {CANARY}\n---\n")
    os.symlink(skill, os.path.join(registry, "skills", "helm-deploy-evil.md"))
    with open(os.path.join(outside, "sessions", "s1.json"), "w") as f:
        json.dump({"sessionId": "s1", "defaultEnvironmentId": CANARY}, f)
    os.symlink(os.path.join(outside, "sessions"), os.path.join(registry, "sessions"))
    return registry


CALLS = [
    ("env_list", {}),
    ("env_list", {"kind": "service"}),
    ("env_list", {"query": "canary"}),
    ("env_get", {"kind": "service", "id": "evil"}),
    ("env_get", {"kind": "environment", "id": "leak"}),
    ("env_find", {"query": "canary"}),
    ("env_find", {"query": "evil"}),
    ("env_resolve", {"environmentId": "prod", "serviceId": "checkout-api"}),
    ("env_resolve", {"environmentId": "prod", "serviceId": "evil"}),
    ("env_resolve_operation", {"operation": "redeploy", "environmentId": "staging", "serviceId": "checkout-api"}),
    ("env_get_context", {}),
    ("env_set_context", {"environmentId": "dev"}),
    ("env_save", {"kind": "service", "record": {"id": "evil", "schemaVersion": 1, "name": "Mine"}, "dryRun": False}),
    ("env_delete", {"kind": "service", "id": "evil", "confirm": False}),
    ("env_validate", {}),
]


def whole(result) -> str:
    return "\n".join(texts(result)) + json.dumps(result.structured_content)


async def test_no_tool_result_carries_outside_content():
    registry = registry_with_links()
    session = "s1" if TRANSPORT == "stdio" else None
    async with connect(TRANSPORT, registry, session_id=session) as s:
        for name, args in CALLS:
            shown = whole(await s.call_tool(name, args))
            assert CANARY not in shown.lower(), f"{name} {args} returned outside content: {shown}"
        report = (await s.call_tool("env_validate", {})).structured_content
        files = {d.get("file") for d in report["diagnostics"] if "symbolic link" in d["message"]}
        assert {"services/evil.yaml", "environments/leak.yaml"} <= files, report["diagnostics"]
        saved = await s.call_tool("env_save", {"kind": "service", "record": {"id": "evil", "schemaVersion": 1, "name": "Mine"}})
        assert saved.is_error and texts(saved)[0].startswith("STORAGE_UNWRITABLE: "), texts(saved)
    outside = os.path.join(os.path.dirname(registry), "outside")
    assert sorted(os.listdir(os.path.join(outside, "sessions"))) == ["s1.json"], "a session was written outside"
    with open(os.path.join(outside, "secret.yaml")) as f:
        assert f.read().startswith("id: evil\n"), "the outside record was written"


TESTS = [(name, fn) for name, fn in globals().items() if name.startswith("test_")]

if __name__ == "__main__":
    sys.exit(asyncio.run(run_tests([(f"{TRANSPORT}:{n}", f) for n, f in TESTS])))

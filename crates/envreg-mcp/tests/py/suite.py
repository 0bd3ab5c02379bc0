"""The Python MCP SDK client against envreg-mcp: every tool, every error path, approval.

Usage: suite.py stdio|http   (ENVREG_MCP_BIN and ENVREG_REGISTRY_TEMPLATE set by the Rust test)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import uuid

import mcp.types as types
from common import Checker, connect, fresh_registry, run_tests, texts

TRANSPORT = sys.argv[1] if len(sys.argv) > 1 else "stdio"

READ_ONLY = {
    "env_list", "env_get", "env_find", "env_resolve", "env_resolve_operation",
    "env_get_context", "env_validate",
}
ALL = [
    "env_list", "env_get", "env_find", "env_resolve", "env_resolve_operation",
    "env_get_context", "env_set_context", "env_save", "env_delete", "env_validate",
]


async def accept(context, params):
    return types.ElicitResult(action="accept", content={"approve": True})


async def decline(context, params):
    return types.ElicitResult(action="decline")


async def cancel(context, params):
    return types.ElicitResult(action="cancel")


async def checker(session) -> Checker:
    return Checker((await session.list_tools()).tools)


async def test_list_tools():
    async with connect(TRANSPORT, fresh_registry()) as s:
        tools = (await s.list_tools()).tools
        assert [t.name for t in tools] == ALL, [t.name for t in tools]
        for t in tools:
            assert t.description.startswith("Use "), t.name
            assert t.input_schema["type"] == "object" and t.input_schema["additionalProperties"] is False, t.name
            assert t.output_schema and t.output_schema["type"] == "object", t.name
            assert t.annotations.read_only_hint is (t.name in READ_ONLY), t.name
            assert t.annotations.destructive_hint is (t.name == "env_delete"), t.name
        by = {t.name: t for t in tools}
        assert by["env_get"].input_schema["required"] == ["kind", "id"]
        assert set(by["env_list"].input_schema["properties"]["kind"]["enum"]) == {
            "environment", "service", "deployment", "ruleProfile", "operationBinding"}
        assert by["env_set_context"].input_schema["properties"]["environmentId"]["oneOf"] == [
            {"type": "string"}, {"type": "null"}]
        assert by["env_delete"].input_schema["required"] == ["kind", "id", "confirm"]


async def test_every_read_tool():
    async with connect(TRANSPORT, fresh_registry()) as s:
        c = await checker(s)
        listed = c.ok("env_list", await s.call_tool("env_list", {}))
        kinds = [i["kind"] for i in listed["items"]]
        assert kinds == sorted(kinds, key=["environment", "service", "deployment", "ruleProfile", "operationBinding"].index)
        assert re.match(r"^\d+ environments?, ", texts(await s.call_tool("env_list", {}))[0])
        services = c.ok("env_list", await s.call_tool("env_list", {"kind": "service"}))
        assert {i["kind"] for i in services["items"]} == {"service"} and len(services["items"]) == 4
        got = c.ok("env_get", await s.call_tool("env_get", {"kind": "environment", "id": "prod"}))
        assert got["record"]["id"] == "prod" and "tier: production" in got["yaml"]
        assert texts(await s.call_tool("env_get", {"kind": "environment", "id": "prod"}))[0].startswith(
            "environment prod (Production (EU))")
        found = c.ok("env_find", await s.call_tool("env_find", {"query": "checkout"}))
        assert found["hits"] and found["hits"][0]["id"].startswith("checkout"), found
        assert re.match(r'^\d+ match(es)? for "checkout"\.$', texts(await s.call_tool("env_find", {"query": "checkout"}))[0])
        resolved = c.ok("env_resolve", await s.call_tool(
            "env_resolve", {"environmentId": "staging", "serviceId": "checkout-api"}))
        assert resolved["environment"]["id"] == "staging" and resolved["service"]["id"] == "checkout-api"
        line = texts(await s.call_tool("env_resolve", {"environmentId": "staging", "serviceId": "checkout-api"}))[0]
        assert re.match(r"^Resolved checkout-api in staging \(\S+\): \d+ paths?, \d+ variables?, \d+ warnings?\.$", line), line
        op = c.ok("env_resolve_operation", await s.call_tool(
            "env_resolve_operation", {"operation": "restart", "environmentId": "prod", "deploymentId": "checkout-api-prod-blue"}))
        assert op["matchedBindingId"] == "restart-checkout-api-prod-blue" and op["matchLevel"] == "deployment", op
        ctx = c.ok("env_get_context", await s.call_tool("env_get_context", {}))
        assert ctx["defaultEnvironmentId"] is None
        report = c.ok("env_validate", await s.call_tool("env_validate", {}))
        assert report["ok"] is True, report["diagnostics"]
        assert texts(await s.call_tool("env_validate", {}))[0].startswith("Registry valid: 0 errors")


async def test_session_context_drives_defaults():
    registry = fresh_registry()
    async with connect(TRANSPORT, registry) as s:
        c = await checker(s)
        set_ = await s.call_tool("env_set_context", {"environmentId": "dev"})
        value = c.ok("env_set_context", set_)
        assert value["defaultEnvironmentId"] == "dev" and value["persisted"] is True
        assert texts(set_)[0] == "Session default set to dev."
        assert c.ok("env_get_context", await s.call_tool("env_get_context", {}))["defaultEnvironmentId"] == "dev"
        resolved = c.ok("env_resolve", await s.call_tool("env_resolve", {"serviceId": "storefront"}))
        assert resolved["environment"]["id"] == "dev"
        session_file = os.path.join(registry, "sessions", value["sessionId"] + ".json")
        assert json.load(open(session_file))["defaultEnvironmentId"] == "dev"
        cleared = await s.call_tool("env_set_context", {"environmentId": None})
        assert c.ok("env_set_context", cleared)["defaultEnvironmentId"] is None
        assert texts(cleared)[0] == "Session default cleared."
        # Back to envreg.yaml's default (staging).
        resolved = c.ok("env_resolve", await s.call_tool("env_resolve", {"serviceId": "storefront"}))
        assert resolved["environment"]["id"] == "staging"
        Checker.error("env_set_context", await s.call_tool("env_set_context", {"environmentId": "nowhere"}), "ENV_NOT_FOUND")


async def test_sessions_are_separate():
    registry = fresh_registry()
    if TRANSPORT == "stdio":
        a_id, b_id = "sess-a-" + uuid.uuid4().hex[:8], "sess-b-" + uuid.uuid4().hex[:8]
    else:
        a_id = b_id = None
    async with connect(TRANSPORT, registry, session_id=a_id) as a, connect(TRANSPORT, registry, session_id=b_id) as b:
        await a.call_tool("env_set_context", {"environmentId": "dev"})
        await b.call_tool("env_set_context", {"environmentId": "prod"})
        ca = (await a.call_tool("env_get_context", {})).structured_content
        cb = (await b.call_tool("env_get_context", {})).structured_content
        assert ca["sessionId"] != cb["sessionId"]
        assert ca["defaultEnvironmentId"] == "dev" and cb["defaultEnvironmentId"] == "prod", (ca, cb)
    if TRANSPORT == "stdio":
        # A new connection with the same --session id finds its persisted default.
        async with connect(TRANSPORT, registry, session_id=a_id) as again:
            ctx = (await again.call_tool("env_get_context", {})).structured_content
            assert ctx["sessionId"] == a_id and ctx["defaultEnvironmentId"] == "dev", ctx


async def test_error_codes():
    async with connect(TRANSPORT, fresh_registry()) as s:
        e = Checker.error
        e("env_get", await s.call_tool("env_get", {"kind": "environment", "id": "nowhere"}), "ENV_NOT_FOUND")
        e("env_get", await s.call_tool("env_get", {"kind": "service", "id": "nothing"}), "SERVICE_NOT_FOUND")
        e("env_get", await s.call_tool("env_get", {"kind": "deployment", "id": "nothing"}), "DEPLOYMENT_NOT_FOUND")
        e("env_get", await s.call_tool("env_get", {"kind": "ruleProfile", "id": "nothing"}), "RULE_PROFILE_NOT_FOUND")
        e("env_get", await s.call_tool("env_get", {"kind": "operationBinding", "id": "nothing"}), "BINDING_NOT_FOUND")
        e("env_resolve", await s.call_tool("env_resolve", {"environmentId": "dev", "serviceId": "nothing"}), "SERVICE_NOT_FOUND")
        amb = e("env_resolve", await s.call_tool("env_resolve", {"environmentId": "prod", "serviceId": "checkout-api"}), "DEPLOYMENT_AMBIGUOUS")
        assert set(amb["details"]["candidates"]) >= {"checkout-api-prod-blue", "checkout-api-prod-green"}, amb
        e("env_resolve_operation", await s.call_tool(
            "env_resolve_operation", {"operation": "frobnicate", "environmentId": "dev", "serviceId": "storefront"}), "OPERATION_UNKNOWN")
        e("env_resolve_operation", await s.call_tool("env_resolve_operation", {"operation": "restart"}), "INVALID_ARGUMENT")
        e("env_find", await s.call_tool("env_find", {"query": "x"}), "INVALID_ARGUMENT")
        e("env_get", await s.call_tool("env_get", {"kind": "environment", "id": "../etc/passwd"}), "INVALID_ARGUMENT")
        e("env_save", await s.call_tool("env_save", {"kind": "service", "record": {"id": "half"}}), "RECORD_INVALID")
        in_use = await s.call_tool("env_delete", {"kind": "service", "id": "checkout-api", "confirm": False})
        assert Checker((await s.list_tools()).tools).ok("env_delete", in_use)["blockers"], "checkout-api has deployments"


async def test_schema_failures_are_invalid_argument():
    async with connect(TRANSPORT, fresh_registry()) as s:
        cases = [
            ("env_get", {"kind": "planet", "id": "x"}, "kind"),
            ("env_get", {"kind": "service", "id": 42}, "id"),
            ("env_get", {"kind": "service"}, "id"),
            ("env_list", {"kind": "service", "colour": "red"}, "colour"),
            ("env_delete", {"kind": "service", "id": "x", "confirm": "yes"}, "confirm"),
            ("env_set_context", {"environmentId": 7}, "environmentId"),
            ("env_save", {"kind": "service", "record": {}, "dryRun": 1}, "dryRun"),
            ("env_validate", {"anything": True}, "anything"),
        ]
        for name, args, field in cases:
            value = Checker.error(name, await s.call_tool(name, args), "INVALID_ARGUMENT")
            paths = [i["path"] for i in value["details"]["issues"]]
            assert field in paths, (name, args, value)
            assert f"`{field}`" in value["message"], value["message"]


async def test_unknown_tool_is_a_protocol_error():
    async with connect(TRANSPORT, fresh_registry()) as s:
        try:
            await s.call_tool("env_teleport", {})
        except Exception as error:  # MCPError from the SDK
            assert "unknown tool env_teleport" in str(error), error
        else:
            raise AssertionError("unknown tool answered")
        # Still serving.
        assert not (await s.call_tool("env_validate", {})).is_error


async def test_save_and_delete_without_approval_need():
    registry = fresh_registry()
    async with connect(TRANSPORT, registry) as s:
        c = await checker(s)
        got = c.ok("env_get", await s.call_tool("env_get", {"kind": "service", "id": "storefront"}))
        record = dict(got["record"], name="Storefront (renamed)")
        dry = c.ok("env_save", await s.call_tool("env_save", {"kind": "service", "record": record, "dryRun": True}))
        assert dry["dryRun"] is True and dry["created"] is False
        assert "Storefront (renamed)" not in open(os.path.join(registry, "services", "storefront.yaml")).read()
        saved = await s.call_tool("env_save", {"kind": "service", "record": record})
        assert c.ok("env_save", saved)["created"] is False
        assert texts(saved)[0].startswith("Saved service storefront (updated, ")
        again = c.ok("env_get", await s.call_tool("env_get", {"kind": "service", "id": "storefront"}))
        assert again["record"]["name"] == "Storefront (renamed)"
        new = {"id": "payments", "schemaVersion": 1, "name": "Payments"}
        created = c.ok("env_save", await s.call_tool("env_save", {"kind": "service", "record": new}))
        assert created["created"] is True
        check = c.ok("env_delete", await s.call_tool("env_delete", {"kind": "service", "id": "payments", "confirm": False}))
        assert check["deleted"] is False and check["blockers"] == []
        assert os.path.exists(os.path.join(registry, "services", "payments.yaml"))


async def test_elicitation_accepted():
    registry = fresh_registry()
    async with connect(TRANSPORT, registry, elicitation=accept) as s:
        c = await checker(s)
        prod = c.ok("env_get", await s.call_tool("env_get", {"kind": "environment", "id": "prod"}))["record"]
        saved = c.ok("env_save", await s.call_tool("env_save", {"kind": "environment", "record": dict(prod, name="Production (approved)")}))
        assert saved["created"] is False
        assert "Production (approved)" in open(os.path.join(registry, "environments", "prod.yaml")).read()
        deleted = await s.call_tool("env_delete", {"kind": "operationBinding", "id": "rollback-storefront", "confirm": True})
        assert c.ok("env_delete", deleted)["deleted"] is True
        assert texts(deleted)[0] == "Deleted operationBinding rollback-storefront (backup kept)."
        assert not os.path.exists(os.path.join(registry, "operation-bindings", "rollback-storefront.yaml"))
        backups = os.listdir(os.path.join(registry, ".backups", "operation-bindings"))
        assert any(b.startswith("rollback-storefront.") for b in backups), backups
        # Approved, but still referenced: RECORD_IN_USE, nothing removed.
        Checker.error("env_delete", await s.call_tool("env_delete", {"kind": "environment", "id": "dev", "confirm": True}), "RECORD_IN_USE")
        assert os.path.exists(os.path.join(registry, "environments", "dev.yaml"))


async def denied(callback, word):
    registry = fresh_registry()
    path = os.path.join(registry, "environments", "prod.yaml")
    before = open(path).read()
    async with connect(TRANSPORT, registry, elicitation=callback) as s:
        prod = (await s.call_tool("env_get", {"kind": "environment", "id": "prod"})).structured_content["record"]
        value = Checker.error("env_save", await s.call_tool(
            "env_save", {"kind": "environment", "record": dict(prod, name="Not approved")}), "POLICY_DENIED")
        assert word in value["message"], value["message"]
        value = Checker.error("env_delete", await s.call_tool(
            "env_delete", {"kind": "operationBinding", "id": "rollback-storefront", "confirm": True}), "POLICY_DENIED")
    assert open(path).read() == before, "a denied save changed the file"
    assert os.path.exists(os.path.join(registry, "operation-bindings", "rollback-storefront.yaml"))
    return value


async def test_elicitation_declined():
    await denied(decline, "rejected")


async def test_elicitation_cancelled():
    await denied(cancel, "cancelled")


async def test_elicitation_absent():
    value = await denied(None, "unavailable")
    assert "approvalChannel: host" in value["message"], value["message"]


async def test_host_approval_channel():
    registry = fresh_registry()
    config = os.path.join(registry, "envreg.yaml")
    text = open(config).read().replace("approvalChannel: elicitation", "approvalChannel: host")
    open(config, "w").write(text)
    async with connect(TRANSPORT, registry) as s:
        deleted = await s.call_tool("env_delete", {"kind": "operationBinding", "id": "rollback-storefront", "confirm": True})
        assert (await checker(s)).ok("env_delete", deleted)["deleted"] is True


async def test_hand_edits_seen_without_restart():
    registry = fresh_registry()
    async with connect(TRANSPORT, registry) as s:
        assert (await s.call_tool("env_get", {"kind": "service", "id": "storefront"})).structured_content["record"]["name"] != "Hand Edited"
        path = os.path.join(registry, "services", "storefront.yaml")
        text = re.sub(r"(?m)^name: .*$", "name: Hand Edited", open(path).read())
        open(path, "w").write(text)
        for _ in range(50):
            got = (await s.call_tool("env_get", {"kind": "service", "id": "storefront"})).structured_content
            if got["record"]["name"] == "Hand Edited":
                break
            await asyncio.sleep(0.05)
        assert got["record"]["name"] == "Hand Edited", got["record"]["name"]


async def test_oversized_argument():
    async with connect(TRANSPORT, fresh_registry()) as s:
        big = "x" * (1024 * 1024 + 10)
        value = Checker.error("env_find", await s.call_tool("env_find", {"query": big}), "INVALID_ARGUMENT")
        assert "1 MiB" in value["message"], value["message"]
        assert not (await s.call_tool("env_validate", {})).is_error


TESTS = [(name, fn) for name, fn in globals().items() if name.startswith("test_")]

if __name__ == "__main__":
    sys.exit(asyncio.run(run_tests([(f"{TRANSPORT}:{n}", f) for n, f in TESTS])))

"""50 streamable-HTTP sessions call env_set_context and env_resolve in parallel.

Each session keeps choosing a default environment and then resolves a service without
naming one: the answer must always be in *its own* default. Any error, or any answer in
another session's environment, fails the run.

Usage: concurrency.py SESSIONS SECONDS
"""

from __future__ import annotations

import asyncio
import random
import sys
import time

from common import HttpServer, connect, fresh_registry

SESSIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
ENVIRONMENTS = ["dev", "staging", "prod"]


async def worker(index: int, server: HttpServer, registry: str, deadline: float, stats: dict) -> None:
    rng = random.Random(index)
    async with connect("http", registry, http=server) as session:
        while time.monotonic() < deadline:
            env = rng.choice(ENVIRONMENTS)
            result = await session.call_tool("env_set_context", {"environmentId": env})
            if result.is_error or result.structured_content["defaultEnvironmentId"] != env:
                stats["errors"].append((index, "set", result.content[0].text))
                return
            for _ in range(3):
                resolved = await session.call_tool("env_resolve", {"serviceId": "storefront"})
                stats["calls"] += 1
                if resolved.is_error:
                    stats["errors"].append((index, "resolve", resolved.content[0].text))
                    return
                got = resolved.structured_content["environment"]["id"]
                if got != env:
                    stats["leaks"].append((index, env, got))
                    return
            stats["calls"] += 1


async def main() -> int:
    registry = fresh_registry()
    server = HttpServer(registry)
    stats = {"calls": 0, "errors": [], "leaks": []}
    try:
        started = time.monotonic()
        deadline = started + SECONDS
        results = await asyncio.gather(
            *(worker(i, server, registry, deadline, stats) for i in range(SESSIONS)),
            return_exceptions=True,
        )
        elapsed = time.monotonic() - started
        crashes = [r for r in results if isinstance(r, BaseException)]
        alive = server.alive()
    finally:
        server.stop()
    print(f"sessions={SESSIONS} seconds={elapsed:.1f} calls={stats['calls']} "
          f"rate={stats['calls'] / elapsed:.0f}/s errors={len(stats['errors'])} "
          f"leaks={len(stats['leaks'])} crashes={len(crashes)} server_alive={alive}")
    for item in stats["errors"][:5] + stats["leaks"][:5] + [repr(c) for c in crashes[:5]]:
        print("  ", item)
    ok = not stats["errors"] and not stats["leaks"] and not crashes and alive and stats["calls"] > SESSIONS
    print(f"{1 if ok else 0} passed, {0 if ok else 1} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

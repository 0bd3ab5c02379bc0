#!/usr/bin/env bash
# The fleet's dispatch cost and throughput, against the same work run locally with
# `agent-exec run`, measured in the same run (issue 13 §4).
#
#   scripts/bench-agent-exec-fleet.sh                 # 40 latency rounds, 200 jobs per throughput round
#   ROUNDS=100 JOBS=400 scripts/bench-agent-exec-fleet.sh
#   BIN=target/debug/agent-exec scripts/bench-agent-exec-fleet.sh
#
# The backend is trivial (`sh -c 'date +%s%N > started/<id>'`), so what is measured is
# agent-exec and the queue, not the program.
#
# 1. Latency, idle workers (4 workers x concurrency 4, nothing else queued): from the
#    moment `agent-exec submit` is started to the moment the program starts, against
#    `agent-exec run` started -> program started (journal: SQLite on disk), interleaved
#    round by round. Target: the fleet adds at most 50 ms at the median.
# 2. Cancel: `agent-exec cancel` started -> the worker journals `canceling` (10 rounds).
# 3. Throughput: JOBS submissions (8 submitting processes at a time) to 1, 2 and 4
#    workers x concurrency 4, until every program has started; against JOBS local
#    `agent-exec run`s, 8 at a time (as many as the submitting processes). Jobs per second, and where adding workers stops
#    helping on this machine (the knee).
#
# Needs PostgreSQL: AGENT_EXEC_TEST_PG_URL, else scripts/setup.d/30-postgres.sh starts
# the test cluster. Each run uses a database of its own (dropped at the end).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${AGENT_EXEC_TEST_PG_URL:-}" ]; then
  export PEERS_DIR=${PEERS_DIR:-$root/target/peers}
  # shellcheck source=/dev/null
  . scripts/setup.d/30-postgres.sh
fi
# BIN=<agent-exec binary> measures that build instead (e.g. a debug build); the
# baseline is always the same binary, so the comparison stays like for like.
if [ -n "${BIN:-}" ]; then
  bin=$BIN
else
  cargo build --release -q -p agent-exec
  bin="${CARGO_TARGET_DIR:-$root/target}/release/agent-exec"
fi

python3 - "$bin" "$AGENT_EXEC_TEST_PG_URL" "${ROUNDS:-40}" "${JOBS:-200}" <<'PY'
import concurrent.futures as cf, json, os, shutil, statistics, subprocess, sys, tempfile, time

bin_, admin, rounds, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
work = tempfile.mkdtemp(prefix="fleet-bench-")
started = os.path.join(work, "started")
ws = os.path.join(work, "ws")
os.makedirs(started); os.makedirs(ws)
config = os.path.join(work, "config.toml")
script = 'date +%s%N > "' + started + '/$AGENT_EXEC_EXECUTION_ID"'
with open(config, "w") as f:
    f.write('[backends.bench]\nkind = "command"\nargv = ["sh", "-c", %s]\n' % json.dumps(script))
    f.write('[backends.sleeper]\nkind = "command"\nargv = ["sh", "-c", %s]\ngrace_ms = 300\n' % json.dumps(script + "; sleep 300"))

db = "fleet_bench_%d" % os.getpid()
base, _, query = admin.partition("?")
scheme_end = base.index("://") + 3
slash = base.find("/", scheme_end)
server = base if slash < 0 else base[:slash]
url = server + "/" + db + ("?" + query if query else "")
def psql(sql):
    subprocess.run(["psql", admin, "-qAtc", sql], check=True, stdout=subprocess.DEVNULL)
psql("CREATE DATABASE " + db)

env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), HOME=os.path.join(work, "home"))
env.pop("AGENT_EXEC_CONFIG", None)
fleet = [bin_, "--config", config, "--journal", url]
local = [bin_, "--config", config, "--journal", os.path.join(work, "journal.sqlite3")]
workers = []

def start_workers(n, k):
    for _ in range(n):
        workers.append(subprocess.Popen(fleet + ["worker", "--concurrency", str(k)], env=env,
                                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "workers.log"), "a")))
    want = len(workers)
    until = time.time() + 60
    while True:
        out = subprocess.run(["psql", url, "-qAtc",
            "SELECT count(*) FROM agent_exec_fleet_workers WHERE state = 'live' AND queue_worker_id IS NOT NULL"],
            capture_output=True, text=True).stdout.strip() or "0"
        if int(out) >= want:
            return
        if time.time() > until:
            sys.exit("workers did not come up; see " + work + "/workers.log")
        time.sleep(0.05)

def stop_workers():
    for w in workers:
        w.terminate()
    for w in workers:
        w.wait()
    workers.clear()

def started_at(id_, timeout=60):
    path = os.path.join(started, id_)
    until = time.time() + timeout
    while True:
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        except FileNotFoundError:
            pass
        if time.time() > until:
            sys.exit("execution %s never started" % id_)
        time.sleep(0.0005)

def submit(id_):
    out = subprocess.run(fleet + ["submit", "--backend", "bench", "--prompt", "x", "--workspace", ws,
                                  "--execution-id", id_], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("submit %s failed (exit %d): %s" % (id_, out.returncode, out.stderr.strip()))

def run_local(id_):
    out = subprocess.run(local + ["run", "--backend", "bench", "--prompt", "x", "--workspace", ws,
                                  "--execution-id", id_], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("local run %s failed (exit %d): %s" % (id_, out.returncode, out.stderr.strip()))

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

try:
    # Warm-up: schema creation, page cache.
    start_workers(4, 4)
    submit("warm-fleet"); started_at("warm-fleet")
    subprocess.run(fleet + ["wait", "warm-fleet"], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_local("warm-local")

    fleet_ms, local_ms = [], []
    for i in range(rounds):
        t0 = time.time_ns()
        run_local("local-%d" % i)
        local_ms.append((started_at("local-%d" % i) - t0) / 1e6)
        t0 = time.time_ns()
        submit("lat-%d" % i)
        fleet_ms.append((started_at("lat-%d" % i) - t0) / 1e6)
        # Idle workers for the next round: this one has ended.
        subprocess.run(fleet + ["wait", "lat-%d" % i], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("== latency: start of the command -> program started, %d interleaved rounds, idle workers (4 x 4)" % rounds)
    print("%-34s %9s %9s" % ("", "p50 ms", "p99 ms"))
    print("%-34s %9.1f %9.1f" % ("local `agent-exec run`", statistics.median(local_ms), pct(local_ms, 99)))
    print("%-34s %9.1f %9.1f" % ("fleet `agent-exec submit` -> worker", statistics.median(fleet_ms), pct(fleet_ms, 99)))
    added = statistics.median(fleet_ms) - statistics.median(local_ms)
    print("dispatch adds %.1f ms at p50 (target <= 50 ms): %s" % (added, "met" if added <= 50 else "MISSED"))

    # Cancel: from the start of `agent-exec cancel` to the worker's `canceling` row
    # (the journal stamps it with the worker's clock; same machine).
    cancel_ms = []
    for i in range(min(rounds, 10)):
        id_ = "cancel-%d" % i
        subprocess.run(fleet + ["submit", "--backend", "sleeper", "--prompt", "x", "--workspace", ws,
                                "--execution-id", id_], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started_at(id_)
        t0 = time.time_ns()
        subprocess.run(fleet + ["cancel", id_], env=env, check=True, stderr=subprocess.DEVNULL)
        subprocess.run(fleet + ["wait", id_], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        at = subprocess.run(["psql", url, "-qAtc",
            "SELECT extract(epoch FROM at::timestamptz) FROM agent_exec_transitions "
            "WHERE execution_id = '%s' AND to_state = 'canceling' ORDER BY seq LIMIT 1" % id_],
            capture_output=True, text=True, check=True).stdout.strip()
        cancel_ms.append(float(at) * 1e3 - t0 / 1e6)
    print("== cancel: `agent-exec cancel` started -> worker records canceling, %d rounds: p50 %.1f ms, max %.1f ms"
          % (len(cancel_ms), statistics.median(cancel_ms), max(cancel_ms)))
    stop_workers()

    def throughput(label, fn, ids, parallel):
        t0 = time.time()
        with cf.ThreadPoolExecutor(parallel) as pool:
            list(pool.map(fn, ids))
        for id_ in ids:
            started_at(id_, timeout=300)
        last = max(started_at(id_) for id_ in ids) / 1e9
        rate = len(ids) / (last - t0)
        print("%-34s %7.1f jobs/s  (%d jobs in %.2f s)" % (label, rate, len(ids), last - t0))
        return rate

    print("== throughput: %d jobs of the trivial backend, until every program has started (%d cores)" % (jobs, os.cpu_count()))
    base_rate = throughput("local `agent-exec run`, 8 at a time", run_local, ["tl-%d" % i for i in range(jobs)], 8)
    rates = {}
    for n in (1, 2, 4):
        start_workers(n, 4)
        rates[n] = throughput("fleet, %d worker(s) x concurrency 4" % n, submit, ["t%d-%d" % (n, i) for i in range(jobs)], 8)
        stop_workers()
    print("fleet / local: " + ", ".join("%d worker(s) %.2f" % (n, r / base_rate) for n, r in rates.items()))
    print("scaling over 1 worker: " + ", ".join("%d: %.2fx" % (n, r / rates[1]) for n, r in rates.items()))
finally:
    stop_workers()
    subprocess.run(["psql", admin, "-qAtc", "DROP DATABASE IF EXISTS " + db + " WITH (FORCE)"], stdout=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
PY

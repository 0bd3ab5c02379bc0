#!/usr/bin/env bash
# Whole-process overhead of `agent-exec run --backend command` over spawning the same
# program directly, measured in the same run, interleaved (A, B, A, B, ...), so drift in
# machine load hits both sides alike. Target (issue 20, with results journaled): at most
# 5 ms added at the median (issue 5 §7 asked for 10).
#
#   scripts/bench-agent-exec.sh            # 200 interleaved rounds
#   RUNS=500 scripts/bench-agent-exec.sh
#   BEFORE=/tmp/agent-exec.old scripts/bench-agent-exec.sh
#   BEFORE=/tmp/agent-exec.old BEFORE2=/tmp/agent-exec.main BIN=/tmp/agent-exec.new scripts/bench-agent-exec.sh
#
# BEFORE names another agent-exec binary (say, built from an earlier commit) that joins
# the same interleaved rounds, so a change is measured against its predecessor and the
# direct baseline under one and the same machine load; BEFORE2 adds a second one (three
# builds compared at once). BIN benches that binary instead of building this checkout.
#
# What one `agent-exec run` includes: process start, config parse, journal open and
# recovery scan, the dead-runner cgroup sweep, 4 journal transactions (SQLite, WAL; the
# first, recording the start, is fsynced; the last keeps the result with the end
# state), a workspace snapshot before and after, the program in a cgroup of its own
# (created inside it by clone3(CLONE_INTO_CGROUP); where the kernel refuses that, it
# enters by a write to cgroup.procs before its first instruction) and its process
# group, tree reaping, the cgroup's removal. The same pairs are also run with the journal on /dev/shm, which
# separates the cost of the file system (fsyncs, the -shm file's truncation) from the
# rest. PHASES=N adds where the time goes, from N runs under strace. hyperfine (Debian
# package), when present, gives a second, non-interleaved opinion.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-200}

if [ -n "${BIN:-}" ]; then
  bin=$BIN
  [ -x "$bin" ] || { echo "BIN=$bin is not an executable" >&2; exit 1; }
else
  cargo build --release -q -p agent-exec
  bin="${CARGO_TARGET_DIR:-$root/target}/release/agent-exec"
fi

work=$(mktemp -d)
shm=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$work" "$shm"' EXIT
mkdir -p "$work/ws"
program=(/bin/echo ok)
cat >"$work/config.toml" <<EOF
[backends.bench]
kind = "command"
argv = ["/bin/echo", "ok"]
EOF

direct=("${program[@]}")
wrapped=("$bin" --config "$work/config.toml" --journal "$work/journal.sqlite3" run --backend bench --prompt hello --workspace "$work/ws")
wrapped_shm=("$bin" --config "$work/config.toml" --journal "$shm/journal.sqlite3" run --backend bench --prompt hello --workspace "$work/ws")
before=${BEFORE:-}
if [ -n "$before" ]; then
  [ -x "$before" ] || { echo "BEFORE=$before is not an executable" >&2; exit 1; }
  before_disk=("$before" --config "$work/config.toml" --journal "$work/before.sqlite3" run --backend bench --prompt hello --workspace "$work/ws")
  before_shm=("$before" --config "$work/config.toml" --journal "$shm/before.sqlite3" run --backend bench --prompt hello --workspace "$work/ws")
fi
before2=${BEFORE2:-}
if [ -n "$before2" ]; then
  [ -n "$before" ] || { echo "BEFORE2 needs BEFORE" >&2; exit 1; }
  [ -x "$before2" ] || { echo "BEFORE2=$before2 is not an executable" >&2; exit 1; }
  before2_disk=("$before2" --config "$work/config.toml" --journal "$work/before2.sqlite3" run --backend bench --prompt hello --workspace "$work/ws")
  before2_shm=("$before2" --config "$work/config.toml" --journal "$shm/before2.sqlite3" run --backend bench --prompt hello --workspace "$work/ws")
fi

# Sanity: the wrapped run succeeds and says the same thing.
out=$("${wrapped[@]}" 2>/dev/null)
[ "$out" = "ok" ] || { echo "agent-exec run printed '$out', expected 'ok'" >&2; exit 1; }

pack() { printf '%s\x1f' "$@"; }
args=("$(pack "${direct[@]}")" "$(pack "${wrapped[@]}")" "$(pack "${wrapped_shm[@]}")")
if [ -n "$before" ]; then
  args+=("$(pack "${before_disk[@]}")" "$(pack "${before_shm[@]}")")
fi
if [ -n "$before2" ]; then
  args+=("$(pack "${before2_disk[@]}")" "$(pack "${before2_shm[@]}")")
fi
echo "== interleaved: $runs rounds (direct, agent-exec, agent-exec with journal on /dev/shm${before:+, and the same two for BEFORE=$before}${before2:+ and BEFORE2=$before2})"
python3 - "$runs" "${args[@]}" <<'PY'
import statistics, subprocess, sys, time
runs = int(sys.argv[1])
cmds = [a.rstrip("\x1f").split("\x1f") for a in sys.argv[2:]]
names = ["direct", "agent-exec", "agent-exec (journal on /dev/shm)",
         "BEFORE", "BEFORE (journal on /dev/shm)",
         "BEFORE2", "BEFORE2 (journal on /dev/shm)"][:len(cmds)]
samples = [[] for _ in cmds]
for _ in range(5):  # warm-up
    for c in cmds:
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
for _ in range(runs):
    for i, c in enumerate(cmds):
        t = time.perf_counter_ns()
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples[i].append((time.perf_counter_ns() - t) / 1e6)
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
for n, s in zip(names, samples):
    print(f"{n:34s} median {statistics.median(s):7.2f} ms   p90 {q(s, .9):7.2f} ms")
base = statistics.median(samples[0])
for n, s in zip(names[1:], samples[1:]):
    added = statistics.median(s) - base
    verdict = "OK" if added <= 5 else "OVER the 5 ms target"
    print(f"added by {n:30s} {added:7.2f} ms at the median ({statistics.median(s) / base:.1f}x)  {verdict}")
for then, who in [(3, "BEFORE"), (5, "BEFORE2")]:
    if len(cmds) <= then:
        break
    for now, what in [(1, "disk"), (2, "/dev/shm")]:
        a = statistics.median(samples[now]) - base
        b = statistics.median(samples[then + now - 1]) - base
        print(f"overhead now / {who:7s} ({what:8s}) {a:6.2f} / {b:6.2f} ms = {a / b:.2f}")
PY

# Where the time of one run goes: PHASES=N traced runs (journal on disk), each phase's
# median. strace stops only at the marker syscalls (--seccomp-bpf), about 20 per run,
# so the sum is close to the untraced time; each stop adds some tens of µs.
if [ -n "${PHASES:-}" ]; then
  command -v strace >/dev/null || { echo "PHASES needs strace" >&2; exit 1; }
  echo "== where the time goes: median of $PHASES traced runs (journal on disk)"
  for i in $(seq "$PHASES"); do
    strace -f --seccomp-bpf -ttt -T -o "$work/phases.$i" \
      -e trace=execve,prctl,ftruncate,getdents64,fsync,mkdir,clone,clone3,wait4,rmdir,write,exit_group \
      "${wrapped[@]}" >/dev/null 2>&1
  done
  python3 - "$work" "$PHASES" <<'PY'
import re, statistics, sys
work, n = sys.argv[1], int(sys.argv[2])
run_cgroup = re.compile(r'/agent-exec-\d+-\d+-\d+"')  # not a -probe, not the journal's folder
line_re = re.compile(r"^(\d+) +(\d+\.\d+) (.*?)(?: <(\d+\.\d+)>)?$")
phases = [
    ("process start: loader, Rust runtime, arguments, signal handlers", "start", "subreaper"),
    ("config, request, journal open (file, pragmas, schema)", "subreaper", "ftruncate"),
    ("journal: WAL re-read, recovery scan", "ftruncate", "sweep"),
    ("dead-runner cgroup sweep, start record (fsynced)", "sweep", "fsynced"),
    ("attempt record, workspace snapshot", "fsynced", "mkdir"),
    ("run cgroup created", "mkdir", "clone"),
    ("clone3 into the run cgroup (or fork + enter it), exec", "clone", "exec"),
    ("  of which a cgroup.procs write (the fork fallback only)", None, None),
    ("the program itself (a direct run pays this too)", "exec", "reaped"),
    ("teardown: cgroup emptied, checked, removed", "reaped", "rmdired"),
    ("workspace snapshot after, end and result records", "rmdired", "said"),
    ("exit", "said", "exited"),
]
rows = {name: [] for name, _, _ in phases}
totals = []
for i in range(1, n + 1):
    marks, main, enter = {}, None, 0.0
    for line in open(f"{work}/phases.{i}"):
        m = line_re.match(line.rstrip("\n"))
        if not m:
            continue
        pid, t, call, dur = m.group(1), float(m.group(2)), m.group(3), float(m.group(4) or 0)
        main = main or pid
        mine = pid == main
        if mine and call.startswith("execve("):
            marks.setdefault("start", t)
        elif mine and "PR_SET_CHILD_SUBREAPER" in call:
            marks.setdefault("subreaper", t)
        elif mine and call.startswith("ftruncate("):
            marks.setdefault("ftruncate", t)
        elif mine and call.startswith("getdents64(") and "ftruncate" in marks:
            marks.setdefault("sweep", t)
        elif mine and call.startswith("fsync(") and "ftruncate" in marks and "mkdir" not in marks:
            marks["fsynced"] = t + dur
        elif mine and call.startswith("mkdir(") and run_cgroup.search(call):
            marks.setdefault("mkdir", t)
        elif mine and call.startswith(("clone(", "clone3(")):
            marks.setdefault("clone", t)
        elif not mine and call.startswith('write(') and ', "0", 1)' in call:
            enter += dur
        elif not mine and call.startswith("execve("):
            marks.setdefault("exec", t)
        elif mine and call.startswith("wait4(") and re.search(r"\) = [1-9]\d*$", call):
            marks.setdefault("reaped", t)
        elif mine and call.startswith("rmdir(") and run_cgroup.search(call):
            marks["rmdired"] = t + dur
        elif mine and call.startswith('write(2, "agent-exec:'):
            marks.setdefault("said", t)
        elif mine and call.startswith("+++ exited"):
            marks["exited"] = t
    marks.setdefault("sweep", marks.get("ftruncate"))
    for name, a, b in phases:
        if a is None:
            rows[name].append(enter * 1e3)
        elif marks.get(a) is not None and marks.get(b) is not None:
            rows[name].append((marks[b] - marks[a]) * 1e3)
    if "start" in marks and "exited" in marks:
        totals.append((marks["exited"] - marks["start"]) * 1e3)
for name, _, _ in phases:
    xs = rows[name]
    print(f"{name:62s} {statistics.median(xs) if xs else float('nan'):7.2f} ms  ({len(xs)} runs)")
print(f"{'whole run, traced':62s} {statistics.median(totals):7.2f} ms")
PY
fi

if command -v hyperfine >/dev/null; then
  echo "== hyperfine (not interleaved)"
  hyperfine -N --warmup 5 --runs "$runs" --style basic \
    "${direct[*]}" \
    "${wrapped[*]}" \
    "${wrapped_shm[*]}" 2>&1 | grep -E "Benchmark|Time|±|faster" || true
fi

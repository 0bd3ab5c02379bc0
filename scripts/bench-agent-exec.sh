#!/usr/bin/env bash
# Whole-process overhead of `agent-exec run --backend command` over spawning the same
# program directly, measured in the same run, interleaved (A, B, A, B, ...), so drift in
# machine load hits both sides alike. Target (issue 5 §7): at most 10 ms added at the
# median.
#
#   scripts/bench-agent-exec.sh            # 200 interleaved rounds
#   RUNS=500 scripts/bench-agent-exec.sh
#   BEFORE=/tmp/agent-exec.old scripts/bench-agent-exec.sh
#
# BEFORE names another agent-exec binary (say, built from an earlier commit) that joins
# the same interleaved rounds, so a change is measured against its predecessor and the
# direct baseline under one and the same machine load.
#
# What one `agent-exec run` includes: process start, config parse, journal open and
# recovery scan, 5 journal transactions (SQLite, WAL; the first, recording the start, is
# fsynced), a workspace snapshot before and after, the program in its own process
# group, tree reaping. The same pairs are also run with the journal on /dev/shm, which
# separates the cost of durable commits from the rest. hyperfine (Debian package), when
# present, gives a second, non-interleaved opinion.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
runs=${RUNS:-200}

cargo build --release -q -p agent-exec
bin="${CARGO_TARGET_DIR:-$root/target}/release/agent-exec"

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

# Sanity: the wrapped run succeeds and says the same thing.
out=$("${wrapped[@]}" 2>/dev/null)
[ "$out" = "ok" ] || { echo "agent-exec run printed '$out', expected 'ok'" >&2; exit 1; }

pack() { printf '%s\x1f' "$@"; }
args=("$(pack "${direct[@]}")" "$(pack "${wrapped[@]}")" "$(pack "${wrapped_shm[@]}")")
if [ -n "$before" ]; then
  args+=("$(pack "${before_disk[@]}")" "$(pack "${before_shm[@]}")")
fi
echo "== interleaved: $runs rounds (direct, agent-exec, agent-exec with journal on /dev/shm${before:+, and the same two for BEFORE=$before})"
python3 - "$runs" "${args[@]}" <<'PY'
import statistics, subprocess, sys, time
runs = int(sys.argv[1])
cmds = [a.rstrip("\x1f").split("\x1f") for a in sys.argv[2:]]
names = ["direct", "agent-exec", "agent-exec (journal on /dev/shm)",
         "BEFORE", "BEFORE (journal on /dev/shm)"][:len(cmds)]
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
    verdict = "OK" if added <= 10 else "OVER the 10 ms target"
    print(f"added by {n:30s} {added:7.2f} ms at the median ({statistics.median(s) / base:.1f}x)  {verdict}")
if len(cmds) == 5:
    for now, then, what in [(1, 3, "disk"), (2, 4, "/dev/shm")]:
        a, b = statistics.median(samples[now]) - base, statistics.median(samples[then]) - base
        print(f"overhead now / BEFORE ({what:8s}) {a:6.2f} / {b:6.2f} ms = {a / b:.2f}")
PY

if command -v hyperfine >/dev/null; then
  echo "== hyperfine (not interleaved)"
  hyperfine -N --warmup 5 --runs "$runs" --style basic \
    "${direct[*]}" \
    "${wrapped[*]}" \
    "${wrapped_shm[*]}" 2>&1 | grep -E "Benchmark|Time|±|faster" || true
fi

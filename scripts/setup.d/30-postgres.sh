# shellcheck shell=bash
# A real PostgreSQL server for the agent-exec journal's fleet tests.
#
# Sourced by scripts/test.sh with PEERS_DIR exported. Installs the Debian `postgresql`
# package only when no server binaries are present, creates a cluster under
# $PEERS_DIR/postgres (once), starts it on a loopback port chosen at creation time
# (kept in $PEERS_DIR/postgres/port), and exports
#   AGENT_EXEC_TEST_PG_URL=postgres://agent_exec@127.0.0.1:PORT/postgres
# Idempotent and fast when the server is already up: it only checks `pg_ctl status`.
#
# Decisions: trust authentication bound to 127.0.0.1 only (a throwaway test cluster, no
# password to leak); when running as root the cluster belongs to the `postgres` system
# user (initdb refuses root), otherwise to the current user.

agent_exec_pg_setup() {
  local pg_bin pg_root data port_file port run_as sock
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
    echo "30-postgres: installing the postgresql Debian package" >&2
    if ! apt-get install -y postgresql >/dev/null 2>&1; then
      apt-get update >/dev/null && apt-get install -y postgresql >/dev/null || {
        echo "30-postgres: could not install postgresql" >&2
        return 1
      }
    fi
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi

  pg_root="$PEERS_DIR/postgres"
  data="$pg_root/data"
  port_file="$pg_root/port"
  sock="$pg_root/sock"
  mkdir -p "$pg_root" "$sock"

  run_as=()
  if [ "$(id -u)" = 0 ]; then
    # The postgres user must be able to reach the cluster directory.
    chown postgres: "$pg_root" "$sock"
    chmod o+x "$PEERS_DIR" 2>/dev/null || true
    run_as=(runuser -u postgres --)
    if ! runuser -u postgres -- test -w "$pg_root"; then
      # $PEERS_DIR sits under a directory the postgres user cannot enter (e.g. /root):
      # keep the cluster in a per-checkout directory under /tmp, linked from $PEERS_DIR.
      local outside
      outside="/tmp/agent-exec-postgres-$(printf '%s' "$PEERS_DIR" | cksum | cut -d' ' -f1)"
      mkdir -p "$outside/sock"
      chown -R postgres: "$outside"
      rm -rf "$pg_root"
      ln -sfn "$outside" "$pg_root"
      pg_root="$outside"
      data="$pg_root/data"
      port_file="$pg_root/port"
      sock="$pg_root/sock"
    fi
  fi

  if [ ! -s "$data/PG_VERSION" ]; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    echo "$port" >"$port_file"
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown postgres: "$data"
    "${run_as[@]}" "$pg_bin/initdb" -D "$data" -U agent_exec -A trust -E UTF8 --no-locale >"$pg_root/initdb.log" 2>&1 || {
      echo "30-postgres: initdb failed, see $pg_root/initdb.log" >&2
      return 1
    }
  fi
  port=$(cat "$port_file")

  if ! "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    "${run_as[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$pg_root/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $sock -c fsync=off -c max_connections=200" \
      start >/dev/null || {
      echo "30-postgres: server did not start, see $pg_root/server.log" >&2
      return 1
    }
  fi
  export AGENT_EXEC_TEST_PG_URL="postgres://agent_exec@127.0.0.1:$port/postgres"
  echo "30-postgres: PostgreSQL at $AGENT_EXEC_TEST_PG_URL" >&2
}

agent_exec_pg_setup

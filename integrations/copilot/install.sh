#!/bin/sh
# facet in GitHub Copilot CLI, for the current user: one step.
#   integrations/copilot/install.sh
# - copies facet.json (facet's four hooks, Copilot's own camelCase format) into
#   Copilot's user-level hooks folder, ${COPILOT_HOME:-$HOME/.copilot}/hooks/;
# - registers `facet serve` as the MCP server `facet` (the model's `facet` tool,
#   which Copilot names `facet-facet`) with `copilot mcp add`.
# Both run `facet` by name: install it first (scripts/install.sh). Idempotent: a
# second run replaces the hooks file and the server entry.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
home="${COPILOT_HOME:-$HOME/.copilot}"
if ! command -v facet >/dev/null 2>&1; then
  echo "install.sh: facet is not on PATH; install it first (scripts/install.sh), then run this again" >&2
  exit 1
fi
if ! command -v copilot >/dev/null 2>&1; then
  echo "install.sh: copilot is not on PATH; install GitHub Copilot CLI (npm install -g @github/copilot), then run this again" >&2
  exit 1
fi
mkdir -p "$home/hooks"
# Through a temporary file and a rename: a Copilot starting meanwhile reads the old
# file or the new one, never half of one.
cp "$here/facet.json" "$home/hooks/.facet.json.tmp"
mv -f "$home/hooks/.facet.json.tmp" "$home/hooks/facet.json"
copilot mcp remove facet >/dev/null 2>&1 || true
copilot mcp add facet -- facet serve >/dev/null
echo "facet: hooks in $home/hooks/facet.json; MCP server \`facet\` added (copilot mcp list)"

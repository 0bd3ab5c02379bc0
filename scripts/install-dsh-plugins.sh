#!/usr/bin/env bash
# Installs envreg's and facet's DeepSeek Harness plugins (integrations/dsh-envreg,
# integrations/dsh-facet), and the JSON-lines client both use (integrations/
# dsh-bridge-client), into one dsh profile, so the patch rows
#   - insert: [{id: envreg, name: dsh-envreg, config: {registry: DIR}}]
#   - insert: [{id: facet, name: dsh-facet, config: {mode: ask}}]
# load them. docs/dsh.md is the user's guide; this is what it tells them to run.
#
# usage: scripts/install-dsh-plugins.sh --dsh-home DIR --profile NAME [--package NAME]...
#   --dsh-home DIR   the dsh home dsh runs with (its DSH_HOME; without one dsh uses
#                    ~/.dsh, so a user passes --dsh-home ~/.dsh)
#   --profile NAME   the profile to install into (e.g. headless, web); created if new
#   --package NAME   only this package (dsh-envreg or dsh-facet; repeatable); default both
# Needs node (22+), npm and dsh on PATH; nothing else.
#
# How: `dsh --profile NAME --dump-config` first, which creates the profile and (re)links
# the host's own packages into $DSH_HOME/profiles/node_modules; then each package is
# packed (`npm pack`), the tarball kept in the profile's plugins/ folder and installed
# from there with npm, with --legacy-peer-deps so its @deepseek-ai/* peers are NOT
# installed: they resolve, through Node's parent walk, to dsh's own module instances.
# A second copy of dsh's modules would make the plugin's HarnessError a different class
# from the host's (its codes would be lost), so the script refuses to leave one.
# dsh-bridge-client is the plugins' peer dependency too, installed here as the profile's
# own package beside them (one copy for both); the script checks each plugin resolves
# that copy, of the version it names. Not a `file:../dsh-bridge-client` dependency: npm
# resolves it against the installed plugin's folder and leaves a dangling link.
# Decisions: npm, not `dsh plugin add` (that forwards to pnpm, which a machine with
# node+npm lacks); a copied tarball, not a link to this checkout (a symlinked package
# resolves its imports from its real folder, where dsh's modules are not).
set -euo pipefail

die() {
  echo "install-dsh-plugins: $*" >&2
  exit 2
}

root=$(cd "$(dirname "$0")/.." && pwd)
dsh_home=""
profile=""
packages=()
while [ $# -gt 0 ]; do
  case "$1" in
  --dsh-home)
    [ $# -ge 2 ] || die "--dsh-home needs a folder"
    dsh_home=$2
    shift 2
    ;;
  --profile)
    [ $# -ge 2 ] || die "--profile needs a name"
    profile=$2
    shift 2
    ;;
  --package)
    [ $# -ge 2 ] || die "--package needs a name (dsh-envreg or dsh-facet)"
    packages+=("$2")
    shift 2
    ;;
  -h | --help)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$dsh_home" ] || die "--dsh-home DIR is required (the DSH_HOME dsh runs with)"
[ -n "$profile" ] || die "--profile NAME is required (e.g. headless)"
case "$profile" in
*/* | . | .. | node_modules) die "--profile '$profile' is not a profile name" ;;
esac
[ ${#packages[@]} -gt 0 ] || packages=(dsh-envreg dsh-facet)
for tool in node npm dsh; do
  command -v "$tool" >/dev/null || die "'$tool' is not on PATH (needs node 22+, npm and dsh)"
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] || die "node on PATH is $(node --version); dsh needs Node 22 or newer"

mkdir -p "$dsh_home"
dsh_home=$(cd "$dsh_home" && pwd)
export DSH_HOME="$dsh_home"
dsh --profile "$profile" --dump-config >/dev/null ||
  die "dsh --profile $profile --dump-config failed (is DSH_HOME=$dsh_home writable?)"
profile_dir="$dsh_home/profiles/$profile"
[ -f "$profile_dir/package.json" ] || die "dsh did not create $profile_dir/package.json"

for package in "${packages[@]}"; do
  case "$package" in
  dsh-envreg | dsh-facet) ;;
  *) die "unknown package '$package' (dsh-envreg or dsh-facet)" ;;
  esac
done

client=dsh-bridge-client
mkdir -p "$profile_dir/plugins"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
specs=()
for package in "$client" "${packages[@]}"; do
  src="$root/integrations/$package"
  [ -f "$src/package.json" ] || die "$src/package.json is missing (is this a whole checkout?)"
  tarball=$(cd "$work" && npm pack --silent --pack-destination "$work" "$src" | tail -n 1)
  [ -f "$work/$tarball" ] || die "npm pack $src produced no tarball"
  mv "$work/$tarball" "$profile_dir/plugins/$tarball"
  specs+=("file:plugins/$tarball")
done
(cd "$profile_dir" && npm install --silent --no-audit --no-fund --legacy-peer-deps "${specs[@]}") ||
  die "npm install in $profile_dir failed"

# The host's modules must be the only copy the plugins can reach, and the client the
# one installed beside them (paths go to node as arguments, never inside its code).
client_dir="$profile_dir/node_modules/$client"
[ -f "$client_dir/package.json" ] || die "$client_dir is missing after npm install"
# Prints what is wrong with how plugin $1 reaches the client, or nothing.
client_problem() {
  node -e '
    const [plugin, client, name] = process.argv.slice(1)
    const { realpathSync } = require("node:fs")
    const { createRequire } = require("node:module")
    const wanted = require(`${plugin}/package.json`).peerDependencies?.[name]
    const have = require(`${client}/package.json`).version
    if (wanted !== have) {
      console.log(`wants ${name} ${wanted ?? "(not named)"} but ${name} ${have} is installed; install both from one checkout`)
    } else {
      const got = realpathSync(createRequire(`${plugin}/package.json`).resolve(`${name}/package.json`))
      const own = realpathSync(`${client}/package.json`)
      if (got !== own) console.log(`resolves ${name} to ${got}, not the profile copy ${own}; remove the other copy`)
    }
  ' "$1" "$client_dir" "$client"
}
for package in "${packages[@]}"; do
  installed="$profile_dir/node_modules/$package"
  [ -f "$installed/package.json" ] || die "$installed is missing after npm install"
  if [ -e "$installed/node_modules/@deepseek-ai" ] || [ -e "$profile_dir/node_modules/@deepseek-ai" ]; then
    die "a second copy of dsh's @deepseek-ai modules landed beside $package; remove it (a plugin must use the host's own)"
  fi
  problem=$(client_problem "$installed") || die "node could not check how $package reaches $client"
  [ -z "$problem" ] || die "$package $problem"
  echo "install-dsh-plugins: $package $(node -p 'require(process.argv[1]).version' "$installed/package.json") installed into profile '$profile' ($profile_dir)"
done

# shellcheck shell=bash
# Debian's Chromium and its ChromeDriver for envreg-ui's browser tests
# (crates/envreg-ui/tests/browser.rs drives them over WebDriver).
#
# Sourced by scripts/test.sh. Installs the Debian packages `chromium` and
# `chromium-driver` when either binary is missing, and exports
#   ENVREG_UI_CHROMIUM=/usr/bin/chromium
#   ENVREG_UI_CHROMEDRIVER=/usr/bin/chromedriver
#
# Pinning: Debian's security archive replaces a Chromium build with the next one and
# drops the old, so an exact version in this file would stop installing within weeks.
# What is pinned is what the tests depend on: both packages at the *same* version (the
# driver speaks only to its own browser build), and the major version at least
# scripts/peers/chromium-min-major (the WebDriver features the tests use). A mismatch
# or an older build fails here, loudly, rather than as a puzzling test failure.
# No browser is ever downloaded at run time.
envreg_ui_chromium_setup() {
  local min_major version browser_version driver_version major
  min_major=$(cat "$(cd "$(dirname "${BASH_SOURCE[0]}")/../peers" && pwd)/chromium-min-major")
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    echo "50-chromium: installing Debian chromium + chromium-driver" >&2
    apt-get update >/dev/null 2>&1 || true
    version=$(apt-cache policy chromium | awk '/Candidate:/ { print $2 }')
    if [ -z "$version" ] || [ "$version" = "(none)" ]; then
      echo "50-chromium: no chromium package is available from apt" >&2
      return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=600 \
      "chromium=$version" "chromium-driver=$version" >/dev/null || {
      echo "50-chromium: could not install chromium=$version chromium-driver=$version" >&2
      return 1
    }
  fi
  browser_version=$(dpkg-query -W -f '${Version}' chromium 2>/dev/null)
  driver_version=$(dpkg-query -W -f '${Version}' chromium-driver 2>/dev/null)
  if [ -z "$browser_version" ] || [ "$browser_version" != "$driver_version" ]; then
    echo "50-chromium: chromium ($browser_version) and chromium-driver ($driver_version) must be the same build" >&2
    return 1
  fi
  major=${browser_version%%.*}
  if [ "$major" -lt "$min_major" ]; then
    echo "50-chromium: chromium $browser_version is older than the tested major $min_major" >&2
    return 1
  fi
  export ENVREG_UI_CHROMIUM=/usr/bin/chromium
  export ENVREG_UI_CHROMEDRIVER=/usr/bin/chromedriver
}
envreg_ui_chromium_setup

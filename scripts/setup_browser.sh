#!/usr/bin/env bash
# Makes sure Debian's chromium is installed: the console's browser tests drive it with Playwright
# (Playwright's own browser download is not used: `executable_path=/usr/bin/chromium`). Needs
# root to install, as in CI; a no-op when it is there.
set -euo pipefail
browser=${CEPHEUS_CHROMIUM:-/usr/bin/chromium}
if [[ -x $browser ]]; then
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "setup_browser: $browser is missing; install Debian's chromium (apt-get install chromium) as root" >&2
    exit 1
fi
echo "setup_browser: installing Debian's chromium"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
"$browser" --version

#!/usr/bin/env bash
# The fault tests' hosts are network namespaces joined by a user-space wire (tests/support/hosts.py):
# they need root, iproute2's `ip` and TUN/TAP. Installs iproute2 when missing (as root, as in CI).
set -euo pipefail
if ! command -v ip >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup_hosts: iproute2 is missing; install it (apt-get install iproute2) as root" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null
fi
if [ ! -c /dev/net/tun ]; then
    echo "setup_hosts: /dev/net/tun is missing: the fault tests' wire needs TUN/TAP" >&2
    exit 1
fi

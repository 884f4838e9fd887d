"""Hosts of their own for the fault tests: each a network namespace with one interface on a
switch (`tests.support.wire`) that can lose, delay, duplicate and reorder frames per
direction, cut one direction between two hosts, or take a host's link away.

The test process itself stays in the root namespace and is a host too (`Network.here`: the
client's and the observer's host), so it reaches every host's address; a host's processes
run under `Host.prefix` (`ip netns exec NS`) and bind its address.

Bounded: a network has at most `MAX_HOSTS` hosts, on a /24 of 10.213.0.0/16 that no interface
of the machine uses; `close()` deletes its namespaces (their processes must be stopped first:
the caller's fixtures do so, even when the test fails), and a new network first deletes the
namespaces of networks whose test process is gone (one killed before it could clean up).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tests.support.wire import Shape, Wire

PREFIX = "cepheus-t"  # of every namespace a network makes: cepheus-t-<pid>-<tag>-<host>
MAX_HOSTS = 16
_UNUSED_PORT = 9  # discard: nothing listens on it in a test's host


class NamespacesUnavailable(AssertionError):
    """This machine cannot make network namespaces (root and iproute2 are needed)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        raise NamespacesUnavailable("the fault tests' hosts need `ip` (Debian's iproute2)") from None
    if check and result.returncode != 0:
        msg = f"ip {' '.join(args)}: {result.stderr.strip()}"
        raise NamespacesUnavailable(msg) if "Operation not permitted" in result.stderr else RuntimeError(msg)
    return result


def sweep() -> int:
    """Delete the namespaces of networks whose test process has ended; how many."""
    deleted = 0
    for line in _ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if not name.startswith(PREFIX + "-") or len(parts) < 4 or not parts[2].isdigit():
            continue
        if not os.path.exists(f"/proc/{parts[2]}"):
            _ip("netns", "del", name, check=False)
            deleted += 1
    return deleted


def _free_subnet() -> str:
    used = _ip("-o", "-4", "addr").stdout
    for _ in range(100):
        third = secrets.randbelow(250) + 1
        subnet = f"10.213.{third}."
        if subnet not in used:
            return subnet
    msg = "no free 10.213.x.0/24 for the test's network"
    raise RuntimeError(msg)


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str | None  # None: the test's own (root) namespace
    address: str
    device: str

    @property
    def prefix(self) -> list[str]:
        """The command prefix that runs a program on this host."""
        return [] if self.namespace is None else ["ip", "netns", "exec", self.namespace]


class Network:
    """Hosts named `names` and the test's own (`here`), joined by one wire."""

    def __init__(self, names: Sequence[str], seed: int) -> None:
        if len(names) + 1 > MAX_HOSTS or len(set(names)) != len(names) or "here" in names:
            msg = f"at most {MAX_HOSTS - 1} distinct host names, 'here' not among them: {list(names)}"
            raise ValueError(msg)
        if os.geteuid() != 0:
            raise NamespacesUnavailable("the fault tests' hosts are network namespaces: run as root")
        if not os.path.exists("/dev/net/tun"):
            raise NamespacesUnavailable("the fault tests' wire needs TUN/TAP (/dev/net/tun)")
        sweep()
        tag = secrets.token_hex(2)
        subnet = _free_subnet()
        self.hosts: dict[str, Host] = {
            "here": Host("here", None, f"{subnet}1", f"cw{tag}h"),
            **{
                name: Host(name, f"{PREFIX}-{os.getpid()}-{tag}-{name}", f"{subnet}{i + 2}", f"cw{tag}{i}")
                for i, name in enumerate(names)
            },
        }
        self._made: list[str] = []
        self.wire = Wire([h.device for h in self.hosts.values()], seed)
        try:
            for host in self.hosts.values():
                self._plug(host)
            self._reachable(time.monotonic() + 10)
        except BaseException:
            self.close()
            raise

    def _reachable(self, deadline: float) -> None:
        """Wait until this host reaches every other (a port nothing listens on answers with a
        reset: the wire and the neighbours' addresses work), so a test's first connection does
        not meet a link still coming up."""
        for host in self.hosts.values():
            if host.namespace is None:
                continue
            while True:
                try:
                    socket.create_connection((host.address, _UNUSED_PORT), timeout=1.0).close()
                    break
                except ConnectionRefusedError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        msg = f"host {host.name} ({host.address}) unreachable through the wire: {exc}"
                        raise RuntimeError(msg) from None
                    time.sleep(0.05)

    def _plug(self, host: Host) -> None:
        if host.namespace is None:
            _ip("addr", "add", f"{host.address}/24", "dev", host.device)
            _ip("link", "set", host.device, "up")
            return
        _ip("netns", "add", host.namespace)
        self._made.append(host.namespace)
        _ip("link", "set", host.device, "netns", host.namespace)
        _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", host.device)
        _ip("-n", host.namespace, "link", "set", host.device, "up")
        _ip("-n", host.namespace, "link", "set", "lo", "up")

    @property
    def here(self) -> Host:
        return self.hosts["here"]

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def _pairs(self, sources: Sequence[str], targets: Sequence[str]) -> list[tuple[str, str]]:
        return [(self.hosts[a].device, self.hosts[b].device) for a in sources for b in targets if a != b]

    def shape(self, sources: Sequence[str], targets: Sequence[str], shape: Shape) -> None:
        """Frames from each of `sources` to each of `targets` meet `shape`."""
        self.wire.shape(self._pairs(sources, targets), shape)

    def between(self, names: Sequence[str], shape: Shape) -> None:
        """`shape` both ways between every two of `names`."""
        self.shape(names, names, shape)

    def cut(self, sources: Sequence[str], targets: Sequence[str]) -> None:
        """Nothing from `sources` reaches `targets` (the other way is untouched)."""
        self.wire.cut(self._pairs(sources, targets))

    def heal(self) -> None:
        """Every shape and cut ended, every link up."""
        self.wire.heal()
        self.wire.up(*(h.device for h in self.hosts.values()))

    def unplug(self, name: str) -> None:
        """The host's link is gone: nothing it sends arrives, nothing reaches it (its processes
        live on: kill them too for a host that lost power)."""
        self.wire.down(self.hosts[name].device)

    def plug(self, name: str) -> None:
        self.wire.up(self.hosts[name].device)

    def counts(self) -> dict[str, int]:
        return self.wire.counts()

    def close(self) -> None:
        """Delete the namespaces (and with them their ends of the wire), then stop the wire."""
        for namespace in self._made:
            pids = _ip("netns", "pids", namespace, check=False).stdout.split()
            for pid in pids:  # a process a test left behind must not keep the namespace's address
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            if pids:
                time.sleep(0.1)
            _ip("netns", "del", namespace, check=False)
        self._made.clear()
        self.wire.close()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

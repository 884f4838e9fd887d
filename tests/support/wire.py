"""The wire between the fault tests' hosts: an Ethernet switch in a process of its own that
moves every frame between the hosts' TAP devices, and does to each direction between two hosts
what `tc netem` would (loss, delay with jitter, duplication, reordering) or cuts it (one-way
partitions, a host whose link is gone: nothing in or out, no FIN, no RST).

Why not `tc netem`: the kernels this project's tests run on are not all built with it (the
one of this machine and its CI has no `sch_netem`, no `prio` and no `fq`: `zcat
/proc/config.gz | grep NETEM`). Moving frames in user space needs only TUN/TAP and works on
any kernel that gives network namespaces; the hosts' TCP stacks stay the kernel's own, so what
crosses the wire is what crosses a real network. A frame's fate is drawn from a random
generator seeded by the test, so a failing run can be told by its seed.

`python -m tests.support.wire NAME...` creates one TAP device per name (left in this namespace:
the caller moves each into its host's namespace), prints one line `ready`, then takes one JSON
command per line on stdin and answers each with one JSON line; it ends when stdin closes (the
TAP devices go with it). `Wire` runs it and sends the commands.
"""

from __future__ import annotations

import fcntl
import heapq
import json
import os
import random
import select
import struct
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
_TUNSETIFF = 0x400454CA
_IFF_TAP, _IFF_NO_PI = 0x0002, 0x1000


@dataclass
class Shape:
    """What the wire does to the frames of one direction (netem's terms: `loss` and `duplicate`
    are probabilities; each frame waits `delay` ± `jitter` s, so frames overtake each other
    under jitter; `reorder`: the probability that a frame skips its wait)."""

    loss: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Shape:
        names = {f.name for f in fields(cls)}
        unknown = set(values) - names
        if unknown:
            msg = f"unknown shape fields {sorted(unknown)} (known: {sorted(names)})"
            raise ValueError(msg)
        return cls(**{k: float(v) for k, v in values.items()})


@dataclass
class _Switch:
    ports: dict[str, int]  # host → its TAP's file descriptor
    rng: random.Random
    shapes: dict[tuple[str, str], Shape] = field(default_factory=dict)  # (from, to) → shape
    cut: set[tuple[str, str]] = field(default_factory=set)  # (from, to) directions that drop all
    down: set[str] = field(default_factory=set)  # hosts whose link is gone
    macs: dict[bytes, str] = field(default_factory=dict)  # learnt: MAC → host
    due: list[tuple[float, int, str, bytes]] = field(default_factory=list)  # (when, seq, to, frame)
    seq: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"frames": 0, "dropped": 0, "delayed": 0})

    def take(self, source: str, frame: bytes, now: float) -> None:
        self.counts["frames"] += 1
        if source in self.down or len(frame) < 14:
            self.counts["dropped"] += 1
            return
        self.macs[frame[6:12]] = source
        to = None if frame[0] & 1 else self.macs.get(frame[0:6])
        targets = [to] if to is not None else [h for h in self.ports if h != source]
        for target in targets:
            self._pass(source, target, frame, now)

    def _pass(self, source: str, target: str, frame: bytes, now: float) -> None:
        if target in self.down or (source, target) in self.cut:
            self.counts["dropped"] += 1
            return
        shape = self.shapes.get((source, target))
        if shape is None:
            self._write(target, frame)
            return
        if shape.loss and self.rng.random() < shape.loss:
            self.counts["dropped"] += 1
            return
        copies = 2 if shape.duplicate and self.rng.random() < shape.duplicate else 1
        for _ in range(copies):
            wait = shape.delay + (self.rng.uniform(-shape.jitter, shape.jitter) if shape.jitter else 0.0)
            if shape.reorder and self.rng.random() < shape.reorder:
                wait = 0.0
            if wait <= 0:
                self._write(target, frame)
            else:
                self.seq += 1
                self.counts["delayed"] += 1
                heapq.heappush(self.due, (now + wait, self.seq, target, frame))

    def release(self, now: float) -> float | None:
        """Write the frames whose wait is over; seconds until the next one is (None: none waits)."""
        while self.due and self.due[0][0] <= now:
            _, _, target, frame = heapq.heappop(self.due)
            if target not in self.down:
                self._write(target, frame)
        return None if not self.due else max(0.0, self.due[0][0] - now)

    def _write(self, target: str, frame: bytes) -> None:
        try:
            os.write(self.ports[target], frame)
        except OSError:  # the host's link is not up (yet): as a cable unplugged
            self.counts["dropped"] += 1

    def command(self, line: str) -> dict[str, Any]:
        order = json.loads(line)
        op = order.pop("op")
        pairs = [(str(a), str(b)) for a, b in order.pop("pairs", [])]
        if op == "shape":
            shape = Shape.of(order)
            for pair in pairs:
                self.shapes[pair] = shape
        elif op == "cut":
            self.cut.update(pairs)
        elif op == "heal":
            for pair in pairs or [*self.shapes, *self.cut]:
                self.shapes.pop(pair, None)
                self.cut.discard(pair)
        elif op == "down":
            self.down.update(order["hosts"])
        elif op == "up":
            self.down.difference_update(order["hosts"])
        elif op == "seed":
            self.rng.seed(order["seed"])
        elif op != "counts":
            return {"error": f"unknown command {op!r}"}
        return {"ok": True, **self.counts}


def _open_tap(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
    return fd


def serve(devices: Sequence[str]) -> None:
    """Run the switch between TAP devices named `devices` (host names are the device names)."""
    switch = _Switch({name: _open_tap(name) for name in devices}, random.Random(0))
    by_fd = {fd: name for name, fd in switch.ports.items()}
    control = sys.stdin.fileno()
    os.set_blocking(control, False)
    print("ready", flush=True)
    pending = b""
    while True:
        wait = switch.release(time.monotonic())
        readable, _, _ = select.select([control, *by_fd], [], [], 1.0 if wait is None else wait)
        now = time.monotonic()
        for fd in readable:
            if fd == control:
                chunk = os.read(control, 65536)
                if not chunk:
                    return
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    try:
                        answer = switch.command(line.decode())
                    except (ValueError, KeyError, TypeError) as exc:
                        answer = {"error": str(exc)}
                    print(json.dumps(answer), flush=True)
                continue
            for _ in range(64):  # drain a burst before looking at the others again
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                except OSError:  # the device's link is down in its namespace
                    break
                switch.take(by_fd[fd], frame, now)


class WireError(RuntimeError):
    pass


class Wire:
    """The switch process, and its commands. Directions are (from host, to host) pairs of the
    device names it was started with."""

    def __init__(self, devices: Sequence[str], seed: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.wire", *devices],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline().strip()
        if first != "ready":
            self.close()
            msg = f"the wire did not start (it said {first!r}): TUN/TAP is needed (/dev/net/tun)"
            raise WireError(msg)
        self.send({"op": "seed", "seed": seed})

    def send(self, order: Mapping[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(order) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline() or '{"error": "the wire ended"}')
        if "error" in answer:
            raise WireError(answer["error"])
        return answer

    def shape(self, pairs: Sequence[tuple[str, str]], shape: Shape) -> None:
        self.send({"op": "shape", "pairs": pairs, **shape.__dict__})

    def cut(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.send({"op": "cut", "pairs": pairs})

    def heal(self, pairs: Sequence[tuple[str, str]] = ()) -> None:
        """End the shapes and cuts of `pairs` (none named: of every direction)."""
        self.send({"op": "heal", "pairs": pairs})

    def down(self, *hosts: str) -> None:
        self.send({"op": "down", "hosts": hosts})

    def up(self, *hosts: str) -> None:
        self.send({"op": "up", "hosts": hosts})

    def counts(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.send({"op": "counts"}).items() if k != "ok"}

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


if __name__ == "__main__":
    serve(sys.argv[1:])

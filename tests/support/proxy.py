"""`Proxy`: a TCP proxy on 127.0.0.1 that a test puts between a node and what it connects to (its
registry, a sink database, another member's cluster port), to make network faults on loopback:

- `cut()`: every connection is closed with a reset (RST) on both sides, and new ones are reset as
  soon as they are accepted: the far end went away (a database down, a firewall rejecting);
- `blackhole()`: connections stay open and new ones are accepted, but nothing is forwarded
  either way: what is sent waits in the kernel's buffers as unacknowledged packets wait for
  retransmission in a real partition, and arrives once the partition heals (a connection
  accepted meanwhile reaches the target only then);
- `fin()`: every open connection is closed in order (FIN to both sides), as a live process
  closes a socket after an error; new connections are forwarded as before;
- `heal()`: back to forwarding; `close()`: for good.

`proxied(url, proxy)` is a database URL with its host and port replaced by the proxy's.
Threads only (two per connection, one per direction); imports nothing of ours.
"""

from __future__ import annotations

import logging
import select
import socket
import struct
import threading

from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

OPEN, CUT, BLACKHOLE = "open", "cut", "blackhole"
_POLL = 0.05  # how often a paused or idle pump looks at the proxy's state
_DEFAULT_PORTS = {"mysql": 3306, "mariadb": 3306, "postgresql": 5432}


def _reset(sock: socket.socket) -> None:
    """Close `sock` so that the peer gets RST, not FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class _Link:
    """One proxied connection: the client's socket and, once connected, the target's."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.dead = False
        self.busy = 0  # pumps between reading a chunk and having written it
        self.pumps = 2  # still running; the sockets close when both ended

    def kill(self) -> None:
        """Reset both sides (idempotent; the caller holds the proxy's lock)."""
        if self.dead:
            return
        self.dead = True
        for sock in (self.client, self.upstream):
            if sock is not None:
                _reset(sock)


class Proxy:
    """Forwards connections to `target` ("host:port") from `address` (127.0.0.1, a free port)."""

    def __init__(self, target: str, name: str = "") -> None:
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        self.name = name or target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.address = f"127.0.0.1:{self.port}"
        self.state = OPEN
        self._cond = threading.Condition()
        self._links: set[_Link] = set()
        self._closed = False
        self.accepted = 0
        self.reset = 0  # connections reset by `cut()` or refused while cut
        threading.Thread(target=self._accept_loop, name=f"proxy-{self.name}", daemon=True).start()

    # ---- faults ---------------------------------------------------------------------------------

    def cut(self) -> None:
        with self._cond:
            self.state = CUT
            for link in list(self._links):
                link.kill()
                self.reset += 1
            self._links.clear()
            self._cond.notify_all()

    def blackhole(self) -> None:
        """From the return on, nothing more is forwarded (a chunk being written finishes first)."""
        with self._cond:
            self.state = BLACKHOLE
            self._cond.wait_for(lambda: all(link.busy == 0 for link in self._links), 2.0)

    def fin(self) -> int:
        """Close every open connection in order (FIN both ways); how many."""
        with self._cond:
            links = list(self._links)
            for link in links:
                link.dead = True
                for sock in (link.client, link.upstream):
                    if sock is not None:
                        try:
                            sock.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        sock.close()
            self._links.clear()
            self._cond.notify_all()
            return len(links)

    def heal(self) -> None:
        with self._cond:
            self.state = OPEN
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self.state = CUT
            for link in list(self._links):
                link.kill()
            self._links.clear()
            self._cond.notify_all()
        self._listener.close()

    # ---- forwarding -------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                if self._closed:
                    return
                continue
            with self._cond:
                if self.state == CUT:
                    _reset(client)
                    self.reset += 1
                    continue
                self.accepted += 1
                link = _Link(client)
                self._links.add(link)
            threading.Thread(target=self._connect, args=(link,), daemon=True).start()

    def _connect(self, link: _Link) -> None:
        with self._cond:  # a partition: the target hears of the connection only once it heals
            self._cond.wait_for(lambda: self.state != BLACKHOLE or link.dead)
            if link.dead or self.state == CUT:
                link.kill()
                self._links.discard(link)
                return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
            for sock in (link.client, upstream):  # as the members' own sockets: no Nagle delay in between
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            with self._cond:
                link.kill()
                self._links.discard(link)
            return
        with self._cond:
            if link.dead:
                _reset(upstream)
                return
            link.upstream = upstream
        for src, dst in ((link.client, upstream), (upstream, link.client)):
            threading.Thread(target=self._pump, args=(link, src, dst), daemon=True).start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                with self._cond:
                    while self.state == BLACKHOLE and not link.dead:
                        self._cond.wait(_POLL)
                    if link.dead:
                        return
                readable, _, _ = select.select([src], [], [], _POLL)
                if not readable:
                    continue
                with self._cond:  # what arrives during a partition stays in the kernel until it heals
                    if self.state == BLACKHOLE or link.dead:
                        continue
                    link.busy += 1
                try:
                    data = src.recv(65536)
                    if data:
                        dst.sendall(data)
                    else:
                        dst.shutdown(socket.SHUT_WR)  # pass the FIN on; the other way may go on
                        return
                finally:
                    with self._cond:
                        link.busy -= 1
                        self._cond.notify_all()
        except (OSError, ValueError):  # a side reset (or `cut` closed the sockets): reset the other
            with self._cond:
                link.kill()
                self._links.discard(link)
        finally:
            with self._cond:
                link.pumps -= 1
                if link.pumps == 0 and not link.dead:
                    link.dead = True
                    link.client.close()
                    if link.upstream is not None:
                        link.upstream.close()
                    self._links.discard(link)


def proxied(url: str, proxy: Proxy) -> str:
    """Database `url` with its host and port replaced by `proxy`'s."""
    return make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)


def target_of(url: str) -> str:
    """The "host:port" database `url` connects to."""
    parsed = make_url(url)
    port = parsed.port or _DEFAULT_PORTS.get(parsed.get_backend_name(), 0)
    return f"{parsed.host or '127.0.0.1'}:{port}"

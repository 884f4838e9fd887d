"""`Credentials`: user name and password checks against the registry, with a short-lived cache.

scrypt makes one check cost tens of milliseconds on purpose; HTTP clients send their
credentials with every request, so a successful check is remembered (as a salted digest,
never the password) for `ttl` seconds or until the users change in the registry.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable


class Credentials:
    def __init__(self, verify: Callable[[str, str], bool], ttl: float = 60.0) -> None:
        self._verify = verify
        self._ttl = ttl
        self._salt = secrets.token_bytes(16)
        self._lock = threading.Lock()
        self._good: dict[str, tuple[bytes, float]] = {}

    def check(self, username: str, password: str) -> bool:
        digest = hashlib.sha256(self._salt + password.encode("utf-8", "surrogatepass")).digest()
        now = time.monotonic()
        with self._lock:
            cached = self._good.get(username)
        if cached is not None and cached[1] > now and hmac.compare_digest(cached[0], digest):
            return True
        if not self._verify(username, password):
            return False
        with self._lock:
            self._good[username] = (digest, now + self._ttl)
        return True

    def forget(self) -> None:
        """Drop every cached check (users or passwords changed)."""
        with self._lock:
            self._good.clear()

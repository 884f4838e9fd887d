"""`Credentials`: user name and password checks against the registry, cached and throttled.

scrypt makes one check cost tens of milliseconds of CPU on purpose. Two consequences:

- HTTP clients send their credentials with every request, so a successful check is
  remembered (as a salted digest, never the password) for `ttl` seconds or until the users
  change in the registry. A remembered pair is accepted without scrypt and without looking
  at the throttle, so a guesser cannot lock out a client that is already logged in.
- Password guessing is CPU an attacker spends of ours. `LoginThrottle` counts failures per
  client address and per user name; past `max_failures` within the window, attempts are
  refused without running scrypt for a lockout that doubles with every further failure up
  to `max_lockout_seconds`. At most `max_concurrent_checks` scrypt runs at a time, so many
  addresses guessing at once cannot take every core from event processing either.

Every refusal is one log line with the client's address (a locked-out address is reported
once per lockout), at most `_LOG_BURST` lines per interval in all, with the count of those
held back. Client addresses count per `client_key` (IPv6 per /64); a user name longer than
64 characters is cut short in logs and keys.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from adapters.addresses import client_key
from adapters.throttle import Burst
from app.config import Login

log = logging.getLogger(__name__)

_LOG_BURST = 30  # refusal lines per interval, all clients together; the rest at DEBUG
_LOG_INTERVAL = 10.0
_MAX_KNOWN = 100_000
_NAME_CHARS = 64


class Outcome(enum.Enum):
    ACCEPTED = "accepted"
    WRONG = "wrong"  # unknown user or wrong password
    THROTTLED = "throttled"  # too many failures: refused without checking
    BUSY = "busy"  # no password check free within `check_wait_seconds`: the node, not the client


@dataclass(frozen=True)
class Verdict:
    """What a login attempt came to; `retry_after` (seconds) is set when THROTTLED."""

    outcome: Outcome
    message: str = ""
    retry_after: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.ACCEPTED


ACCEPTED = Verdict(Outcome.ACCEPTED)


@dataclass(frozen=True)
class ThrottleSettings:
    max_failures: int = 5  # failures within `window_seconds` before a lockout
    window_seconds: float = 60.0
    lockout_seconds: float = 1.0  # the first lockout; each further failure doubles it
    max_lockout_seconds: float = 60.0
    max_concurrent_checks: int = 1  # password hashes computed at once, node-wide
    check_wait_seconds: float = 5.0  # how long an attempt may wait for a free check


class _Record:
    __slots__ = ("failures", "first", "locked_until", "lockout", "refused")

    def __init__(self, now: float) -> None:
        self.failures = 0
        self.first = now
        self.locked_until = 0.0
        self.lockout = 0.0
        self.refused = 0


class LoginThrottle:
    """Failure counts and lockouts per key ("address 1.2.3.4", "user admin"). Thread-safe.

    Records expire a window after their last lockout ended, so the table holds only keys
    that failed recently; it is also capped at `max_keys` (the oldest records go first),
    so an attacker rotating addresses cannot grow it without bound.
    """

    def __init__(
        self,
        settings: ThrottleSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ) -> None:
        self.settings = settings or ThrottleSettings()
        self._clock = clock
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}

    def locked(self, keys: tuple[str, ...]) -> tuple[str, float] | None:
        """The first of `keys` that is locked out now and the seconds left, else None."""
        now = self._clock()
        with self._lock:
            for key in keys:
                record = self._records.get(key)
                if record is not None and record.locked_until > now:
                    record.refused += 1
                    return key, record.locked_until - now
        return None

    def failed(self, keys: tuple[str, ...]) -> float:
        """Count a failure against every key; the longest lockout it started (0: none)."""
        s = self.settings
        now = self._clock()
        longest = 0.0
        with self._lock:
            self._expire(now)
            for key in keys:
                record = self._records.pop(key, None) or _Record(now)
                self._records[key] = record  # re-inserted: the dict stays ordered by last failure
                if now - record.first > s.window_seconds and record.locked_until <= now:
                    record.failures, record.first = 0, now
                record.failures += 1
                if record.failures >= s.max_failures:
                    record.lockout = min(
                        s.max_lockout_seconds, record.lockout * 2 if record.lockout else s.lockout_seconds
                    )
                    record.locked_until = now + record.lockout
                    record.refused = 0
                    longest = max(longest, record.lockout)
        return longest

    def succeeded(self, keys: tuple[str, ...]) -> None:
        with self._lock:
            for key in keys:
                self._records.pop(key, None)

    def refused_since_lockout(self, key: str) -> int:
        with self._lock:
            record = self._records.get(key)
            return 0 if record is None else record.refused

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def _expire(self, now: float) -> None:
        window = self.settings.window_seconds
        stale = [
            key
            for key, r in self._records.items()
            if r.locked_until <= now and now - max(r.first, r.locked_until) > window
        ]
        for key in stale:
            del self._records[key]
        while len(self._records) >= self._max_keys:
            del self._records[next(iter(self._records))]


class Credentials:
    """Checks logins for every receiver of the node (Thrift `connect`, HTTP basic).

    A user name under lockout (guessed from many addresses) still logs in from an address
    where it logged in successfully within `known_seconds`: a guesser elsewhere must not lock
    out the publishers that use the account every day.
    """

    def __init__(
        self,
        verify: Callable[[str, str], bool],
        ttl: float = 60.0,
        throttle: LoginThrottle | None = None,
        clock: Callable[[], float] = time.monotonic,
        known_seconds: float = 7 * 24 * 3600.0,
    ) -> None:
        self._verify = verify
        self._ttl = ttl
        self._clock = clock
        self._known_seconds = known_seconds
        self._salt = secrets.token_bytes(16)
        self._lock = threading.Lock()
        self._good: dict[str, tuple[bytes, float]] = {}
        self._known: dict[tuple[str, str], float] = {}  # (user, client) -> last successful login
        self.throttle = throttle if throttle is not None else LoginThrottle(clock=clock)
        self._checks = threading.BoundedSemaphore(self.throttle.settings.max_concurrent_checks)
        self._log_lines = Burst(_LOG_BURST, _LOG_INTERVAL, clock)

    def check(self, username: str, password: str, address: str = "", via: str = "login") -> Verdict:
        """Whether `username`/`password` may log in from `address` (`via` names the receiver
        in log lines: "thrift", "http")."""
        digest = hashlib.sha256(self._salt + password.encode("utf-8", "surrogatepass")).digest()
        now = self._clock()
        if self._remembered(username, digest, now):
            return ACCEPTED
        client = client_key(address) if address else "?"
        name = _shown(username)
        keys = (f"address {client}", f"user {name}")
        with self._lock:
            known = now - self._known.get((username, client), -math.inf) < self._known_seconds
        checked = keys[:1] if known else keys
        locked = self.throttle.locked(checked)
        if locked is not None:
            return self._throttled(name, address, via, *locked)
        if not self._checks.acquire(timeout=self.throttle.settings.check_wait_seconds):
            self._log(
                "%s login of user %r from %s refused: the node is busy checking passwords", via, name, address
            )
            return Verdict(Outcome.BUSY, "too many logins at once; try again shortly", 1.0)
        try:
            if self._remembered(username, digest, now):  # checked by another attempt while this one waited
                return ACCEPTED
            locked = self.throttle.locked(checked)  # failures while this attempt waited its turn
            good = locked is None and self._verify(username, password)
        finally:
            self._checks.release()
        if locked is not None:
            return self._throttled(name, address, via, *locked)
        if not good:
            lockout = self.throttle.failed(keys)
            suffix = f"; further attempts refused for {lockout:g} s" if lockout else ""
            self._log(
                "%s login of user %r from %s refused: wrong user name or password%s",
                via,
                name,
                address,
                suffix,
            )
            return Verdict(Outcome.WRONG, "wrong user name or password")
        self.throttle.succeeded(keys)
        with self._lock:
            self._good[username] = (digest, now + self._ttl)
            if len(self._known) >= _MAX_KNOWN:
                self._known.clear()
            self._known[(username, client)] = now
        return ACCEPTED

    def _remembered(self, username: str, digest: bytes, now: float) -> bool:
        with self._lock:
            cached = self._good.get(username)
            if cached is not None and cached[1] > now and hmac.compare_digest(cached[0], digest):
                self._good[username] = (digest, now + self._ttl)  # kept while in use
                return True
        return False

    def _throttled(self, name: str, address: str, via: str, key: str, left: float) -> Verdict:
        if self.throttle.refused_since_lockout(key) == 1:  # once per lockout, not per attempt
            self._log(
                "%s login of user %r from %s refused: %s is locked out for %.1f s after repeated failures",
                via,
                name,
                address,
                key,
                left,
            )
        message = f"too many failed logins ({key}); try again in {max(1, round(left))} s"
        return Verdict(Outcome.THROTTLED, message, left)

    def _log(self, message: str, via: str, name: str, address: str, *rest: object) -> None:
        allowed, held = self._log_lines.allow()
        if allowed:
            suffix = f" ({held} more refusals not logged)" if held else ""
            log.warning(message + suffix, via, name, address or "?", *rest)
        else:
            log.debug(message, via, name, address or "?", *rest)

    def forget(self) -> None:
        """Drop every cached check (users or passwords changed)."""
        with self._lock:
            self._good.clear()


def login_throttle(login: Login) -> LoginThrottle:
    """The throttle the `[login]` section configures."""
    return LoginThrottle(
        ThrottleSettings(
            max_failures=login.max_failures,
            window_seconds=login.window_seconds,
            lockout_seconds=login.lockout_seconds,
            max_lockout_seconds=login.max_lockout_seconds,
            max_concurrent_checks=login.max_concurrent_checks,
            check_wait_seconds=login.check_wait_seconds,
        )
    )


def _shown(username: str) -> str:
    """A user name as logs and throttle keys show it: a hostile one may be 64 KB long."""
    return username if len(username) <= _NAME_CHARS else username[:_NAME_CHARS] + "…"

"""`Credentials`: successful checks are cached for `ttl` seconds, failures never are and are throttled."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from app.auth import Credentials, LoginThrottle, Outcome, ThrottleSettings, Verdict

USERS = {"admin": "s3cret", "bob": "hunter2"}


class Verifier:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.users = dict(USERS)

    def __call__(self, username: str, password: str) -> bool:
        self.calls.append((username, password))
        return self.users.get(username) == password


def test_a_successful_check_is_verified_once() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert [credentials.check("admin", "s3cret").ok for _ in range(5)] == [True] * 5
    assert verify.calls == [("admin", "s3cret")]


def test_failures_are_never_cached() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert credentials.check("admin", "wrong").ok is False
    assert credentials.check("admin", "wrong").ok is False
    assert credentials.check("nobody", "s3cret").ok is False
    assert verify.calls == [("admin", "wrong"), ("admin", "wrong"), ("nobody", "s3cret")]


def test_a_different_password_for_a_cached_user_is_verified_again() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert credentials.check("admin", "s3cret").ok is True
    assert credentials.check("admin", "S3cret").ok is False
    assert credentials.check("admin", "s3cret").ok is True  # the good entry survives a wrong attempt
    assert verify.calls == [("admin", "s3cret"), ("admin", "S3cret")]


def test_a_changed_password_replaces_the_cached_one() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert credentials.check("admin", "s3cret").ok is True
    verify.users["admin"] = "new"
    assert credentials.check("admin", "new").ok is True
    assert credentials.check("admin", "s3cret").ok is False  # no longer cached, and no longer valid
    assert verify.calls == [("admin", "s3cret"), ("admin", "new"), ("admin", "s3cret")]


def test_the_cache_is_per_user() -> None:
    verify = Verifier()
    verify.users["eve"] = "s3cret"
    credentials = Credentials(verify)
    assert credentials.check("admin", "s3cret").ok is True
    assert credentials.check("eve", "s3cret").ok is True
    assert credentials.check("bob", "s3cret").ok is False
    assert verify.calls == [("admin", "s3cret"), ("eve", "s3cret"), ("bob", "s3cret")]


def test_forget_drops_every_cached_check() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    credentials.check("admin", "s3cret")
    credentials.check("bob", "hunter2")
    credentials.forget()
    verify.users.pop("admin")  # the user was deleted in the registry
    assert credentials.check("admin", "s3cret").ok is False
    assert credentials.check("bob", "hunter2").ok is True
    assert len(verify.calls) == 4


def test_a_cached_check_expires_after_the_ttl_unless_it_is_in_use() -> None:
    verify, clock = Verifier(), Clock()
    credentials = Credentials(verify, ttl=60, clock=clock)
    assert credentials.check("admin", "s3cret").ok is True
    for _ in range(5):  # a client logging in every 50 s stays remembered
        clock.now += 50
        assert credentials.check("admin", "s3cret").ok is True
    assert len(verify.calls) == 1
    clock.now += 61
    verify.users["admin"] = "rotated"
    assert credentials.check("admin", "s3cret").ok is False
    assert len(verify.calls) == 2


def test_the_password_is_not_kept() -> None:
    credentials = Credentials(Verifier())
    credentials.check("admin", "s3cret")
    assert "s3cret" not in repr(vars(credentials))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def throttled(verify: Verifier, clock: Clock, **settings: float) -> Credentials:
    throttle = LoginThrottle(ThrottleSettings(**settings), clock=clock)  # type: ignore[arg-type]
    return Credentials(verify, throttle=throttle, clock=clock)


def test_an_address_that_keeps_failing_is_locked_out_without_running_the_check() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=3, lockout_seconds=2)
    verdicts = [credentials.check("admin", f"guess{i}", "10.0.0.9") for i in range(5)]
    assert [v.outcome for v in verdicts] == [Outcome.WRONG] * 3 + [Outcome.THROTTLED] * 2
    assert len(verify.calls) == 3  # the refused attempts cost no password hash
    assert "10.0.0.9" in verdicts[-1].message and 0 < verdicts[-1].retry_after <= 2
    clock.now += 2.1
    assert credentials.check("admin", "s3cret", "10.0.0.9").ok  # the lockout ran out


def test_lockouts_double_with_each_further_failure_up_to_the_cap() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=2, lockout_seconds=1, max_lockout_seconds=3)
    retry_after = []
    for _ in range(4):
        credentials.check("admin", "a", "10.0.0.9")
        credentials.check("admin", "b", "10.0.0.9")
        retry_after.append(credentials.check("admin", "c", "10.0.0.9").retry_after)
        clock.now += 10
    assert retry_after == [1, 2, 3, 3]


def test_a_user_guessed_from_many_addresses_is_locked_but_other_users_are_not() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=3)
    for i in range(3):
        credentials.check("admin", "guess", f"10.0.0.{i}")
    assert credentials.check("admin", "s3cret", "10.0.0.200").outcome is Outcome.THROTTLED
    assert credentials.check("bob", "hunter2", "10.0.0.200").ok


def test_a_user_under_lockout_still_logs_in_where_it_logged_in_before() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=3)
    assert credentials.check("admin", "s3cret", "10.0.0.1").ok  # the publisher, a day ago
    clock.now += 86_400
    for i in range(3):
        credentials.check("admin", "guess", f"203.0.113.{i}")  # a guesser elsewhere
    assert credentials.check("admin", "s3cret", "10.0.0.99").outcome is Outcome.THROTTLED
    assert credentials.check("admin", "s3cret", "10.0.0.1").ok  # its cache ran out; still welcome


def test_an_ipv6_client_is_throttled_per_slash_64() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=3)
    for i in range(3):
        credentials.check(f"user{i}", "guess", f"2001:db8::{i + 1}")
    assert credentials.check("bob", "hunter2", "2001:db8::abcd").outcome is Outcome.THROTTLED
    assert credentials.check("bob", "hunter2", "2001:db8:0:1::1").ok


def test_refusal_lines_are_bounded_and_names_cut_short(caplog: pytest.LogCaptureFixture) -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=1000)
    with caplog.at_level(logging.DEBUG, logger="app.auth"):
        for i in range(100):
            credentials.check("x" * 10_000, "guess", f"10.9.{i}.1")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert 0 < len(warnings) <= 30
    assert max(len(line) for line in warnings) < 300


def test_a_logged_in_client_is_not_locked_out_by_a_guesser_from_its_address() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=2)
    assert credentials.check("admin", "s3cret", "127.0.0.1").ok
    for _ in range(5):
        credentials.check("admin", "guess", "127.0.0.1")
    assert credentials.check("admin", "s3cret", "127.0.0.1").ok  # remembered: no check, no throttle


def test_a_success_clears_the_failures_of_its_address_and_user() -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=3)
    credentials.check("admin", "typo", "10.0.0.1")
    credentials.check("admin", "typo", "10.0.0.1")
    assert credentials.check("admin", "s3cret", "10.0.0.1").ok
    credentials.forget()
    credentials.check("admin", "typo", "10.0.0.1")
    assert credentials.check("admin", "s3cret", "10.0.0.1").ok


def test_failures_older_than_the_window_are_forgotten() -> None:
    clock = Clock()
    throttle = LoginThrottle(ThrottleSettings(max_failures=3, window_seconds=10), clock=clock)
    throttle.failed(("address a",))
    throttle.failed(("address a",))
    clock.now += 11
    assert throttle.failed(("address a",)) == 0
    assert throttle.locked(("address a",)) is None
    clock.now += 11
    throttle.failed(("address b",))
    assert len(throttle) == 1  # "address a" expired


def test_the_throttle_table_is_bounded() -> None:
    throttle = LoginThrottle(clock=Clock(), max_keys=100)
    for i in range(1000):
        throttle.failed((f"address 10.0.{i // 256}.{i % 256}",))
    assert len(throttle) <= 100


def test_refusals_are_logged_with_the_address(caplog: pytest.LogCaptureFixture) -> None:
    verify, clock = Verifier(), Clock()
    credentials = throttled(verify, clock, max_failures=2)
    with caplog.at_level(logging.WARNING, logger="app.auth"):
        for _ in range(6):
            credentials.check("admin", "guess", "10.1.2.3", "http")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3  # two wrong passwords, then one line for the whole lockout
    assert all("10.1.2.3" in line and line.startswith("http login") for line in lines)


def test_an_attempt_that_waited_for_its_turn_is_refused_if_a_lockout_began_meanwhile() -> None:
    release = threading.Event()
    calls: list[str] = []

    def slow_verify(username: str, password: str) -> bool:
        calls.append(password)
        release.wait(5)
        return False

    credentials = Credentials(slow_verify, throttle=LoginThrottle(ThrottleSettings(max_failures=2)))
    first = threading.Thread(target=credentials.check, args=("admin", "a", "10.0.0.5"))
    first.start()
    while not calls:
        time.sleep(0.001)
    verdicts: list[Verdict] = []
    second = threading.Thread(target=lambda: verdicts.append(credentials.check("admin", "b", "10.0.0.5")))
    second.start()
    credentials.throttle.failed(("address 10.0.0.5",))
    credentials.throttle.failed(("address 10.0.0.5",))  # locked while the second attempt waits
    release.set()
    first.join(5)
    second.join(5)
    assert verdicts[0].outcome is Outcome.THROTTLED
    assert calls == ["a"]


def test_attempts_queued_behind_a_check_of_the_same_password_need_no_check_of_their_own() -> None:
    verify = Verifier()
    started = threading.Event()

    def slow(username: str, password: str) -> bool:
        started.set()
        time.sleep(0.2)
        return verify(username, password)

    credentials = Credentials(slow)
    verdicts: list[Verdict] = []
    first = threading.Thread(target=lambda: verdicts.append(credentials.check("admin", "s3cret", "10.0.0.1")))
    first.start()
    started.wait(5)
    others = [
        threading.Thread(target=lambda: verdicts.append(credentials.check("admin", "s3cret", "10.0.0.1")))
        for _ in range(5)
    ]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join(5)
    assert [v.outcome for v in verdicts] == [Outcome.ACCEPTED] * 6
    assert len(verify.calls) == 1


def test_no_free_check_within_the_wait_is_busy_not_a_lockout() -> None:
    release = threading.Event()
    calls: list[str] = []

    def stuck(username: str, password: str) -> bool:
        calls.append(password)
        release.wait(5)
        return False

    credentials = Credentials(stuck, throttle=LoginThrottle(ThrottleSettings(check_wait_seconds=0.05)))
    holder = threading.Thread(target=credentials.check, args=("admin", "a", "10.0.0.1"))
    holder.start()
    while not calls:
        time.sleep(0.001)
    verdict = credentials.check("bob", "b", "10.0.0.2")
    release.set()
    holder.join(5)
    assert verdict.outcome is Outcome.BUSY and verdict.retry_after > 0

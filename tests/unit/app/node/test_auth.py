"""`Credentials`: successful checks are cached for `ttl` seconds, failures never are."""

from __future__ import annotations

import time

from app.node.auth import Credentials

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
    assert [credentials.check("admin", "s3cret") for _ in range(5)] == [True] * 5
    assert verify.calls == [("admin", "s3cret")]


def test_failures_are_never_cached() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert credentials.check("admin", "wrong") is False
    assert credentials.check("admin", "wrong") is False
    assert credentials.check("nobody", "s3cret") is False
    assert verify.calls == [("admin", "wrong"), ("admin", "wrong"), ("nobody", "s3cret")]


def test_a_different_password_for_a_cached_user_is_verified_again() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert credentials.check("admin", "s3cret") is True
    assert credentials.check("admin", "S3cret") is False
    assert credentials.check("admin", "s3cret") is True  # the good entry survives a wrong attempt
    assert verify.calls == [("admin", "s3cret"), ("admin", "S3cret")]


def test_a_changed_password_replaces_the_cached_one() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    assert credentials.check("admin", "s3cret") is True
    verify.users["admin"] = "new"
    assert credentials.check("admin", "new") is True
    assert credentials.check("admin", "s3cret") is False  # no longer cached, and no longer valid
    assert verify.calls == [("admin", "s3cret"), ("admin", "new"), ("admin", "s3cret")]


def test_the_cache_is_per_user() -> None:
    verify = Verifier()
    verify.users["eve"] = "s3cret"
    credentials = Credentials(verify)
    assert credentials.check("admin", "s3cret") is True
    assert credentials.check("eve", "s3cret") is True
    assert credentials.check("bob", "s3cret") is False
    assert verify.calls == [("admin", "s3cret"), ("eve", "s3cret"), ("bob", "s3cret")]


def test_forget_drops_every_cached_check() -> None:
    verify = Verifier()
    credentials = Credentials(verify)
    credentials.check("admin", "s3cret")
    credentials.check("bob", "hunter2")
    credentials.forget()
    verify.users.pop("admin")  # the user was deleted in the registry
    assert credentials.check("admin", "s3cret") is False
    assert credentials.check("bob", "hunter2") is True
    assert len(verify.calls) == 4


def test_a_cached_check_expires_after_the_ttl() -> None:
    verify = Verifier()
    credentials = Credentials(verify, ttl=0.05)
    assert credentials.check("admin", "s3cret") is True
    assert credentials.check("admin", "s3cret") is True
    assert len(verify.calls) == 1
    time.sleep(0.08)
    verify.users["admin"] = "rotated"
    assert credentials.check("admin", "s3cret") is False
    assert len(verify.calls) == 2


def test_the_password_is_not_kept() -> None:
    credentials = Credentials(Verifier())
    credentials.check("admin", "s3cret")
    assert "s3cret" not in repr(vars(credentials))

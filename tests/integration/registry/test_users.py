"""Users and the admin bootstrap on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import threading

import pytest

from app.registry import Outcome, Registry, ValidationError


def test_first_start_creates_admin_with_a_random_password_shown_once(registry: Registry) -> None:
    password = registry.ensure_admin(None)
    assert password is not None and len(password) >= 16
    assert registry.verify_user("admin", password)
    assert not registry.verify_user("admin", password + "x")
    assert registry.ensure_admin(None) is None  # second start: nothing to do
    assert registry.verify_user("admin", password)


def test_first_start_takes_the_password_from_the_environment(registry: Registry) -> None:
    assert registry.ensure_admin("correct horse battery") is None
    assert registry.verify_user("admin", "correct horse battery")
    # an existing admin is never reset, whatever the environment says later
    assert registry.ensure_admin("another password") is None
    assert registry.verify_user("admin", "correct horse battery")


def test_passwords_are_salted_scrypt_and_checked(registry: Registry) -> None:
    assert registry.put_user("alice", "s3cret-pass") is Outcome.CREATED
    registry.put_user("bob", "s3cret-pass")
    alice, bob = registry.get_user("alice"), registry.get_user("bob")
    assert alice is not None and bob is not None
    assert alice.password_hash.startswith("scrypt$") and alice.password_hash != bob.password_hash
    assert "s3cret" not in repr(alice)
    assert not registry.verify_user("nobody", "s3cret-pass")
    with pytest.raises(ValidationError, match="at least 8 characters"):
        registry.put_user("carol", "short")
    assert registry.ensure_admin(None) is None  # there are users already


def test_nodes_starting_together_create_one_admin(registry_url: str) -> None:
    nodes = [Registry(registry_url) for _ in range(3)]
    nodes[0].migrate()
    start = threading.Barrier(len(nodes))
    passwords: list[str | None] = []

    def start_node(registry: Registry) -> None:
        start.wait()
        passwords.append(registry.ensure_admin(None))

    threads = [threading.Thread(target=start_node, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        generated = [p for p in passwords if p is not None]
        assert len(passwords) == 3 and len(generated) == 1
        assert nodes[1].verify_user("admin", generated[0])
        assert [u.name for u in nodes[2].list_users()] == ["admin"]
    finally:
        for node in nodes:
            node.close()

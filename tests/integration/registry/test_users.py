"""Users and the admin bootstrap on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from app.registry import InUseError, Outcome, Registry, ValidationError


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


def test_roles_change_without_the_password_and_the_last_admin_stays(registry: Registry) -> None:
    registry.put_user("alice", "s3cret-pass")
    assert registry.put_user("victor", "s3cret-pass", "viewer") is Outcome.CREATED
    victor = registry.get_user("victor")
    assert victor is not None and victor.role == "viewer" and not victor.admin
    assert registry.put_user("victor", None, "admin") is Outcome.UPDATED
    assert registry.verify_user("victor", "s3cret-pass")  # the password stayed
    with pytest.raises(ValidationError, match="role") as bad:
        registry.put_user("victor", None, "root")
    assert bad.value.field == "role"
    with pytest.raises(ValidationError, match="needs a password"):
        registry.put_user("newcomer", None)
    registry.put_user("victor", None, "viewer")
    with pytest.raises(InUseError, match="last admin"):
        registry.put_user("alice", None, "viewer")
    with pytest.raises(InUseError, match="last admin"):
        registry.delete_user("alice")
    alice = registry.get_user("alice")
    assert alice is not None and alice.admin


def test_api_tokens_are_shown_once_kept_as_digests_and_revoked(registry: Registry) -> None:
    registry.put_user("alice", "s3cret-pass")
    registry.put_user("bob", "s3cret-pass", "viewer")
    token, text = registry.create_token("alice", "deploy script")
    assert text.startswith("cep_") and token.id in text
    user = registry.token_user(text)
    assert user is not None and user.name == "alice"
    other, other_text = registry.create_token("bob", "")
    assert [t.id for t in registry.list_tokens("alice")] == [token.id]
    assert {t.id for t in registry.list_tokens()} == {token.id, other.id}
    with registry.engine.connect() as conn:
        stored = [str(v) for row in conn.execute(sa.text("SELECT * FROM cep_tokens")) for v in row]
    secret = text.removeprefix(f"cep_{token.id}_")
    assert len(secret) >= 40 and not any(secret in v for v in stored)  # only a digest is kept
    forged = text[:-1] + ("A" if text[-1] != "A" else "B")
    assert registry.token_user(forged) is None
    assert registry.token_user("not a token") is None
    assert registry.delete_token(token.id)
    assert registry.token_user(text) is None and not registry.delete_token(token.id)
    with pytest.raises(ValidationError, match="does not exist"):
        registry.create_token("nobody", "x")
    registry.delete_user("bob")  # a deleted user's tokens go with it
    assert registry.token_user(other_text) is None and registry.list_tokens() == []


def test_members_share_one_console_secret_made_once(registry_url: str) -> None:
    nodes = [Registry(registry_url) for _ in range(3)]
    nodes[0].migrate()
    start = threading.Barrier(len(nodes))
    secrets: list[str] = []

    def ask(registry: Registry) -> None:
        start.wait()
        secrets.append(registry.shared_secret("console.secret_key"))

    threads = [threading.Thread(target=ask, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert len(secrets) == 3 and len(set(secrets)) == 1 and len(secrets[0]) >= 32
        assert nodes[1].shared_secret("console.secret_key") == secrets[0]
        assert nodes[1].shared_secret("another") != secrets[0]
    finally:
        for node in nodes:
            node.close()

"""The shared session table (§4): created by connect, gone after a fixed lifetime."""

from __future__ import annotations

from adapters.thrift.sessions import Sessions


def test_sessions_expire_after_creation_regardless_of_use() -> None:
    now = [0.0]
    sessions = Sessions(60, clock=lambda: now[0])
    session = sessions.create("admin")
    assert len(session) == 36 and sessions.user(session) == "admin"
    now[0] = 59.9
    assert sessions.valid(session)
    now[0] = 60.0
    assert not sessions.valid(session)


def test_expired_sessions_are_purged_when_new_ones_are_created() -> None:
    now = [0.0]
    sessions = Sessions(10, clock=lambda: now[0])
    for _ in range(100):
        sessions.create("u")
    now[0] = 10.0
    sessions.create("u")
    assert len(sessions) == 1


def test_removed_and_unknown_sessions_are_invalid() -> None:
    sessions = Sessions(60)
    session = sessions.create("admin")
    assert sessions.remove(session)
    assert not sessions.valid(session)
    assert not sessions.valid(None)
    assert not sessions.remove(None)

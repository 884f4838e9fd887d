"""`tests.support.dbservers`, on MariaDB and PostgreSQL: a server of the test's own keeps its
committed rows (and loses the uncommitted ones) through kill -9 and a restart; paused, it lets
neither a new connection nor a query through until it is resumed; one that cannot start fails
with its log.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from tests.support.dbservers import MARIADBD, POSTGRES, OwnServer, own_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

KINDS = [
    pytest.param("mariadb", marks=pytest.mark.mysql),
    pytest.param("postgres", marks=pytest.mark.postgres),
]
BINARIES = {"mariadb": MARIADBD, "postgres": POSTGRES}
QUICK = {"mariadb": {"connect_timeout": 1, "read_timeout": 1}, "postgres": {"connect_timeout": 1}}


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    assert os.access(BINARIES[name], os.X_OK), f"{BINARIES[name]} is not installed (the Makefile installs it)"
    return name


@pytest.fixture
def server(kind: str, tmp_path: Path) -> Iterator[OwnServer]:
    with own_server(kind, tmp_path) as server:
        yield server


def engine_of(server: OwnServer, **connect_args: Any) -> sa.Engine:
    return sa.create_engine(server.url, poolclass=NullPool, connect_args=connect_args)


def test_committed_rows_survive_kill_9(server: OwnServer) -> None:
    engine = engine_of(server)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE survivors (k INT PRIMARY KEY)"))
            conn.execute(sa.text("INSERT INTO survivors VALUES (1)"))
        open_transaction = engine.connect()
        open_transaction.execute(sa.text("INSERT INTO survivors VALUES (2)"))
        pid = server.pid
        assert pid is not None

        server.kill()
        open_transaction.invalidate()
        open_transaction.close()
        assert server.pid is None and not os.path.exists(f"/proc/{pid}")
        with pytest.raises(sa.exc.OperationalError):
            engine.connect()

        server.start()
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT k FROM survivors")).scalars().all() == [1]
        assert server.pid != pid
    finally:
        engine.dispose()


def test_a_paused_server_answers_nothing_until_resumed(kind: str, server: OwnServer) -> None:
    engine, quick = engine_of(server), engine_of(server, **QUICK[kind])
    answers: list[int] = []
    try:
        with engine.connect() as conn:
            server.pause()
            try:
                started = time.monotonic()
                with pytest.raises(sa.exc.OperationalError):
                    quick.connect()
                waited = time.monotonic() - started
                assert 0.9 < waited < 5, f"a connection to the paused server ended after {waited:.2f} s"

                query = threading.Thread(
                    target=lambda: answers.append(conn.execute(sa.text("SELECT 1")).scalar_one()), daemon=True
                )
                query.start()
                query.join(1.0)
                assert query.is_alive() and answers == []
            finally:
                server.resume()
            query.join(5.0)
            assert answers == [1]
        with quick.connect() as conn:
            assert conn.execute(sa.text("SELECT 2")).scalar_one() == 2
    finally:
        engine.dispose()
        quick.dispose()


def test_a_server_that_cannot_start_fails_with_its_log(kind: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = int(taken.getsockname()[1])
        with pytest.raises(AssertionError, match=f"{kind} on 127.0.0.1:{port} exited") as failure:
            with own_server(kind, tmp_path, port=port):
                pass
    assert "Address already in use" in str(failure.value) or "could not bind" in str(failure.value)

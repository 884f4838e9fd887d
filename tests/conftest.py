"""Shared test options and fixtures.

Integration tests talk to real servers on 127.0.0.1 (MariaDB, PostgreSQL). A test whose
server is unreachable skips with the reason — unless `--require-services` is given (as
`make test` and CI do), which turns the skip into a failure.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

DEFAULT_MYSQL = "mysql+pymysql://root@127.0.0.1:3306/test"
DEFAULT_POSTGRES = "postgresql+psycopg2://postgres@127.0.0.1:5432/test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-services", action="store_true", help="fail (not skip) when a test's server is missing"
    )
    parser.addoption(
        "--mysql-url", default=DEFAULT_MYSQL, help="SQLAlchemy URL of the MariaDB/MySQL test database"
    )
    parser.addoption(
        "--postgres-url", default=DEFAULT_POSTGRES, help="SQLAlchemy URL of the PostgreSQL test database"
    )


def _reachable(url: str) -> bool:
    parsed = urlparse(url.replace("+pymysql", "").replace("+psycopg2", ""))
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 0), timeout=2):
            return True
    except OSError:
        return False


def _service(request: pytest.FixtureRequest, option: str, name: str) -> str:
    url = str(request.config.getoption(option))
    if not _reachable(url):
        message = f"{name} is not reachable at {url}"
        if request.config.getoption("--require-services"):
            pytest.fail(message + " (--require-services)")
        pytest.skip(message)
    return url


@pytest.fixture(scope="session")
def mysql_url(request: pytest.FixtureRequest) -> str:
    return _service(request, "--mysql-url", "MariaDB/MySQL")


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> str:
    return _service(request, "--postgres-url", "PostgreSQL")


@pytest.fixture(params=["sqlite", "mysql", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Each of the three registry databases in turn (the test must clean up its tables)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'cepheus.db'}"
    elif request.param == "mysql":
        yield request.getfixturevalue("mysql_url")
    else:
        yield request.getfixturevalue("postgres_url")

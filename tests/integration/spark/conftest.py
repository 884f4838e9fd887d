"""One Spark session (`local[2]`) for every Spark test: starting Spark costs seconds.

Without pyspark or Java the tests skip with the reason, unless `--require-services`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MASTER = "local[2]"


def _missing(request: pytest.FixtureRequest, message: str) -> None:
    if request.config.getoption("--require-services"):
        pytest.fail(message + " (--require-services)")
    pytest.skip(message)


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[SparkSession]:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _missing(request, "pyspark is not installed (pip install 'cepheus[spark]')")
    if shutil.which("java") is None:
        _missing(request, "Spark needs Java, and there is no `java` on PATH")
    from app.spark.session import spark_session

    session = spark_session(MASTER, "cepheus tests")
    yield session
    session.stop()

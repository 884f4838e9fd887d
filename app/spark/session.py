"""The Spark session the runner uses, and the one error it raises.

pyspark is an optional extra (`pip install 'cepheus[spark]'`): it is imported here only
when a session is asked for. Python workers run this interpreter (`spark.pyspark.python`):
another one would not find the engine, pandas or pyarrow.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from app.spark.errors import SparkRunError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"


def require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        msg = "the Spark engine needs pyspark: install it with  pip install 'cepheus[spark]'"
        raise SparkRunError(msg) from None


def spark_session(master: str | None = None, app_name: str = "cepheus") -> SparkSession:
    """A session on `master` (default `local[*]`); an active session is reused as it is."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # the driver's Python workers (local mode) read the environment, the executors the config
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    chosen = master or DEFAULT_MASTER
    log.info("spark session on %s", chosen)
    session = (
        SparkSession.builder.master(chosen)
        .appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("WARN")
    return session

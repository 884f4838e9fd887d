"""The node raises its open-files limit to what its receivers' limits allow (in a child process,
so the test run keeps its own limit)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, resource, sys
from app import config
from app.file_limits import needed_open_files, raise_open_files_limit
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="%(message)s")
hard = int(sys.argv[1]) if sys.argv[1] != "keep" else resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
cfg = config.load(None, env={})
print(needed_open_files(cfg), raise_open_files_limit(cfg), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def run(hard: int | str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(hard)], capture_output=True, text=True, check=True
    )
    return out.stdout.split("\n")


def test_the_soft_limit_rises_to_what_the_receivers_need() -> None:
    needed, got, now = run("keep")[-2].split()  # this machine's hard limit is far above the need
    assert int(got) == int(now) == int(needed) > 2000


def test_a_hard_limit_too_low_is_reported_with_the_keys_to_lower() -> None:
    lines = run(1024)
    assert "thrift.max_connections" in lines[0] and "1024" in lines[0]
    needed, got, now = lines[-2].split()
    assert int(got) == int(now) == 1024 < int(needed)

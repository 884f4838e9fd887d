"""A small file system of a test's own, to fill up: a tmpfs with a size limit mounted at a
directory of the test's (a node's `data_dir`), and a filler file that takes every byte left.
Mounting needs root; a test that cannot mount fails, naming why (it is never skipped)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FILLER = "filler"


@contextmanager
def small_disk(path: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (made if missing) for the block; unmounted after it."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.fail(
            f"cannot mount a tmpfs of {size} at {path} (this test needs root and tmpfs): "
            f"{(mounted.stderr or mounted.stdout).strip()}"
        )
    try:
        yield path
    finally:
        unmounted = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if unmounted.returncode != 0:  # a process still holds a file there: detach it now
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def fill(disk: Path) -> Path:
    """Write a file to `disk` until not one more byte fits; the file."""
    filler = disk / FILLER
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    chunk = bytes(1 << 16)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]  # the last pages too
    finally:
        os.close(fd)
    return filler


def free(disk: Path) -> None:
    """Delete what `fill` wrote."""
    (disk / FILLER).unlink()

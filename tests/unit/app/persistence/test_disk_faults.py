"""What the input log does when the disk does not take a record: a write that fails (full, a
quota, an I/O error) is refused and cut off, a new segment that cannot be made is made by the
next append, a flush that stalls refuses appends until it ends; each said once per interval
and shown per plan (`InputLog.faults`), and the log goes on once the disk does."""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.persistence import disk_faults
from app.persistence.disk_faults import DiskFaults
from app.persistence.errors import DiskFault
from app.persistence.input_log import Events, InputLog, Tick
from engine.errors import Busy
from tests.support.journals import OPS, Run

REAL_WRITE = os.write


def bundle(n: int) -> Events:
    return Events("Orders", [1000 + n], [(n, f"item {n}")])


def segment_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "p").glob("*.log"))


def full_after(limit: int) -> Callable[[int, bytes | memoryview], int]:
    """An `os.write` that writes `limit` bytes in all, then fails with ENOSPC (a file system
    that fills up in the middle of a record)."""
    room = [limit]

    def write(fd: int, data: bytes | memoryview) -> int:
        if not room[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = REAL_WRITE(fd, bytes(data[: room[0]]))
        room[0] -= written
        return written

    return write


def test_a_write_the_full_disk_refuses_leaves_nothing_and_the_log_goes_on_when_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with InputLog(tmp_path, "always") as log:
        assert log.append("p", bundle(1)) == 1
        before = segment_bytes(tmp_path)
        with monkeypatch.context() as m:
            m.setattr(os, "write", full_after(10))  # a torn record, then no room
            for _ in range(3):
                with pytest.raises(DiskFault, match="No space left on device") as refused:
                    log.append("p", bundle(2))
                assert isinstance(refused.value, Busy) and refused.value.errno == errno.ENOSPC
                assert not refused.value.restart
            assert segment_bytes(tmp_path) == before  # cut off again at once
            fault = log.faults()["p"]
            assert fault["refused"] == 3 and fault["error"] == "cannot append: No space left on device"
            assert fault["path"].endswith("00000000000000000001.log") and not fault["restart_needed"]
        assert log.append("p", bundle(3)) == 2  # the refused bundle took no position
        assert log.faults()["p"]["refused"] == 3  # over once none is refused for a second
        time.sleep(1.05)
        assert log.faults() == {}
    with InputLog(tmp_path, "off") as log:  # nothing to cut at open: the same log
        assert list(log.read("p")) == [(1, bundle(1)), (2, bundle(3))]


def test_a_torn_record_that_could_not_be_cut_is_cut_by_the_next_append_or_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_truncate(fd: int, size: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with InputLog(tmp_path / "a", "off") as log:
        log.append("p", bundle(1))
        before = segment_bytes(tmp_path / "a")
        with monkeypatch.context() as m:
            m.setattr(os, "write", full_after(10))
            m.setattr(os, "ftruncate", no_truncate)
            with pytest.raises(DiskFault, match="No space left on device"):
                log.append("p", bundle(2))
            assert segment_bytes(tmp_path / "a") == before + 10  # the torn record is still there
            m.setattr(os, "write", REAL_WRITE)
            with pytest.raises(DiskFault, match="could not be cut off yet"):
                log.append("p", bundle(2))  # nothing is appended after a torn record
            assert list(log.read("p")) == [(1, bundle(1))]  # readers stop where the records do
        assert log.append("p", bundle(2)) == 2  # cut first, then appended
        assert segment_bytes(tmp_path / "a") > before
    with InputLog(tmp_path / "a", "off") as log:
        assert list(log.read("p")) == [(1, bundle(1)), (2, bundle(2))]

    # the process dies while the torn record is still there: the log's open cuts it off
    with monkeypatch.context() as m:
        with InputLog(tmp_path / "b", "off") as log:
            log.append("p", bundle(1))
            old_id = log.log_id("p")
            m.setattr(os, "write", full_after(10))
            m.setattr(os, "ftruncate", no_truncate)
            with pytest.raises(DiskFault):
                log.append("p", bundle(2))
        assert segment_bytes(tmp_path / "b") == before + 10  # not even its close could cut it
    with caplog.at_level(logging.WARNING), InputLog(tmp_path / "b", "off") as log:
        assert list(log.read("p")) == [(1, bundle(1))]
        assert "cut a torn tail of 10 bytes from position 2" in caplog.text
        assert log.log_id("p") != old_id  # position 2 will be another record's
        assert log.append("p", bundle(3)) == 2


def test_a_segment_the_full_disk_cannot_make_is_made_by_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def full_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
        if str(path).endswith(".log") and flags & os.O_CREAT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, mode)

    with InputLog(tmp_path, "always", segment_bytes=100) as log:
        log.append("p", bundle(1))
        log.append("p", bundle(2))
        with monkeypatch.context() as m:
            m.setattr(os, "open", full_open)
            for _ in range(2):
                with pytest.raises(DiskFault, match="cannot start a new segment: No space left on device"):
                    log.append("p", bundle(3))
            assert list(log.read("p")) == [(1, bundle(1)), (2, bundle(2))]
        assert log.append("p", bundle(3)) == 3
        assert log.append("p", bundle(4)) == 4
        assert [p for p, _ in log.read("p")] == [1, 2, 3, 4]
    with InputLog(tmp_path, "off", segment_bytes=100) as log:
        assert [p for p, _ in log.read("p")] == [1, 2, 3, 4]


def test_a_truncation_on_a_full_disk_still_drops_the_older_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def full_open(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kw: object) -> int:
        if str(path).endswith(".log") and flags & os.O_CREAT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, mode)

    with InputLog(tmp_path, "off", segment_bytes=100) as log:
        for i in range(1, 7):
            log.append("p", bundle(i))
        with monkeypatch.context() as m:
            m.setattr(os, "open", full_open)
            assert log.truncate("p", 6) >= 2  # a snapshot covers them all: room on the disk
        assert log.append("p", bundle(7)) == 7
        assert [p for p, _ in log.read("p", 6)] == [7]


def test_a_flush_that_stalls_refuses_appends_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = os.fdatasync
    entered, release = threading.Event(), threading.Event()

    def stalling(fd: int) -> None:
        entered.set()
        release.wait(30)
        real(fd)

    with InputLog(tmp_path, "always", stall_seconds=0.2) as log:
        log.append("p", bundle(1))
        monkeypatch.setattr(os, "fdatasync", stalling)
        answered: list[int] = []
        first = threading.Thread(target=lambda: answered.append(log.append("p", bundle(2))))
        first.start()
        assert entered.wait(10)
        time.sleep(0.3)
        assert answered == []  # not acknowledged while its flush hangs
        with pytest.raises(DiskFault, match=r"a flush has not finished for 0\.[2-9] s") as refused:
            log.append("p", bundle(3))
        assert isinstance(refused.value, Busy)
        fault = log.faults()["p"]
        assert fault["flushing_seconds"] >= 0.2 and fault["refused"] == 1
        release.set()
        first.join(10)
        assert answered == [2]
        monkeypatch.undo()
        assert log.append("p", bundle(3)) == 3
        time.sleep(1.05)
        assert log.faults() == {}
    assert "takes appends again" in caplog.text


def test_a_background_flush_that_stalls_bounds_what_interval_acknowledges_unflushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.fdatasync
    entered, release = threading.Event(), threading.Event()

    def stalling(fd: int) -> None:
        entered.set()
        release.wait(30)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", stalling)
    with InputLog(tmp_path, "interval", interval_ms=10, stall_seconds=0.2) as log:
        log.append("p", bundle(1))
        assert entered.wait(10)
        time.sleep(0.3)
        with pytest.raises(DiskFault, match="a flush has not finished"):
            log.append("p", bundle(2))
        release.set()
        deadline = time.monotonic() + 10
        while log.faults().get("p", {}).get("flushing_seconds") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert log.append("p", bundle(2)) == 2


def test_a_bundle_for_several_plans_is_refused_whole_when_the_file_system_has_no_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Full:
        f_bavail, f_frsize = 3, 4096

    with InputLog(tmp_path, "off") as log:
        log.append("p", bundle(1))
        log.check_room("p", 4096)
        monkeypatch.setattr(os, "statvfs", lambda path: Full())
        with pytest.raises(DiskFault, match="12288 bytes free, less than the 65536"):
            log.check_room("p", 65536)
        log.check_room("unknown", 65536)  # a log not open yet: its append will tell


def test_a_disk_fault_is_logged_once_per_interval_and_once_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    faults = DiskFaults(interval=10, clock=lambda: now[0])
    full = DiskFault(
        "p", "/var/input-log/p/1.log", "cannot append: No space left on device", errno=errno.ENOSPC
    )
    with caplog.at_level(logging.INFO, logger=disk_faults.__name__):
        for _ in range(50):
            faults.met(full)
            now[0] += 0.1
        now[0] += 6
        faults.met(full)
        faults.took("q")  # another plan: nothing
        now[0] += 1
        faults.took("p")
        faults.took("p")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "input log of plan 'p': cannot append: No space left on device (/var/input-log/p/1.log); bundles "
        "for the plan are refused (their clients send them again) until the disk takes writes again",
        "input log of plan 'p': cannot append: No space left on device (/var/input-log/p/1.log); bundles "
        "for the plan are refused (their clients send them again) until the disk takes writes again "
        "(for 11 s now; 50 appends refused in the last 10 s)",
        "input log of plan 'p' takes appends again, after 12.0 s in which 51 were refused "
        "(cannot append: No space left on device)",
    ]
    assert faults.report() == {}


def test_a_tick_the_disk_refuses_is_fired_again_soon_without_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Run(tmp_path / "log")
    run.do(OPS[:2])  # a value waits in the time batch: a timer is due
    due = run.runtime.next_timer()
    assert due is not None
    run.wall.now = due + 1
    position, emitted = run.journal.position, len(run.out)
    with monkeypatch.context() as m:
        m.setattr(os, "write", full_after(0))
        assert run.journal.tick() == due + 1 + 100  # tried again in 100 ms
        assert run.journal.position == position
        assert len(run.out) == emitted  # no timer fired that the log does not hold
    run.journal.tick()  # the disk takes it: the batch closes
    assert run.journal.position == position + 1 and ("Batches", (2,)) in run.out[emitted:]


def test_a_small_record_that_still_fits_on_a_full_disk_is_no_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    faults = DiskFaults(interval=10, settle=1, clock=lambda: now[0])
    full = DiskFault("p", "/var/input-log/p/1.log", "cannot append: No space left on device")
    with caplog.at_level(logging.INFO, logger=disk_faults.__name__):
        faults.met(full)
        now[0] += 0.3
        faults.took("p")  # a clock tick fit where the bundle did not
        now[0] += 0.3
        faults.met(full)  # the next bundle does not
        now[0] += 0.5
        faults.took("p")
        assert faults.report()["p"]["refused"] == 2  # refused 0.5 s ago: not over yet
        now[0] += 0.6
        assert faults.report() == {}  # taken, and none refused for a second since
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]


def test_a_torn_record_still_to_be_cut_is_cut_before_its_segment_is_sealed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_truncate(fd: int, size: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with InputLog(tmp_path, "off", segment_bytes=100) as log:
        log.append("p", bundle(1))
        first = sorted((tmp_path / "p").glob("*.log"))[0]
        sealed = first.stat().st_size
        with monkeypatch.context() as m:
            m.setattr(os, "write", full_after(10))
            m.setattr(os, "ftruncate", no_truncate)
            with pytest.raises(DiskFault):
                log.append("p", Tick(2))  # small: it would still fit in the segment
        assert first.stat().st_size == sealed + 10
        assert log.append("p", bundle(2)) == 2  # past the segment's bound: a new one
        assert first.stat().st_size == sealed
        assert len(list((tmp_path / "p").glob("*.log"))) == 2
    with caplog.at_level(logging.WARNING), InputLog(tmp_path, "off", segment_bytes=100) as log:
        assert list(log.read("p")) == [(1, bundle(1)), (2, bundle(2))]
    assert "cut a torn tail" not in caplog.text

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
import struct
import threading
import time
import zlib
from pathlib import Path

import pytest

from app.persistence import segments
from app.persistence.input_log import (
    DiskFault,
    Events,
    FsyncPolicy,
    InputLog,
    InputLogCorrupt,
    InputLogError,
    InputLogFull,
    Tick,
)
from app.persistence.records import encode


def bundle(n: int) -> Events:
    return Events("Orders", [1000 + n, 1001 + n], [(n, float(n), f"item {n}", None), (-n, True, "", False)])


def segment_files(root: Path) -> list[Path]:
    (plan_dir,) = [p for p in root.iterdir() if p.is_dir()]
    return sorted(plan_dir.glob("*.log"))


def write(root: Path, n: int, **kw) -> None:
    with InputLog(root, "off", **kw) as log:
        for i in range(1, n + 1):
            assert log.append("p", bundle(i)) == i


def test_appended_records_read_back_with_their_positions(tmp_path) -> None:
    with InputLog(tmp_path, "interval") as log:
        assert log.append("p", bundle(1)) == 1
        assert log.append("p", Tick(5000)) == 2
        assert log.append("q", bundle(3)) == 1
        assert log.append("p", bundle(4)) == 3
        assert list(log.read("p")) == [(1, bundle(1)), (2, Tick(5000)), (3, bundle(4))]
        assert list(log.read("p", after=2)) == [(3, bundle(4))]
        assert list(log.read("p", after=3)) == []
        assert list(log.read("q")) == [(1, bundle(3))]
        assert list(log.read("never")) == []
        with pytest.raises(InputLogError, match="positions start at 1"):
            log.read("p", -1)


def test_reopened_log_continues_positions(tmp_path) -> None:
    write(tmp_path, 3)
    with InputLog(tmp_path, "always") as log:
        assert log.append("p", Tick(1)) == 4
        assert [pos for pos, _ in log.read("p")] == [1, 2, 3, 4]


def test_read_crosses_segments_and_starts_in_the_right_one(tmp_path) -> None:
    write(tmp_path, 10, segment_bytes=300)
    assert len(segment_files(tmp_path)) > 3
    with InputLog(tmp_path, "off", segment_bytes=300) as log:
        assert list(log.read("p")) == [(i, bundle(i)) for i in range(1, 11)]
        for after in range(11):
            assert [pos for pos, _ in log.read("p", after)] == list(range(after + 1, 11))


def test_read_sees_what_was_appended_when_it_began(tmp_path) -> None:
    with InputLog(tmp_path, "off") as log:
        log.append("p", bundle(1))
        records = log.read("p")
        log.append("p", bundle(2))
        assert [pos for pos, _ in records] == [1]


def test_torn_tail_at_every_byte_of_the_last_record_is_cut(tmp_path, caplog) -> None:
    write(tmp_path / "whole", 3)
    (segment,) = segment_files(tmp_path / "whole")
    whole = segment.read_bytes()
    with InputLog(tmp_path / "two", "off") as log:
        log.append("p", bundle(1))
        log.append("p", bundle(2))
    start = segment_files(tmp_path / "two")[0].stat().st_size
    for cut in range(start + 1, len(whole)):
        root = tmp_path / f"cut{cut}"
        shutil.copytree(tmp_path / "whole", root)
        segment_files(root)[0].write_bytes(whole[:cut])
        caplog.clear()
        before = (root / "p" / "id").read_text()
        with caplog.at_level(logging.WARNING), InputLog(root, "off") as log:
            assert list(log.read("p")) == [(1, bundle(1)), (2, bundle(2))]
            assert log.log_id("p") != before  # position 3 is taken again: by another log
            assert log.append("p", Tick(7)) == 3
            assert list(log.read("p", after=2)) == [(3, Tick(7))]
        (line,) = [r.getMessage() for r in caplog.records]
        assert f"cut a torn tail of {cut - start} bytes from position 3 on" in line
        shutil.rmtree(root)


@pytest.mark.parametrize("tail", ["zeros", "bad crc of the last record"])
def test_zero_filled_tail_or_bad_last_record_is_cut(tmp_path, tail, caplog) -> None:
    write(tmp_path, 3)
    (segment,) = segment_files(tmp_path)
    data = bytearray(segment.read_bytes())
    if tail == "zeros":
        data += bytes(5000)
    else:
        data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING), InputLog(tmp_path, "off") as log:
        assert [pos for pos, _ in log.read("p")] == ([1, 2, 3] if tail == "zeros" else [1, 2])
    assert "torn tail" in caplog.text


def test_corrupt_record_in_the_middle_is_an_error_naming_file_and_offset(tmp_path) -> None:
    write(tmp_path, 3)
    (segment,) = segment_files(tmp_path)
    data = bytearray(segment.read_bytes())
    first_size = len(data) // 3
    data[first_size + 20] ^= 0x01
    segment.write_bytes(bytes(data))
    with InputLog(tmp_path, "off") as log, pytest.raises(InputLogCorrupt) as caught:
        log.append("p", Tick(1))
    assert caught.value.path == str(segment)
    assert caught.value.offset == first_size
    assert f"{segment}: corrupt record at byte offset {first_size} (CRC mismatch)" in str(caught.value)
    assert segment.read_bytes() == bytes(data)


def test_torn_tail_of_an_older_segment_is_an_error(tmp_path) -> None:
    write(tmp_path, 4, segment_bytes=300)
    older = segment_files(tmp_path)[0]
    older.write_bytes(older.read_bytes()[:-3])
    with InputLog(tmp_path, "off") as log, pytest.raises(InputLogCorrupt, match=str(older)):
        list(log.read("p"))


def test_corruption_found_while_reading_names_file_and_offset(tmp_path) -> None:
    with InputLog(tmp_path, "off") as log:
        log.append("p", bundle(1))
        log.append("p", bundle(2))
        (segment,) = segment_files(tmp_path)
        data = bytearray(segment.read_bytes())
        data[-1] ^= 0xFF
        segment.write_bytes(bytes(data))
        with pytest.raises(InputLogCorrupt, match=f"offset {len(data) // 2} "):
            list(log.read("p"))


def test_truncate_deletes_whole_segments_up_to_a_position(tmp_path) -> None:
    write(tmp_path, 6, segment_bytes=300)
    with InputLog(tmp_path, "off", segment_bytes=300) as log:
        firsts = [int(p.stem) for p in segment_files(tmp_path)]
        upto = firsts[2] - 1
        assert log.truncate("p", upto) == 2
        assert [int(p.stem) for p in segment_files(tmp_path)] == firsts[2:]
        assert [pos for pos, _ in log.read("p", upto)] == list(range(upto + 1, 7))
        with pytest.raises(InputLogError, match=f"positions 1 to {upto} were truncated"):
            log.read("p", 0)
        assert log.truncate("p", upto) == 0


def test_truncate_past_the_last_record_keeps_positions(tmp_path) -> None:
    write(tmp_path, 3)
    with InputLog(tmp_path, "off") as log:
        assert log.truncate("p", 3) == 1
        assert log.sizes() == {"p": 0}
        assert list(log.read("p", 3)) == []
    with InputLog(tmp_path, "off") as log:
        assert log.append("p", Tick(1)) == 4


def test_append_past_max_bytes_raises_input_log_full(tmp_path) -> None:
    one = len(segments.frame(encode(bundle(1))))  # every bundle() frames to the same size
    limit = 2 * one + one // 2
    with InputLog(tmp_path, "off", segment_bytes=1, max_bytes=limit) as log:
        assert log.append("p", bundle(1)) == 1
        assert log.append("p", bundle(2)) == 2
        with pytest.raises(
            InputLogFull, match=f"input log of plan 'p' is full: .* limit {limit} bytes"
        ) as full:
            log.append("p", bundle(3))
        assert (full.value.plan, full.value.limit) == ("p", limit)
        assert log.sizes()["p"] <= limit
        log.truncate("p", 2)
        assert log.append("p", bundle(3)) == 3
        assert list(log.read("p", 2)) == [(3, bundle(3))]


def test_concurrent_appends_get_unique_gapless_positions(tmp_path) -> None:
    threads, per_thread = 8, 300
    got: dict[int, list[int]] = {}
    with InputLog(tmp_path, "interval", segment_bytes=20_000) as log:

        def run(t: int) -> None:
            got[t] = [log.append("p", Events("S", [t], [(t, i)])) for i in range(per_thread)]

        workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert sorted(p for ps in got.values() for p in ps) == list(range(1, threads * per_thread + 1))
        assert all(ps == sorted(ps) for ps in got.values())
        by_position = dict(log.read("p"))
    for t, positions in got.items():
        assert [by_position[p] for p in positions] == [Events("S", [t], [(t, i)]) for i in range(per_thread)]


def test_files_are_0600_and_directories_0700(tmp_path) -> None:
    old = os.umask(0o022)
    try:
        root = tmp_path / "log"
        with InputLog(root, "always", segment_bytes=1) as log:
            log.append("p", Tick(1))
            log.append("p", Tick(2))
            log.append("x" * 300, Tick(1))
    finally:
        os.umask(old)
    files = [p for p in root.rglob("*") if p.is_file()]
    dirs = [root, *(p for p in root.rglob("*") if p.is_dir())]
    assert len(files) == 6 and len(dirs) == 3  # 3 segments, 2 log ids, 1 long plan name
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}
    assert {stat.S_IMODE(p.stat().st_mode) for p in dirs} == {0o700}


@pytest.mark.parametrize(
    "plan", ["..", ".", "a/b", "/etc", "x\x00y", "Ünïcode plan ✓", "%41", "~", "y" * 300]
)
def test_any_plan_name_stays_inside_its_own_directory(tmp_path, plan) -> None:
    root = tmp_path / "log"
    with InputLog(root, "off") as log:
        assert log.append(plan, Tick(1)) == 1
        assert log.append("A", Tick(2)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log"]
    with InputLog(root, "off") as log:
        assert log.sizes().keys() == {plan, "A"}
        assert list(log.read(plan)) == [(1, Tick(1))]
        assert log.append(plan, Tick(3)) == 2


def test_empty_plan_name_and_bad_policy_are_refused(tmp_path) -> None:
    with pytest.raises(InputLogError, match="'always', 'interval' or 'off', not 'sometimes'"):
        InputLog(tmp_path, "sometimes")
    with InputLog(tmp_path, "off") as log, pytest.raises(InputLogError, match="must not be empty"):
        log.append("", Tick(1))


def test_closed_log_refuses_appends(tmp_path) -> None:
    log = InputLog(tmp_path, "off")
    log.append("p", Tick(1))
    log.close()
    with pytest.raises(InputLogError, match="the input log is closed"):
        log.append("p", Tick(2))


def _count_syncs(monkeypatch) -> tuple[list[int], threading.Event]:
    calls: list[int] = []
    synced = threading.Event()
    real = os.fdatasync

    def fdatasync(fd: int) -> None:
        real(fd)
        calls.append(fd)
        synced.set()

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    return calls, synced


def test_policy_always_flushes_before_append_returns(tmp_path, monkeypatch) -> None:
    calls, _ = _count_syncs(monkeypatch)
    with InputLog(tmp_path, FsyncPolicy.ALWAYS) as log:
        log.append("p", Tick(1))
        assert len(calls) == 1
        log.append("p", Tick(2))
        assert len(calls) == 2


def test_policy_interval_flushes_a_written_log_in_the_background(tmp_path, monkeypatch) -> None:
    calls, synced = _count_syncs(monkeypatch)
    with InputLog(tmp_path, "interval", interval_ms=10) as log:
        log.append("p", Tick(1))
        assert synced.wait(10)
    assert calls


def test_policy_off_never_flushes_appends(tmp_path, monkeypatch) -> None:
    calls, _ = _count_syncs(monkeypatch)
    with InputLog(tmp_path, "off") as log:
        for i in range(50):
            log.append("p", Tick(i))
    assert calls == []


def test_policy_always_shares_one_flush_among_appends_waiting_for_it(tmp_path, monkeypatch) -> None:
    real = os.fdatasync
    calls: list[int] = []
    entered, release = threading.Event(), threading.Event()

    def fdatasync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            entered.set()
            release.wait(30)
        real(fd)

    with InputLog(tmp_path, "always") as log:
        log.append("p", Tick(0))
        tick_bytes = log.sizes()["p"]
        monkeypatch.setattr(os, "fdatasync", fdatasync)
        positions: list[int] = []
        first = threading.Thread(target=lambda: positions.append(log.append("p", Tick(1))))
        first.start()
        assert entered.wait(30)
        others = [
            threading.Thread(target=lambda: positions.append(log.append("p", Tick(2)))) for _ in range(5)
        ]
        for t in others:
            t.start()
        deadline = time.monotonic() + 30
        while log.sizes()["p"] < 7 * tick_bytes and time.monotonic() < deadline:
            time.sleep(0.001)
        release.set()
        for t in [first, *others]:
            t.join()
        assert sorted(positions) == [2, 3, 4, 5, 6, 7]
        assert len(calls) == 2


def test_failed_flush_under_always_refuses_the_append_and_leaves_no_trace(tmp_path, monkeypatch) -> None:
    with InputLog(tmp_path, "always") as log:
        log.append("p", Tick(1))
        with monkeypatch.context() as m:
            m.setattr(os, "fdatasync", _fail)
            with pytest.raises(
                DiskFault, match="cannot flush: Input/output error .*restart the node"
            ) as failed:
                log.append("p", Tick(2))
            assert failed.value.restart
        with pytest.raises(DiskFault, match="a flush failed \\(Input/output error\\) .*restart the node"):
            log.append("p", Tick(3))
        assert log.faults()["p"]["restart_needed"] is True
    with InputLog(tmp_path, "off") as log:
        assert list(log.read("p")) == [(1, Tick(1))]
        assert log.append("p", Tick(4)) == 2


def test_failed_background_flush_is_logged_and_refuses_appends(tmp_path, monkeypatch) -> None:
    logged = threading.Event()

    class Signal(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "a flush failed" in record.getMessage() or "cannot flush" in record.getMessage():
                logged.set()

    handler = Signal(logging.ERROR)
    logging.getLogger("app.persistence").addHandler(handler)
    try:
        with InputLog(tmp_path, "interval", interval_ms=10) as log:
            monkeypatch.setattr(os, "fdatasync", _fail)
            log.append("p", Tick(1))
            assert logged.wait(30)
            with pytest.raises(DiskFault, match="a flush failed"):
                log.append("p", Tick(2))
            monkeypatch.undo()
    finally:
        logging.getLogger("app.persistence").removeHandler(handler)


def _fail(fd: int) -> None:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def test_a_log_keeps_its_id_across_reopen_and_a_reset_starts_a_new_one(tmp_path) -> None:
    with InputLog(tmp_path, "off") as log:
        assert log.bounds("p") == (1, 0)
        first_id = log.log_id("p")
        log.append("p", Tick(1))
        log.append("p", Tick(2))
    with InputLog(tmp_path, "off") as log:
        assert log.log_id("p") == first_id
        assert log.bounds("p") == (1, 2)
        assert log.reset("p") != first_id
        assert log.bounds("p") == (1, 0)
        assert list(log.read("p")) == []
        assert log.append("p", Tick(3)) == 1
        reset_id = log.log_id("p")
    with InputLog(tmp_path, "off") as log:
        assert log.log_id("p") == reset_id
        assert list(log.read("p")) == [(1, Tick(3))]


def test_under_always_an_append_that_does_not_wait_is_made_durable_by_durable(tmp_path) -> None:
    with InputLog(tmp_path, "always") as log:
        position = log.append("p", Tick(1), wait=False)
        log.durable("p", position)
        assert log._plans["p"].synced == position


def test_events_keep_the_time_they_were_processed_at(tmp_path) -> None:
    with InputLog(tmp_path, "off") as log:
        log.append("p", Events("S", [5], [(1, "a")], at=1234))
        assert list(log.read("p")) == [(1, Events("S", [5], [(1, "a")], at=1234))]


def test_truncate_of_a_log_reset_meanwhile_does_nothing(tmp_path) -> None:
    with InputLog(tmp_path, "off", segment_bytes=1) as log:
        old = log.log_id("p")
        for n in range(4):
            log.append("p", Tick(n))
        log.reset("p")
        for n in range(4):
            log.append("p", Tick(n))
        assert log.truncate("p", 3, old) == 0  # a snapshot of the old log: not this one's positions
        assert log.bounds("p") == (1, 4)
        assert log.truncate("p", 3, log.log_id("p")) == 3


@pytest.mark.parametrize("size", [1, 4096, 4097, 5 * 1024 + 1, 70_001])
def test_a_frame_checks_the_whole_payload_however_long(tmp_path, size) -> None:
    payload = os.urandom(size)
    length = struct.pack("<I", size)
    assert (
        segments.frame(payload)
        == length + struct.pack("<I", zlib.crc32(payload, zlib.crc32(length))) + payload
    )
    with InputLog(tmp_path, "off") as log:
        log.append("p", encode(Events("S", [1], [(payload.hex(),)])))
    with InputLog(tmp_path, "off") as log:
        assert [r for _, r in log.read("p")] == [Events("S", [1], [(payload.hex(),)])]


def test_a_log_written_in_the_previous_record_format_reads_back_after_an_upgrade(tmp_path) -> None:
    from tests.unit.app.persistence.test_records import OLD_COLUMNS, OLD_ROWS

    with InputLog(tmp_path, "off") as log:
        log.append("p", OLD_COLUMNS)
        log.append("p", OLD_ROWS)
        log.append("p", bundle(3))
    with InputLog(tmp_path, "off") as log:
        back = [r for _, r in log.read("p")]
    assert [r.at for r in back if isinstance(r, Events)] == [1234, 9, 0]
    assert back[0].rows[2][4] == 2**70  # type: ignore[union-attr]
    assert back[2] == bundle(3)

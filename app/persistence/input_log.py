"""The local input log: per plan, an append-only sequence of positioned records.

Before a receiver acknowledges a bundle for a persistence-mode plan, the node appends it here
(`app.persistence.journal`); a snapshot records the log's id and the position it covers; restore
replays `read(plan, after=position)`; pruned snapshots `truncate` the log behind the oldest
kept one. Each plan's log has an id (file `id`), new when the log is made or `reset`. Layout:
`<directory>/<plan, encoded by plan_dirs>/<first position>.log` (directories 0700, files 0600),
records framed as `segments` says, payloads as `records` says. Positions start at 1 and grow
by 1 per record; they continue across reopen and `truncate` (the newest segment always stays).

What each `FsyncPolicy` loses. A process crash (kill -9, OOM) loses nothing under any policy:
`append` has handed the record to the kernel before it returns. A machine crash (power,
kernel panic) loses, of the records `append` returned:
- "always": none; `append` returns once an fdatasync covers its record (appends from several
  threads that wait at once share one flush).
- "interval": those appended since the last background fdatasync, i.e. up to `interval_ms`
  plus the flush's own duration; a plan's log is flushed only when it was written.
- "off": whatever the kernel had not written back yet (Linux: typically up to 30 s, no bound).
Every policy fsyncs a segment when it is full, before the next one is created, and the
directory after a segment or plan directory is created, so only the newest segment can be torn.
On ext4 (data=ordered) and XFS a machine crash leaves that segment short or zero-filled at the
end, which `open` cuts off; a file system that leaves garbage followed by good records makes
the plan's log report corruption with the file and offset instead. A failed flush (a disk
error) makes the plan's log refuse appends until it is reopened; under "always" the records
whose appends raised are cut off first, so a replay never holds a bundle that was refused.

A disk that refuses a write (full, a quota, an I/O error) refuses the append (`DiskFault`, a
`Busy`: the bundle is refused as retryable) and leaves nothing of it in the log; the next
append tries again, so the log goes on once the disk has room (`plan_log`). A flush that has
not finished for `stall_seconds` (a disk that hangs) refuses appends too, until it ends: under
"always" no append returns meanwhile anyway, and under "interval" no more records pile up
unflushed. `faults()` says which plans' logs refuse appends now, and why (`disk_faults`).

Imports `engine.errors` (through `errors`) and `app.private_files` only; knows nothing of the node.
"""

from __future__ import annotations

import enum
import errno
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.persistence import plan_dirs, segments
from app.persistence.disk_faults import DiskFaults
from app.persistence.errors import DiskFault, InputLogCorrupt, InputLogError, InputLogFull
from app.persistence.plan_log import PlanLog, fsync_dir, replace_durably
from app.persistence.records import Events, Record, RecordError, Tick, decode, encode
from app.private_files import PRIVATE_DIR, PRIVATE_FILE

__all__ = [
    "DiskFault",
    "Events",
    "FsyncPolicy",
    "InputLog",
    "InputLogCorrupt",
    "InputLogError",
    "InputLogFull",
    "Record",
    "Tick",
]

log = logging.getLogger(__name__)

SEGMENT_BYTES = 64 << 20
STALL_SECONDS = 2.0  # a flush running longer counts as stalled: appends are refused until it ends
OPEN_FILE = "open"  # the boot the log was opened in, while it may hold unflushed records
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _boot() -> str:
    """This boot of the machine ("" where the system does not say)."""
    try:
        return BOOT_ID.read_text("ascii").strip()
    except OSError:
        return ""


def _went_down(directory: Path) -> bool:
    """Whether the machine restarted while the log in `directory` was open (its `open` file
    names another boot): appends not yet flushed then may be lost whole, which the records
    cannot show. A process killed (-9) loses nothing: the kernel still writes what it wrote."""
    try:
        opened_in = (directory / OPEN_FILE).read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(opened_in) and opened_in != _boot()


class FsyncPolicy(enum.StrEnum):
    ALWAYS = "always"
    INTERVAL = "interval"
    OFF = "off"


class InputLog:
    """Per-plan input logs under `directory`; safe to use from many threads."""

    def __init__(
        self,
        directory: str | Path,
        policy: FsyncPolicy | str = FsyncPolicy.INTERVAL,
        *,
        interval_ms: int = 100,
        segment_bytes: int = SEGMENT_BYTES,
        max_bytes: int | None = None,
        stall_seconds: float = STALL_SECONDS,
    ) -> None:
        try:
            self.policy = FsyncPolicy(policy)
        except ValueError:
            msg = f"input log fsync policy must be 'always', 'interval' or 'off', not {policy!r}"
            raise InputLogError(msg) from None
        if interval_ms <= 0 or segment_bytes <= 0 or (max_bytes is not None and max_bytes <= 0):
            msg = "input log interval_ms, segment_bytes and max_bytes must be positive"
            raise InputLogError(msg)
        self.directory = Path(directory)
        self.directory.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        # truncation drops whole segments: one segment must be a small part of the bound
        self.segment_bytes = (
            segment_bytes if max_bytes is None else min(segment_bytes, max(1, max_bytes // 8))
        )
        self.max_bytes = max_bytes
        self.stall_seconds = stall_seconds
        self._faults = DiskFaults()
        self._plans: dict[str, PlanLog] = {}
        self._lock = threading.RLock()  # reset() holds it while it opens the plan's new log
        self._closed = False
        self._stop = threading.Event()
        self._interval = interval_ms / 1000
        self._flusher: threading.Thread | None = None
        self._tail_may_be_lost = _went_down(self.directory) and self.policy is not FsyncPolicy.ALWAYS
        replace_durably(self.directory, OPEN_FILE, _boot())
        if self.policy is FsyncPolicy.INTERVAL:
            self._flusher = threading.Thread(target=self._flush_loop, name="input-log-fsync", daemon=True)
            self._flusher.start()

    def append(self, plan: str, record: Record | bytes, *, wait: bool = True) -> int:
        """Append `record` (or the payload `encode` made of one) to `plan`'s log; its position.
        Raises `InputLogFull` at `max_bytes`. Under "always" it returns once the record is on
        disk, unless `wait` is False: then the caller calls `durable` before it relies on the
        record (outside its own locks, so that appends from other threads share the flush)."""
        data = segments.frame(record if isinstance(record, bytes) else self.encode(plan, record))
        if len(data) > segments.MAX_RECORD_BYTES:
            msg = f"input log of plan '{plan}': a record of {len(data)} bytes is too large"
            raise InputLogError(msg)
        plan_log = self._plan(plan, create=True)
        assert plan_log is not None
        try:
            with plan_log.lock:
                self._check_open(plan_log)
                self._check_flush(plan_log)
                if self.max_bytes is not None and plan_log.size + len(data) > self.max_bytes:
                    raise InputLogFull(plan, plan_log.size, self.max_bytes)
                used = plan_log.segments[-1][2]
                if plan_log.fd < 0 or (used and used + len(data) > self.segment_bytes):
                    plan_log.roll()  # (fd -1: the last roll could not make the new segment)
                position = plan_log.write(data)
            if wait and self.policy is FsyncPolicy.ALWAYS:
                plan_log.sync(position, undo_on_failure=True)
        except DiskFault as fault:
            self._faults.met(fault)
            raise
        self._faults.took(plan)
        return position

    def _check_flush(self, plan_log: PlanLog) -> None:
        """`DiskFault` while a flush of `plan_log` has been running for over `stall_seconds`."""
        started = plan_log.flush_started
        if started is not None and (running := time.monotonic() - started) > self.stall_seconds:
            why = f"a flush has not finished for {running:.1f} s"
            raise DiskFault(plan_log.plan, str(plan_log.segments[-1][1]), why)

    @staticmethod
    def encode(plan: str, record: Record) -> bytes:
        """The payload of `record` in `plan`'s log; `InputLogError` for a value it cannot hold.
        A caller that holds a lock around `append` encodes before taking it."""
        try:
            return encode(record)
        except ValueError as exc:
            msg = f"input log of plan '{plan}': {exc}"
            raise InputLogError(msg) from exc

    def check_room(self, plan: str, margin: int) -> None:
        """Raise `InputLogFull` when `plan`'s log is within `margin` bytes of `max_bytes`, and
        `DiskFault` when its file system has less than `margin` bytes free (or its log refuses
        appends for a flush): a caller about to append to several logs asks each first, so that
        one full log refuses the whole bundle before any other log (and plan) has taken it."""
        plan_log = self._plans.get(plan)
        if plan_log is None:
            return
        if self.max_bytes is not None and plan_log.size + margin > self.max_bytes:
            raise InputLogFull(plan, plan_log.size, self.max_bytes)
        try:
            plan_log.check()
            self._check_flush(plan_log)
            try:
                fs = os.statvfs(plan_log.directory)
            except OSError:
                return  # it cannot tell: the append will
            free = fs.f_bavail * fs.f_frsize
            if free < margin:
                why = f"its file system has {free} bytes free, less than the {margin} a bundle may need"
                raise DiskFault(plan, str(plan_log.directory), why, errno=errno.ENOSPC)
        except DiskFault as fault:
            self._faults.met(fault)
            raise

    def durable(self, plan: str, position: int) -> None:
        """Under "always", return once every record of `plan` up to `position` is on disk."""
        if self.policy is FsyncPolicy.ALWAYS:
            plan_log = self._plan(plan, create=False)
            if plan_log is not None:
                try:
                    plan_log.sync(position, undo_on_failure=True)
                except DiskFault as fault:
                    self._faults.met(fault)
                    raise

    def faults(self) -> dict[str, dict[str, Any]]:
        """Per plan whose log the disk refuses now (`DiskFaults.report`) or whose flush has run
        for over `stall_seconds` (`flushing_seconds`): what the node's health shows."""
        report = self._faults.report()
        now = time.monotonic()
        for plan, plan_log in list(self._plans.items()):
            started = plan_log.flush_started
            if started is not None and now - started > self.stall_seconds:
                item = report.setdefault(plan, {"path": str(plan_log.segments[-1][1])})
                item["flushing_seconds"] = round(now - started, 1)
        return report

    def log_id(self, plan: str) -> str:
        """The id of `plan`'s log (created with it): a position means something in one log only."""
        plan_log = self._plan(plan, create=True)
        assert plan_log is not None
        return plan_log.log_id

    def term(self, plan: str) -> int:
        """The lease term whose log `plan`'s log is a copy of (`PlanLog.term`; 0: none)."""
        plan_log = self._plan(plan, create=True)
        assert plan_log is not None
        return plan_log.term

    def set_term(self, plan: str, term: int) -> None:
        """Record that `plan`'s log holds the records of lease term `term`'s log, durably."""
        plan_log = self._plan(plan, create=True)
        assert plan_log is not None
        with plan_log.lock:
            try:
                plan_log.set_term(term)
            except OSError as exc:
                why = f"cannot record term {term}: {exc.strerror or exc}"
                raise DiskFault(plan, str(plan_log.directory), why, errno=exc.errno) from exc

    def delivered(self, plan: str) -> int:
        """The position up to which the outputs of `plan`'s log are known written (`PlanLog.delivered`)."""
        return self._log_of(plan).delivered

    def set_delivered(self, plan: str, position: int) -> None:
        """Keep `position` as `plan`'s delivered mark; `DiskFault` when the disk does not take it."""
        plan_log = self._log_of(plan)
        with plan_log.lock:
            try:
                plan_log.set_delivered(position)
            except OSError as exc:
                why = f"cannot keep the delivered mark: {exc.strerror or exc}"
                raise DiskFault(plan, str(plan_log.directory), why, errno=exc.errno) from exc

    def _log_of(self, plan: str) -> PlanLog:
        plan_log = self._plan(plan, create=True)
        assert plan_log is not None
        return plan_log

    def bounds(self, plan: str) -> tuple[int, int]:
        """(first kept position, last position) of `plan`'s log; (1, 0) when it holds nothing."""
        plan_log = self._plan(plan, create=True)
        assert plan_log is not None
        with plan_log.lock:
            self._check_open(plan_log)
            return plan_log.segments[0][0], plan_log.next - 1

    def reset(self, plan: str) -> str:
        """Delete `plan`'s records and start a new log (a new id, positions from 1); its id.
        Another thread that still holds the old log finds it refusing ("it was reset")."""
        with self._lock:  # no other thread opens the plan's log meanwhile
            plan_log = self._plan(plan, create=True)
            assert plan_log is not None
            with plan_log.sync_lock, plan_log.lock:
                plan_log.remove()
            del self._plans[plan]
            fresh = self._plan(plan, create=True)
            assert fresh is not None
        log.info("input log of plan '%s' reset: new log %s", plan, fresh.log_id)
        return fresh.log_id

    def read(self, plan: str, after: int = 0) -> Iterator[tuple[int, Record]]:
        """(position, record) of every record of `plan` after position `after`, oldest first,
        up to what was appended when `read` was called."""
        return self._decoded(plan, self.read_payloads(plan, after))

    def read_both(self, plan: str, after: int = 0) -> Iterator[tuple[int, Record, bytes]]:
        """`read`, with each record's payload too (a replay digests the bundles it meets)."""
        for position, payload in self.read_payloads(plan, after):
            yield position, self._decode(plan, position, payload), payload

    def _decoded(self, plan: str, payloads: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, Record]]:
        for position, payload in payloads:
            yield position, self._decode(plan, position, payload)

    def _decode(self, plan: str, position: int, payload: bytes) -> Record:
        try:
            return decode(payload)
        except RecordError as exc:
            why = f"record {position} of plan '{plan}' does not decode: {exc}"
            raise InputLogCorrupt(str(self.directory), 0, why) from exc

    def read_payloads(self, plan: str, after: int = 0) -> Iterator[tuple[int, bytes]]:
        """`read`, with each record as its encoded payload (what a replica is sent)."""
        if after < 0:
            msg = f"input log of plan '{plan}': positions start at 1; read after {after} is meaningless"
            raise InputLogError(msg)
        plan_log = self._plan(plan, create=False)
        if plan_log is None:
            return iter(())
        with plan_log.lock:
            self._check_open(plan_log)
            kept = list(plan_log.segments)
            last = plan_log.next - 1
        if after >= last:
            return iter(())
        if after + 1 < kept[0][0]:
            msg = (
                f"input log of plan '{plan}' keeps positions {kept[0][0]} to {last} only; "
                f"positions {after + 1} to {kept[0][0] - 1} were truncated"
            )
            raise InputLogError(msg)
        while len(kept) > 1 and kept[1][0] <= after + 1:
            kept.pop(0)
        return self._records(plan, kept, after)

    def _records(
        self, plan: str, kept: list[tuple[int, Path, int]], after: int
    ) -> Iterator[tuple[int, bytes]]:
        for first, path, end in kept:
            try:
                for position, _, payload in segments.read(path, first, after, end):
                    yield position, bytes(payload)
            except segments.SegmentDamaged as exc:
                raise InputLogCorrupt(str(path), exc.offset, exc.why) from None
            except FileNotFoundError:
                msg = f"input log of plan '{plan}': {path} was truncated while being read"
                raise InputLogError(msg) from None

    def adopt(self, plan: str, log_id: str, after: int) -> None:
        """Make `plan`'s log an empty continuation of log `log_id` after position `after` (a
        replica joining its sequencer from a snapshot covering `after`): its records deleted,
        its id `log_id`, its next position `after + 1`."""
        with self._lock:
            plan_log = self._plan(plan, create=True)
            assert plan_log is not None
            with plan_log.sync_lock, plan_log.lock:
                plan_log.remove()
            del self._plans[plan]
            try:
                PlanLog.prepare(plan_log.directory, log_id, after + 1)
            except OSError as exc:  # the log is empty: the next subscription adopts again
                why = f"cannot start the log after position {after}: {exc.strerror or exc}"
                raise DiskFault(plan, str(plan_log.directory), why, errno=exc.errno) from exc
            self._plan(plan, create=True)

    def truncate(self, plan: str, upto: int, log_id: str | None = None) -> int:
        """Delete the segments whose records all have positions <= `upto`; how many. Given
        `log_id`, only if the plan's log is still that one (not reset meanwhile)."""
        plan_log = self._plan(plan, create=False)
        if plan_log is None:
            return 0
        with plan_log.lock:
            self._check_open(plan_log)
            if log_id is not None and plan_log.log_id != log_id:
                return 0
            kept = plan_log.segments
            if upto >= plan_log.next - 1 and kept[-1][2]:
                try:
                    plan_log.roll()
                except DiskFault as fault:  # the older segments still go: room, on a full disk
                    log.warning("%s", fault)
            gone = 0
            while len(kept) > 1 and kept[1][0] - 1 <= upto:
                _, path, size = kept.pop(0)
                path.unlink()
                plan_log.size -= size
                gone += 1
            return gone

    def sizes(self) -> dict[str, int]:
        """Bytes kept per plan, for every plan with a log under the directory."""
        out: dict[str, int] = {}
        for directory in sorted(self.directory.iterdir()):
            plan = plan_dirs.decode(directory) if directory.is_dir() else None
            if plan is None:
                continue
            plan_log = self._plans.get(plan)
            if plan_log is not None:
                with plan_log.lock:
                    out[plan] = plan_log.size
            else:
                out[plan] = sum(
                    p.stat().st_size
                    for p in directory.iterdir()
                    if segments.segment_first(p.name) is not None
                )
        return out

    def close(self) -> None:
        """Stop the flusher, flush what a policy other than "off" left unflushed, close files."""
        self._closed = True
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join()
        with self._lock:
            flushed = True
            for plan_log in self._plans.values():
                with plan_log.lock:
                    flushed = plan_log.close(flush=self.policy is not FsyncPolicy.OFF) and flushed
            if self.policy is not FsyncPolicy.OFF and flushed:  # nothing to lose in a power cut now
                (self.directory / OPEN_FILE).unlink(missing_ok=True)

    def __enter__(self) -> InputLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _check_open(self, plan_log: PlanLog) -> None:
        if self._closed:
            msg = "the input log is closed"
            raise InputLogError(msg)
        plan_log.check()

    def _plan(self, plan: str, *, create: bool) -> PlanLog | None:
        found = self._plans.get(plan)
        if found is not None:
            return found
        try:
            dirname = plan_dirs.encode(plan)
        except ValueError as exc:
            raise InputLogError(str(exc)) from None
        with self._lock:
            if self._closed:
                msg = "the input log is closed"
                raise InputLogError(msg)
            found = self._plans.get(plan)
            if found is not None:
                return found
            directory = self.directory / dirname
            if not directory.is_dir() and not create:
                return None
            try:
                if not directory.is_dir():
                    self._make(plan, directory)
                found = PlanLog(plan, directory)
                found.open(tail_may_be_lost=self._tail_may_be_lost)
            except OSError as exc:
                why = f"cannot open the log: {exc.strerror or exc}"
                raise DiskFault(plan, str(directory), why, errno=exc.errno) from exc
            self._plans[plan] = found
            return found

    def _make(self, plan: str, directory: Path) -> None:
        """The directory of `plan`'s log (and the plan's name in it, when the directory's is a hash)."""
        directory.mkdir(mode=PRIVATE_DIR)
        try:
            if plan_dirs.is_hashed(directory.name):
                name_file = directory / plan_dirs.NAME_FILE
                fd = os.open(name_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
                with os.fdopen(fd, "wb") as f:
                    f.write(plan.encode("utf-8", "surrogatepass"))
                    os.fsync(f.fileno())
            fsync_dir(self.directory)
        except OSError:  # made again whole next time
            shutil.rmtree(directory, ignore_errors=True)
            raise

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._interval):
            for plan_log in list(self._plans.values()):
                written = plan_log.next - 1
                if plan_log.synced >= written or plan_log.broken or plan_log.failed_flush:
                    continue
                try:
                    plan_log.sync(written, undo_on_failure=False)
                except DiskFault as fault:
                    self._faults.met(fault, refused=False)
                except InputLogError as exc:
                    log.error("%s; appends to it are refused", exc)

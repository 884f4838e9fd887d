"""One plan's input log: its segments, its next position, recovery at open, writes and flushes.

`InputLog` holds one `PlanLog` per plan and decides when to flush; this module does the file
work. `lock` guards every field but `synced` and `flush_started`; a flush (`sync`) runs outside
`lock`, under `sync_lock`, so appends go on while the disk flushes and one flush serves every
append that waits for it (group commit).

What the disk refuses (`DiskFault`): a write that fails (ENOSPC, EDQUOT, EIO) is cut off
again before the append raises, so nothing of it stays in the log and its position is given
to the next record (if the cut fails too, the next append makes it first); a new segment that
cannot be made is made by the next append. Either way the log takes appends again as soon as
the disk does. A flush that fails makes the log refuse appends until it is reopened (the node
restarted): the records it covered may not be on disk, and they were processed already.
Imports `engine.errors` (through `errors`) and `app.private_files` only.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from pathlib import Path

from app.persistence import segments
from app.persistence.errors import DiskFault, InputLogCorrupt, InputLogError
from app.private_files import PRIVATE_FILE

log = logging.getLogger(__name__)

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
ID_FILE = "id"
TERM_FILE = "term"
DELIVERED_FILE = "delivered"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(directory: Path, name: str, text: str) -> None:
    """Replace file `name` in `directory` with `text`, whole, on disk before it returns (an
    `OSError` leaves the file as it was)."""
    temporary = directory / f"{name}.new"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, directory / name)
    except OSError:
        temporary.unlink(missing_ok=True)  # (a full disk: what it holds is room)
        raise
    fsync_dir(directory)


class PlanLog:
    """The segments of one plan under `directory`; `open()` before use."""

    def __init__(self, plan: str, directory: Path) -> None:
        self.plan = plan
        self.directory = directory
        self.lock = threading.Lock()
        self.sync_lock = threading.Lock()
        self.segments: list[tuple[int, Path, int]] = []  # (first position, path, bytes)
        self.fd = -1
        self.next = 1
        self.size = 0
        self.synced = 0  # the highest position known to be on disk
        self.synced_bytes = 0  # how much of the newest segment is known to be on disk
        self.broken: str | None = None  # why the log refuses everything for good (it was reset)
        self.failed_flush: str | None = None  # why a flush failed: appends refused until reopened
        self.cut_to: int | None = None  # the size a failed append's segment is still to be cut back to
        self.flush_started: float | None = None  # monotonic: when the flush running now began
        self.log_id = ""

    def open(self, *, tail_may_be_lost: bool = False) -> None:
        """Check every segment, cut a torn tail off the newest; `InputLogCorrupt` for the rest.
        `tail_may_be_lost`: the machine went down since the log was last open (a power cut)
        and not every append was flushed: records may be gone whole, and the log continues
        under a new id, as after a torn tail."""
        self.log_id = self._identity()
        found = sorted(
            (first, path)
            for path in self.directory.iterdir()
            if (first := segments.segment_first(path.name)) is not None
        )
        if not found:
            self._create(1)
            return
        expected = found[0][0]
        for i, (first, path) in enumerate(found):
            if first != expected:
                why = f"expected the segment of position {expected} before this one"
                raise InputLogCorrupt(str(path), 0, why)
            scan = segments.scan(path)
            if scan.damage is not None:
                if i < len(found) - 1 or not scan.damage.torn:
                    raise InputLogCorrupt(str(path), scan.damage.offset, scan.damage.why)
                self._cut(path, first + scan.count, scan.end, scan.damage.why)
                # positions from the cut on will be taken again by other records: under a new log
                # id, so that no output of a lost record passes for one of theirs
                self.log_id = self._new_identity()
            self.segments.append((first, path, scan.end))
            expected = first + scan.count
        if tail_may_be_lost and expected > 1:
            log.warning(
                "input log of plan %s: the machine went down while the log was open and not every "
                "record was flushed (fsync is not \"always\"): records after position %d may be lost, "
                "so the log continues under a new id",
                self.plan, expected - 1,
            )  # fmt: skip
            self.log_id = self._new_identity()
        self.next = expected
        self.synced = expected - 1
        self.size = sum(s[2] for s in self.segments)
        self.synced_bytes = self.segments[-1][2]
        self.fd = os.open(self.segments[-1][1], _OPEN_FLAGS)

    def _identity(self) -> str:
        """The log's id (file `id`): positions count in one log, so a snapshot names the log
        its position belongs to. Made when the log is made, or reset."""
        path = self.directory / ID_FILE
        try:
            found = path.read_text("ascii").strip()
        except FileNotFoundError:
            found = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise InputLogCorrupt(str(path), 0, f"unreadable log id ({exc})") from None
        if found:
            return found
        return self._new_identity()

    def _new_identity(self) -> str:
        made = uuid.uuid4().hex
        _write_identity(self.directory, made)
        return made

    @property
    def term(self) -> int:
        """The term of the records this log holds (file `term`: a log id and a lease epoch, set by
        `set_term`); 0 when it was set for another log (the log was reset or cut since) or never."""
        return self._number_for_this_log(TERM_FILE)

    def set_term(self, term: int) -> None:
        """Record that this log's records are those of `term`'s log (on disk before it returns)."""
        replace_durably(self.directory, TERM_FILE, f"{self.log_id} {term}")

    @property
    def delivered(self) -> int:
        """The position up to which the outputs of this log's records are known written (file
        `delivered`: a log id and a position, set by `set_delivered`); 0 when it was set for
        another log or never."""
        return self._number_for_this_log(DELIVERED_FILE)

    def _number_for_this_log(self, name: str) -> int:
        """The number file `name` holds after this log's id (0: none, or another log's)."""
        try:
            found = (self.directory / name).read_text("ascii").split()
        except (OSError, UnicodeDecodeError):
            return 0
        if len(found) != 2 or found[0] != self.log_id or not found[1].isdigit():
            return 0
        return int(found[1])

    def set_delivered(self, position: int) -> None:
        """Record that the outputs of this log's records up to `position` are known written.
        Replaced whole but not synced: one lost in a power cut only makes a restart hold again
        outputs that are written (the sink skips them)."""
        temporary = self.directory / f"{DELIVERED_FILE}.new"
        try:
            temporary.write_text(f"{self.log_id} {position}", "ascii")
            os.replace(temporary, self.directory / DELIVERED_FILE)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise

    @staticmethod
    def prepare(directory: Path, log_id: str, first: int) -> None:
        """Lay out an empty log `log_id` whose first record will be at `first` (before `open`).
        The segment first: one that fails halfway leaves no log of that id starting at 1."""
        path = directory / segments.segment_name(first)
        os.close(os.open(path, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        _write_identity(directory, log_id)

    def remove(self) -> None:
        """Delete every segment and the id (closed first): `open` then starts a new log at 1."""
        self.close(flush=False)
        self.broken = "it was reset"
        for path in self.directory.iterdir():
            if path.name == ID_FILE or segments.segment_first(path.name) is not None:
                path.unlink()
        fsync_dir(self.directory)

    def _cut(self, path: Path, position: int, end: int, why: str) -> None:
        size = path.stat().st_size
        log.warning(
            "input log of plan '%s': cut a torn tail of %d bytes from position %d on (%s, offset %d: %s)",
            self.plan, size - end, position, path, end, why,
        )  # fmt: skip
        with path.open("r+b") as f:
            f.truncate(end)
            os.fsync(f.fileno())

    def _create(self, first: int) -> None:
        path = self.directory / segments.segment_name(first)
        try:
            fd = os.open(path, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
        except FileExistsError:
            if path.stat().st_size:
                raise
            fd = os.open(path, _OPEN_FLAGS)  # made by a roll that failed after it: still empty
        try:
            fsync_dir(self.directory)
        except OSError:
            os.close(fd)
            raise
        self.fd = fd
        self.segments.append((first, path, 0))
        self.synced_bytes = 0

    def check(self) -> None:
        if self.broken:
            msg = f"input log of plan '{self.plan}': {self.broken}"
            raise InputLogError(msg)
        if self.failed_flush:
            raise DiskFault(
                self.plan, str(self.segments[-1][1]), f"a flush failed ({self.failed_flush})", restart=True
            )

    def flush(self, fd: int) -> None:
        """fdatasync `fd`, with `flush_started` set meanwhile (a flush that stalls shows)."""
        started = time.monotonic()
        if self.flush_started is None:
            self.flush_started = started
        try:
            os.fdatasync(fd)
        finally:
            if self.flush_started == started:
                self.flush_started = None

    def roll(self) -> None:
        """Seal the newest segment (flushed) and start one at the next position. Under `lock`.
        `DiskFault` when the disk refuses: a segment that could not be made is made by the next
        append (`fd` is -1 meanwhile); a failed flush refuses appends until the log is reopened."""
        if self.fd >= 0:
            if self.cut_to is not None:  # a failed append's bytes go before the segment is sealed
                self._cut_back(self.segments[-1][1])
            try:
                self.flush(self.fd)
            except OSError as exc:
                self.failed_flush = exc.strerror or str(exc)
                self.check()
            self.synced = self.next - 1
            os.close(self.fd)
            self.fd = -1
        try:
            self._create(self.next)
        except OSError as exc:
            path = self.directory / segments.segment_name(self.next)
            why = f"cannot start a new segment: {exc.strerror or exc}"
            raise DiskFault(self.plan, str(path), why, errno=exc.errno) from exc

    def write(self, data: bytes) -> int:
        """Append one framed record; its position. Under `lock`. `DiskFault` when the disk does
        not take it: what was written of it is cut off (now, or before the next append)."""
        first, path, used = self.segments[-1]
        if self.cut_to is not None:
            self._cut_back(path)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.cut_to = used
            try:
                self._cut_back(path)
            except DiskFault as fault:
                log.warning("%s", fault)
            why = f"cannot append: {exc.strerror or exc}"
            raise DiskFault(self.plan, str(path), why, errno=exc.errno) from exc
        self.segments[-1] = (first, path, used + len(data))
        self.size += len(data)
        position = self.next
        self.next += 1
        return position

    def _cut_back(self, path: Path) -> None:
        """Cut the newest segment back to `cut_to`: a failed append's bytes go (no reader reads
        them meanwhile: it reads up to the size the log keeps)."""
        assert self.cut_to is not None
        try:
            os.ftruncate(self.fd, self.cut_to)
        except OSError as exc:
            why = f"a failed append could not be cut off yet: {exc.strerror or exc}"
            raise DiskFault(self.plan, str(path), why, errno=exc.errno) from exc
        self.cut_to = None

    def sync(self, position: int, *, undo_on_failure: bool) -> None:
        """Return once every record up to `position` is on disk. If the flush fails, with
        `undo_on_failure` the newest segment is cut back to what is known to be on disk (those
        appends all fail), and the log refuses appends until it is reopened (`DiskFault`)."""
        with self.sync_lock:
            if self.synced >= position:
                return
            with self.lock:
                self.check()
                if self.fd < 0:
                    msg = "the input log is closed"
                    raise InputLogError(msg)
                target, segment, end = self.next - 1, self.segments[-1][1], self.segments[-1][2]
                fd = os.dup(self.fd)
            try:
                self.flush(fd)
            except OSError as exc:
                with self.lock:
                    self._failed_flush(exc, segment, undo_on_failure)
                why = f"cannot flush: {exc.strerror or exc}"
                raise DiskFault(self.plan, str(segment), why, errno=exc.errno, restart=True) from exc
            finally:
                os.close(fd)
            with self.lock:
                self.synced = max(self.synced, target)
                if self.segments[-1][1] == segment:
                    self.synced_bytes = max(self.synced_bytes, end)

    def _failed_flush(self, exc: OSError, segment: Path, undo: bool) -> None:
        self.failed_flush = exc.strerror or str(exc)
        first, path, used = self.segments[-1]
        if not undo or path != segment or used == self.synced_bytes:
            return
        try:
            os.ftruncate(self.fd, self.synced_bytes)
        except OSError:
            return
        self.size -= used - self.synced_bytes
        self.segments[-1] = (first, path, self.synced_bytes)
        self.next = self.synced + 1

    def close(self, *, flush: bool) -> bool:
        """Flush (if asked) and close the newest segment; whether what it holds is flushed.
        Under `lock`."""
        if self.fd < 0:
            return True
        if self.cut_to is not None:  # else `open` cuts the failed append's bytes, as a torn tail
            try:
                self._cut_back(self.segments[-1][1])
            except DiskFault as fault:
                log.warning("%s", fault)
        flushed = True
        if flush and self.synced < self.next - 1:
            try:
                os.fdatasync(self.fd)
            except OSError as exc:  # the log is closed all the same; a power cut may cost records
                log.error("input log of plan '%s': the last flush failed: %s", self.plan, exc.strerror or exc)
                flushed = False
        os.close(self.fd)
        self.fd = -1
        return flushed and not self.failed_flush


def _write_identity(directory: Path, log_id: str) -> None:
    fd = os.open(directory / ID_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(log_id)
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(directory)

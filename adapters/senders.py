"""Events known by who sent them: `SenderRun`, the marks a receiving plan keeps (`SenderMarks`),
and how the identity travels in a Data Bridge bundle.

A sender that names itself gives each event an identity `(sender, major, minor)`: Cepheus'
publisher numbers its events (`major`: the number of the first event of the wire bundle,
`minor`: the event's place in it), and a Cepheus node forwarding a plan's outputs gives each
its origin (`sender`: the route and its input log, `major`/`minor`: the log position and the
output's index there, the same on every member of an HA group). A sender delivers its events
in identity order, one bundle at a time, and sends a bundle again only until it is
acknowledged: so a plan that remembers the last identity it took from each sender (its mark)
knows every event at or before it, whatever bundle it comes in, and takes each event once. A
bundle cut differently on a retry (more events queued meanwhile) only adds new events after
the mark. Marks are kept per plan, in the plan's input log and snapshots
(`app.persistence.journal`), so a restarted node or a new HA notifier still knows them.

On the wire the identity rides in an event's arbitrary data map, which a stock WSO2 receiver
keeps with the event and no query reads: `cepheus.from` = `major.minor@sender` on the first
event of a run; the events after it without the key continue the run (minor + 1 each);
`cepheus.from` = `-` starts a run of events without identity (always taken). An event 0
without the key means the bundle carries no identity (any other sender's). Over HTTP
the same text goes in the `Cepheus-From` header, for the first event of the body.

At most `keep` senders are remembered per plan (the least recently heard of go first, so an
unauthenticated flood of names cannot grow it without bound; clients must log in anyway).
Imports nothing of ours.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

FROM_KEY = "cepheus.from"  # the arbitrary-data key
FROM_HEADER = "Cepheus-From"
MAX_SENDER = 300  # characters: a route (up to 200) and its input log's id (up to 64)
ANONYMOUS = "-"
_LIMIT = 2**63
T = TypeVar("T")


class IdentityError(ValueError):
    """An identity that cannot be read; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class SenderRun:
    """`count` consecutive events of `sender`: `(major, minor)`, `(major, minor + 1)`, ..."""

    sender: str
    major: int
    minor: int
    count: int

    @property
    def last(self) -> tuple[int, int]:
        return self.major, self.minor + self.count - 1

    def text(self) -> str:
        return identity(self.sender, self.major, self.minor) if self.sender else ANONYMOUS


def identity(sender: str, major: int, minor: int) -> str:
    """The text of one event's identity: `major.minor@sender`."""
    return f"{major}.{minor}@{sender}"


Runs = tuple[SenderRun, ...]
"""A bundle's identities: runs covering its first events in order (usually all of them); ()
for a bundle whose sender did not name itself."""


def parse_from(text: str, count: int = 1) -> SenderRun:
    """`major.minor@sender` (or `-`) as a run of `count` events; `IdentityError` naming the flaw."""
    if text == ANONYMOUS:
        return SenderRun("", 0, 0, count)
    numbers, at, sender = text.partition("@")
    major, dot, minor = numbers.partition(".")
    if not at or not dot or not major.isdigit() or not minor.isdigit():
        msg = f"{FROM_KEY} {text[:80]!r} is not major.minor@sender"
        raise IdentityError(msg)
    if not 0 < len(sender) <= MAX_SENDER:
        msg = f"{FROM_KEY}: the sender must have 1 to {MAX_SENDER} characters"
        raise IdentityError(msg)
    run = SenderRun(sender, int(major), int(minor), count)
    if run.major >= _LIMIT or run.minor + count >= _LIMIT:
        msg = f"{FROM_KEY} {text[:80]!r}: numbers must stay under 2**63"
        raise IdentityError(msg)
    return run


def runs_of(arbitrary: Sequence[Mapping[str, str] | None]) -> Runs:
    """The runs the events' arbitrary data maps (one per event, None: none) spell."""
    if not arbitrary or arbitrary[0] is None or FROM_KEY not in arbitrary[0]:
        return ()
    runs: list[SenderRun] = []
    start = 0
    for i, data in enumerate(arbitrary):
        text = None if data is None else data.get(FROM_KEY)
        if text is not None and i > 0:
            runs[-1] = _counted(runs[-1], i - start)
        if text is not None:
            runs.append(parse_from(text))
            start = i
    runs[-1] = _counted(runs[-1], len(arbitrary) - start)
    return tuple(runs)


def _counted(run: SenderRun, count: int) -> SenderRun:
    if run.minor + count >= _LIMIT:
        msg = f"{FROM_KEY} {run.text()!r}: numbers must stay under 2**63"
        raise IdentityError(msg)
    return SenderRun(run.sender, run.major, run.minor, count)


def marked(data: Mapping[str, str] | None, sender: str, major: int, minor: int) -> dict[str, str]:
    """An event's arbitrary data with the start of a run added: its identity."""
    return {**(data or {}), FROM_KEY: identity(sender, major, minor)}


def select(items: Sequence[T], keep: Sequence[tuple[int, int]]) -> list[T]:
    """The items of the (start, stop) slices `SenderMarks.fresh` keeps, in order."""
    return [item for start, stop in keep for item in items[start:stop]]


class SenderMarks:
    """The last identity a plan took from each sender. Not thread-safe: its owner's lock
    (the plan journal's, or the node's per plan) orders `fresh` and `advance`."""

    def __init__(self, keep: int = 10_000) -> None:
        self._keep = keep
        self._marks: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def fresh(self, runs: Runs, events: int) -> tuple[list[tuple[int, int]] | None, Runs]:
        """Which of a bundle's `events` are new: None (all of them) or the (start, stop) slices
        to keep (empty: none); and the runs of the kept events, in their order (for `advance`
        once taken)."""
        if not runs:
            return None, ()
        seen: dict[str, tuple[int, int]] = {}
        slices: list[tuple[int, int]] = []
        kept: list[SenderRun] = []
        start = 0
        for run in runs:
            mark = (seen.get(run.sender) or self._marks.get(run.sender)) if run.sender else None
            skip = _skipped(run, mark)
            if skip < run.count:
                slices.append((start + skip, start + run.count))
                kept.append(SenderRun(run.sender, run.major, run.minor + skip, run.count - skip))
                if run.sender:
                    seen[run.sender] = run.last
            start += run.count
        if start < events:  # events past the runs have no identity: always new
            slices.append((start, events))
        if len(slices) == 1 and slices[0] == (0, events):
            return None, tuple(kept)
        return _merged(slices), tuple(kept)

    def advance(self, runs: Iterable[SenderRun]) -> None:
        """The events of `runs` were taken (or a record of them replayed)."""
        for run in runs:
            if run.count <= 0 or not run.sender:
                continue
            mark = self._marks.get(run.sender)
            if mark is None or run.last > mark:
                self._marks[run.sender] = run.last
            self._marks.move_to_end(run.sender)
        while len(self._marks) > self._keep:
            self._marks.popitem(last=False)

    def __len__(self) -> int:
        return len(self._marks)

    def state(self) -> list[list[object]]:
        """The marks, oldest heard of first (for a snapshot or a joining standby)."""
        return [[sender, major, minor] for sender, (major, minor) in self._marks.items()]

    def restore(self, state: Iterable[Sequence[object]]) -> None:
        """Replace the marks with a `state()`; `IdentityError` when it is not one."""
        marks: OrderedDict[str, tuple[int, int]] = OrderedDict()
        for entry in state:
            if len(entry) != 3:
                msg = f"a sender mark must be [sender, major, minor], not {entry!r:.80}"
                raise IdentityError(msg)
            sender, major, minor = entry
            if not isinstance(sender, str) or type(major) is not int or type(minor) is not int:
                msg = f"a sender mark must be [sender, major, minor], not {entry!r:.80}"
                raise IdentityError(msg)
            marks[sender] = (major, minor)
        self._marks = marks

    def clear(self) -> None:
        self._marks.clear()


def _skipped(run: SenderRun, mark: tuple[int, int] | None) -> int:
    """How many of the run's first events are at or before `mark`."""
    if mark is None or run.major > mark[0]:
        return 0
    if run.major < mark[0]:
        return run.count
    return max(0, min(run.count, mark[1] - run.minor + 1))


def _merged(slices: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, stop in slices:
        if out and out[-1][1] == start:
            out[-1] = (out[-1][0], stop)
        else:
            out.append((start, stop))
    return out

"""What every window shares: its context (clock, scheduler), emission, and the registry.

A window receives chunks of current events and emits chunks of current, expired and
reset events (`engine.events` kinds). A batch window emits each completed batch as a
chunk of its own. Windows that keep events expose them through `contents()` so joins
can match against them. State is plain values: `snapshot()` / `restore()`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from engine.errors import Diagnostic, QueryValidationError
from engine.events import Chunk
from engine.runtime.clock import Scheduler, Timer
from engine.types import AttrType


@dataclass
class WindowContext:
    scheduler: Scheduler
    timer_owner: str  # stable id of this window instance's timers
    now: Callable[[], int]
    expired_needed: bool  # Siddhi's outputExpectsExpiredEvents: the query inserts expired/all events
    query: str
    attribute_types: list[AttrType]
    start_time: Callable[[], int]
    for_join: bool = False  # Siddhi's findToBeExecuted: a join will search contents()
    # Anything downstream reads expired events (expired output, or aggregates): when False a
    # sliding window may skip building them, since nobody could tell.
    expired_used: bool = True


Emit = Callable[[Chunk], None]


class Window:
    """Base of all windows."""

    #: Whether `contents()` lists the events a join should match against.
    findable = True

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        self.ctx = ctx
        self.args = args
        self.emit: Emit = _drop
        self._timer: Timer | None = None

    def start(self) -> None:
        """Called once when the runtime starts (schedule start-time timers here)."""

    def process(self, chunk: Chunk) -> None:
        raise NotImplementedError

    def on_timer(self, due: int, now: int) -> None:
        """A timer this window asked for is due."""

    def notify_at(self, due: int) -> None:
        """Ask for `on_timer(due, now)` once the clock reaches `due`."""
        if self._timer is None:
            self._timer = Timer(self.ctx.scheduler, self.ctx.timer_owner, self.on_timer)
        self._timer.at(due)

    def register_timer(self) -> None:
        """Claim the timer id up front (windows that schedule do this in __init__), so a
        restored scheduler finds its owner."""
        if self._timer is None:
            self._timer = Timer(self.ctx.scheduler, self.ctx.timer_owner, self.on_timer)

    def contents(self) -> list[tuple[int, tuple[Any, ...]]]:
        return []

    def rows(self) -> Iterable[tuple[Any, ...]]:
        """What a join matches against, in order (a live view where the window can give one)."""
        return [r for _, r in self.contents()]

    def snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass


def _drop(chunk: Chunk) -> None:
    pass


@dataclass(frozen=True)
class Param:
    """One window parameter: allowed types; `attribute` means it must name an attribute
    (read per event) rather than be a constant; `dynamic` takes either. Any other parameter
    must be a literal (Siddhi's non-dynamic parameters): `1/2` is refused, not folded."""

    name: str
    types: tuple[AttrType, ...]
    attribute: bool = False
    optional: bool = False
    dynamic: bool = False  # may be an attribute, an expression or a constant


WindowFactory = Callable[[WindowContext, list[Any]], Window]
ArgCheck = Callable[[list[Any], list[AttrType]], "str | None"]


class WindowArgumentError(QueryValidationError):
    """A window parameter value Siddhi rejects when the app is created."""

    def __init__(self, window: str, message: str) -> None:
        super().__init__([Diagnostic(f"{window} window: {message}", 1, 1, 1, 1)])


def check_args(spec_name: str, check: ArgCheck, args: list[Any], types: list[AttrType]) -> None:
    """Run a spec's value check when the window is built (the planner may run it earlier,
    with the call's position); raises WindowArgumentError."""
    problem = check(args, types)
    if problem is not None:
        raise WindowArgumentError(spec_name, problem)


@dataclass(frozen=True)
class WindowSpec:
    name: str
    factory: type[Window]
    # Allowed parameter lists; the first one that matches is used.
    signatures: tuple[tuple[Param, ...], ...]
    batch: bool = False
    description: str = ""
    # Checks on parameter values a signature cannot express (a negative length, an
    # 'asc'/'desc' string...): `check(args, arg_types)` returns a message or None.
    check: ArgCheck | None = None


REGISTRY: dict[str, WindowSpec] = {}


def register(spec: WindowSpec, *aliases: str) -> WindowSpec:
    for name in (spec.name, *aliases):
        REGISTRY[name.lower()] = spec
    return spec


INT_TYPES = (AttrType.INT, AttrType.LONG)
TIME = (AttrType.INT, AttrType.LONG)
ANY = tuple(AttrType)

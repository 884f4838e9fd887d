"""What every window shares: its context (clock, scheduler), emission, and the registry.

A window receives chunks of current events and emits chunks of current, expired and
reset events (`engine.events` kinds). A batch window emits each completed batch as a
chunk of its own. Windows that keep events expose them through `contents()` so joins
can match against them. State is plain values: `snapshot()` / `restore()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import Chunk
from engine.runtime.clock import Scheduler
from engine.types import AttrType


@dataclass
class WindowContext:
    scheduler: Scheduler
    now: Callable[[], int]
    expired_needed: bool  # does anything downstream read expired events?
    query: str
    attribute_types: list[AttrType]
    start_time: Callable[[], int]


Emit = Callable[[Chunk], None]


class Window:
    """Base of all windows."""

    #: Whether `contents()` lists the events a join should match against.
    findable = True

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        self.ctx = ctx
        self.args = args
        self.emit: Emit = _drop

    def start(self) -> None:
        """Called once when the runtime starts (schedule start-time timers here)."""

    def process(self, chunk: Chunk) -> None:
        raise NotImplementedError

    def on_timer(self, due: int, now: int) -> None:
        """A timer this window asked for is due."""

    def notify_at(self, due: int) -> None:
        self.ctx.scheduler.notify_at(due, self.on_timer)

    def contents(self) -> list[tuple[int, tuple[Any, ...]]]:
        return []

    def snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass

    def restore_timers(self) -> None:
        """Re-register timers after `restore` (the scheduler itself is not snapshotted)."""


def _drop(chunk: Chunk) -> None:
    pass


@dataclass(frozen=True)
class Param:
    """One window parameter: allowed types; `attribute` means it must name an attribute
    (read per event) rather than be a constant; `time` accepts int/long time values."""

    name: str
    types: tuple[AttrType, ...]
    attribute: bool = False
    optional: bool = False
    dynamic: bool = False  # may be an attribute or a constant


WindowFactory = Callable[[WindowContext, list[Any]], Window]


@dataclass(frozen=True)
class WindowSpec:
    name: str
    factory: type[Window]
    # Allowed parameter lists; the first one that matches is used.
    signatures: tuple[tuple[Param, ...], ...]
    batch: bool = False
    description: str = ""


REGISTRY: dict[str, WindowSpec] = {}


def register(spec: WindowSpec, *aliases: str) -> WindowSpec:
    for name in (spec.name, *aliases):
        REGISTRY[name.lower()] = spec
    return spec


INT_TYPES = (AttrType.INT, AttrType.LONG)
TIME = (AttrType.INT, AttrType.LONG)
ANY = tuple(AttrType)

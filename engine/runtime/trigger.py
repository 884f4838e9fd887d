"""Triggers: `at 'start'`, `at every <period>`, and Quartz-style cron expressions.

A trigger stream has one attribute, `triggered_time` (long). Periodic triggers fire one
period after start and then at a fixed rate; `triggered_time` is the scheduled time.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.events import Chunk
from engine.query.definitions import TriggerDefinition
from engine.runtime.clock import Scheduler, Timer
from engine.runtime.junction import Junction

_FIELDS = (
    ("second", 0, 59),
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 1, 7),
)
_MONTHS = {m.upper(): i for i, m in enumerate(calendar.month_abbr) if m}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}


@dataclass(frozen=True)
class Cron:
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int] | None  # None: any (`?` or `*`)
    months: frozenset[int]
    weekdays: frozenset[int] | None  # 1 = Sunday, as Quartz
    years: frozenset[int] | None

    def next_after(self, ms: int) -> int | None:
        """The first firing time strictly after `ms` (UTC), or None within 5 years."""
        t = datetime.fromtimestamp(ms / 1000, UTC).replace(microsecond=0) + timedelta(seconds=1)
        limit = t + timedelta(days=366 * 5)
        while t < limit:
            if t.month not in self.months or (self.years is not None and t.year not in self.years):
                t = (t.replace(day=1, hour=0, minute=0, second=0) + timedelta(days=32)).replace(day=1)
                continue
            quartz_dow = (t.isoweekday() % 7) + 1
            day_ok = (self.days is None or t.day in self.days) and (
                self.weekdays is None or quartz_dow in self.weekdays
            )
            if not day_ok:
                t = t.replace(hour=0, minute=0, second=0) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0, second=0) + timedelta(hours=1)
                continue
            if t.minute not in self.minutes:
                t = t.replace(second=0) + timedelta(minutes=1)
                continue
            if t.second not in self.seconds:
                t += timedelta(seconds=1)
                continue
            return int(t.timestamp() * 1000)
        return None


def _field(text: str, lo: int, hi: int, names: dict[str, int]) -> frozenset[int] | None | str:
    if text in ("*", "?"):
        return None
    values: set[int] = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/", 1)
            if not step_text.isdigit() or int(step_text) == 0:
                return f"bad step '{step_text}'"
            step = int(step_text)
        if part in ("*", "?"):
            a, b = lo, hi
        elif "-" in part:
            a_text, b_text = part.split("-", 1)
            a, b = names.get(a_text.upper(), -1), names.get(b_text.upper(), -1)
            a = int(a_text) if a_text.isdigit() else a
            b = int(b_text) if b_text.isdigit() else b
        else:
            v = int(part) if part.isdigit() else names.get(part.upper(), -1)
            a, b = v, (hi if step > 1 else v)
        if not (lo <= a <= hi and lo <= b <= hi):
            return f"'{part}' is out of range {lo}-{hi}"
        values.update(range(a, b + 1, step))
    return frozenset(values)


def parse_cron(text: str) -> Cron | str:
    """A Quartz cron expression (`sec min hour day-of-month month day-of-week [year]`), or a
    message saying what is wrong with it."""
    parts = text.split()
    if len(parts) not in (6, 7):
        return f"cron expression '{text}' needs 6 or 7 fields (sec min hour day month weekday [year])"
    fields: list[Any] = []
    for i, (name, lo, hi) in enumerate(_FIELDS):
        names = _MONTHS if i == 4 else (_DAYS if i == 5 else {})
        parsed = _field(parts[i], lo, hi, names)
        if isinstance(parsed, str):
            return f"cron {name} field: {parsed}"
        fields.append(parsed)
    years = None
    if len(parts) == 7:
        y = _field(parts[6], 1970, 2199, {})
        if isinstance(y, str):
            return f"cron year field: {y}"
        years = y
    sec, minute, hour, dom, month, dow = fields
    return Cron(
        sec if sec is not None else frozenset(range(60)),
        minute if minute is not None else frozenset(range(60)),
        hour if hour is not None else frozenset(range(24)),
        dom,
        month if month is not None else frozenset(range(1, 13)),
        dow,
        years,
    )


CATCH_UP_RUNS = 100
_DAY_MS = 24 * 3600 * 1000


class Trigger:
    def __init__(
        self,
        definition: TriggerDefinition,
        junction: Junction,
        scheduler: Scheduler,
        now: Callable[[], int],
        start_time: Callable[[], int],
    ) -> None:
        self.definition = definition
        self.junction = junction
        self.scheduler = scheduler
        self.now = now
        self.start_time = start_time
        self.next_due: int | None = None
        self.timer = Timer(scheduler, f"trigger/{definition.name}", self._on_timer)
        cron = parse_cron(definition.at) if definition.at and definition.at.lower() != "start" else None
        self.cron = cron if isinstance(cron, Cron) else None

    def _fire(self, t: int) -> None:
        self.junction.publish(Chunk([t], [(t,)]))

    def start(self) -> None:
        d = self.definition
        start = self.start_time()
        if d.every_ms is not None:
            self._schedule(start + d.every_ms)
        elif self.cron is not None:
            due = self.cron.next_after(start)
            if due is not None:
                self._schedule(due)
        else:
            self._fire(start)

    def _schedule(self, due: int) -> None:
        self.next_due = due
        self.timer.at(due)

    def _on_timer(self, due: int, now: int) -> None:
        """Fire, and schedule the next run. Runs missed by a short stall fire one after
        another, as a fixed-rate timer does; past `CATCH_UP_RUNS` missed runs of `every` (or
        a day late for `at` a cron) the trigger fires once, for the latest run due, and carries
        on from there: a plan restored from an old snapshot on the wall clock must not send a
        week of `every 1 sec` at once. On the playback clock timers fire on time, so nothing
        is skipped."""
        if due != self.next_due:
            return
        d = self.definition
        if d.every_ms is not None:
            missed = (now - due) // d.every_ms
            if missed > CATCH_UP_RUNS:
                due += missed * d.every_ms
            self._schedule(due + d.every_ms)
            self._fire(due)
        elif self.cron is not None:
            following = self.cron.next_after(now if now - due > _DAY_MS else due)
            if following is not None:
                self._schedule(following)
            else:
                self.next_due = None
            self._fire(due)

    def snapshot(self) -> Any:
        return self.next_due

    def restore(self, state: Any) -> None:
        self.next_due = state

"""`cron(cron.expression)`: a batch window released at the times of a Quartz cron
expression (spec §1.15), on the engine clock (Siddhi uses the wall clock; playback here
makes the schedule follow event time).

Events are held and nothing is emitted on arrival. At each fire time, if events arrived
since the last release, the previous batch leaves as expired events (stamped now) and the
new batch as current events; there is no reset. The window cannot be joined.

Expressions: `sec min hour day-of-month month day-of-week [year]`, with `*`, `?`, lists,
ranges (wrapping ones too), `/` steps and month / weekday names, evaluated in UTC. Quartz's
`L`, `W` and `#` forms are not supported and are rejected with the plan.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, check_args, register
from engine.runtime.windows.shared import Ev, Out, load_list, save
from engine.types import AttrType

MONTHS = {m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
DAYS = {d: i + 1 for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}
# (low, high, names) per field: seconds, minutes, hours, day of month, month, day of week, year
FIELDS: list[tuple[int, int, dict[str, int]]] = [
    (0, 59, {}),
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, MONTHS),
    (1, 7, DAYS),
    (1970, 2199, {}),
]


class CronError(ValueError):
    pass


def _value(text: str, names: dict[str, int], low: int, high: int) -> int:
    value = names.get(text.upper()) if names else None
    if value is None:
        if not text.isdigit():
            msg = f"'{text}' is not a value of this field"
            raise CronError(msg)
        value = int(text)
    if not low <= value <= high:
        msg = f"{value} is outside {low}-{high}"
        raise CronError(msg)
    return value


def _field(text: str, low: int, high: int, names: dict[str, int]) -> set[int] | None:
    """The values a field allows; None for `?` (no constraint)."""
    if text == "?":
        return None
    out: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else None
        if step_text and step is None:
            msg = f"bad step in '{part}'"
            raise CronError(msg)
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = _value(a, names, low, high), _value(b, names, low, high)
        else:
            first = _value(base, names, low, high)
            last = high if step else first
        span = last - first if last >= first else last + (high - low + 1) - first  # ranges may wrap
        for k in range(0, span + 1, step or 1):
            out.add(low + (first - low + k) % (high - low + 1))
    return out


def parse_cron(expression: str) -> list[set[int] | None]:
    parts = expression.split()
    if len(parts) not in (6, 7):
        msg = f"expected 6 or 7 fields, found {len(parts)}"
        raise CronError(msg)
    if len(parts) == 6:
        parts.append("*")
    fields = [_field(p, lo, hi, names) for p, (lo, hi, names) in zip(parts, FIELDS, strict=True)]
    if (fields[3] is None) == (fields[5] is None):
        msg = "exactly one of day-of-month and day-of-week must be '?'"
        raise CronError(msg)
    if any(f is None for i, f in enumerate(fields) if i not in (3, 5)):
        msg = "'?' is only allowed for day-of-month or day-of-week"
        raise CronError(msg)
    return fields


def next_fire(fields: list[set[int] | None], after_ms: int) -> int | None:
    """The first fire time strictly after `after_ms` (whole seconds), or None."""
    sec, minute, hour, dom, month, dow, year = fields
    assert (
        sec is not None and minute is not None and hour is not None and month is not None and year is not None
    )
    t = datetime.fromtimestamp(after_ms // 1000 + 1, UTC)
    while t.year <= 2199:
        if t.year not in year:
            t = datetime(t.year + 1, 1, 1, tzinfo=UTC)
        elif t.month not in month:
            t = datetime(t.year + (t.month == 12), t.month % 12 + 1, 1, tzinfo=UTC)
        elif (dom is not None and t.day not in dom) or (
            dow is not None and (t.weekday() + 1) % 7 + 1 not in dow
        ):
            t = datetime(t.year, t.month, t.day, tzinfo=UTC) + timedelta(days=1)
        elif t.hour not in hour:
            t = datetime(t.year, t.month, t.day, t.hour, tzinfo=UTC) + timedelta(hours=1)
        elif t.minute not in minute:
            t = datetime(t.year, t.month, t.day, t.hour, t.minute, tzinfo=UTC) + timedelta(minutes=1)
        elif t.second not in sec:
            t += timedelta(seconds=1)
        else:
            return int(t.timestamp()) * 1000
    return None


def _check(args: list[Any], types: list[AttrType]) -> str | None:
    try:
        parse_cron(str(args[0]))
    except CronError as exc:
        return f"invalid cron expression '{args[0]}': {exc}"
    return None


class CronWindow(Window):
    findable = False

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        check_args("cron", _check, args, [])
        self.fields = parse_cron(str(args[0]))
        self.current: list[Ev] = []
        self.expired: list[Ev] = []
        self.next: int | None = None
        self.register_timer()

    def _schedule(self, after: int) -> None:
        self.next = next_fire(self.fields, after)
        if self.next is not None:
            self.notify_at(self.next)

    def start(self) -> None:
        if self.next is None:
            self._schedule(self.ctx.start_time())

    def process(self, chunk: Chunk) -> None:
        self.current.extend(zip(chunk.ts, chunk.rows, strict=True))

    def on_timer(self, due: int, now: int) -> None:
        if due != self.next:
            return
        if self.current:
            out = Out()
            out.expire_all(now, self.expired)
            self.expired = self.current
            out.current_all(self.current)
            self.current = []
            self.emit(out.chunk())
        self._schedule(max(due, now - 1))  # ticks the clock jumped over would release nothing

    def snapshot(self) -> Any:
        return {"current": save(self.current), "expired": save(self.expired), "next": self.next}

    def restore(self, state: Any) -> None:
        self.current = load_list(state["current"])
        self.expired = load_list(state["expired"])
        self.next = state["next"]


register(
    WindowSpec(
        "cron", CronWindow, ((Param("cron.expression", (AttrType.STRING,)),),), batch=True, check=_check
    )
)

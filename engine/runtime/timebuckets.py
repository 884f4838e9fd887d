"""Time buckets of incremental aggregations, in UTC: a bucket of a duration is the
second, minute, hour, day, calendar month or calendar year that holds a timestamp.

Also the retrieval arguments: `per` names ("seconds", "hours", ...) and `within`
values (epoch ms, or "yyyy-MM-dd HH:mm:ss[ +hh:mm]" strings, with trailing `*`
wildcards in the one-value form: "2017-06-** **:**:**" is all of June 2017).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

DURATIONS = ("sec", "min", "hour", "day", "month", "year")
_FIXED_MS = {"sec": 1000, "min": 60_000, "hour": 3_600_000, "day": 86_400_000}
_ALIASES = {
    "sec": "sec", "second": "sec", "seconds": "sec",
    "min": "min", "minute": "min", "minutes": "min",
    "hour": "hour", "hours": "hour",
    "day": "day", "days": "day",
    "month": "month", "months": "month",
    "year": "year", "years": "year",
}  # fmt: skip


def duration_of(name: str) -> str | None:
    """The canonical duration (`sec` ... `year`) a definition or `per` value names."""
    return _ALIASES.get(name.strip().lower())


def _month_start(ms: int) -> int:
    d = datetime.fromtimestamp(ms / 1000, UTC)
    return int(datetime(d.year, d.month, 1, tzinfo=UTC).timestamp()) * 1000


def _year_start(ms: int) -> int:
    d = datetime.fromtimestamp(ms / 1000, UTC)
    return int(datetime(d.year, 1, 1, tzinfo=UTC).timestamp()) * 1000


def bucket_start(ms: int, duration: str) -> int:
    """The start (epoch ms, UTC) of the bucket of `duration` holding `ms`."""
    unit = _FIXED_MS.get(duration)
    if unit is not None:
        return ms - ms % unit
    day = ms - ms % 86_400_000
    return _month_start(day) if duration == "month" else _year_start(day)


def shift(bucket: int, duration: str, n: int) -> int:
    """The start of the bucket `n` buckets after (n < 0: before) the bucket `bucket`."""
    unit = _FIXED_MS.get(duration)
    if unit is not None:
        return bucket + n * unit
    d = datetime.fromtimestamp(bucket / 1000, UTC)
    months = n if duration == "month" else 12 * n
    index = d.year * 12 + d.month - 1 + months
    return int(datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC).timestamp()) * 1000


class BucketMapper:
    """Maps a root bucket start to the bucket start of each coarser duration, with a
    cache for the calendar ones (most events of a chunk share their day)."""

    def __init__(self, durations: list[str]) -> None:
        self.durations = durations
        self._cache: dict[tuple[str, int], int] = {}

    def of(self, root_bucket: int, duration: str) -> int:
        unit = _FIXED_MS.get(duration)
        if unit is not None:
            return root_bucket - root_bucket % unit
        day = root_bucket - root_bucket % 86_400_000
        key = (duration, day)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            found = self._cache[key] = bucket_start(day, duration)
        return found


# ---- string timestamps of `aggregate by` ------------------------------------------------

_STAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\s(\d{2}):(\d{2}):(\d{2})(?:\s([+-])(\d{2}):(\d{2}))?$")


def parse_timestamp(value: str) -> int:
    """An `aggregate by` string timestamp as epoch ms: 'yyyy-MM-dd HH:mm:ss' in UTC, or
    'yyyy-MM-dd HH:mm:ss +hh:mm' with an offset, the two forms Siddhi takes (its
    timestampInMilliseconds). Raises ValueError with a message for people."""
    m = _STAMP.match(value.strip())
    if m is not None:
        tz = UTC
        if m.group(7):
            sign = 1 if m.group(7) == "+" else -1
            tz = timezone(sign * timedelta(hours=int(m.group(8)), minutes=int(m.group(9))))
        try:
            y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
            return int(datetime(y, mo, d, h, mi, sec, tzinfo=tz).timestamp()) * 1000
        except ValueError:
            pass
    msg = (
        f"timestamp '{value}' is not of the form 'yyyy-MM-dd HH:mm:ss' (UTC) or 'yyyy-MM-dd HH:mm:ss +hh:mm'"
    )
    raise ValueError(msg)


# ---- within ------------------------------------------------------------------------------

_PATTERN = re.compile(
    r"^\s*(\d{4}|\*{4})-(\d{2}|\*{2})-(\d{2}|\*{2})\s+(\d{2}|\*{2}):(\d{2}|\*{2}):(\d{2}|\*{2})"
    r"(?:\s*([+-])(\d{2}):(\d{2}))?\s*$"
)
_FIELDS = ("year", "month", "day", "hour", "min", "sec")


def parse_time(value: Any, *, allow_wildcards: bool) -> tuple[int, int | None]:
    """A `within` value as (start ms, end ms or None). A string with wildcards gives the
    range of its last given field (the year, month, ... it names); without wildcards,
    end is None. Raises ValueError with a message for people."""
    if isinstance(value, bool) or value is None:
        msg = f"a 'within' value must be epoch milliseconds or a time string, got {value!r}"
        raise ValueError(msg)
    if isinstance(value, int):
        return value, None
    if not isinstance(value, str):
        msg = f"a 'within' value must be epoch milliseconds or a time string, got {value!r}"
        raise ValueError(msg)
    m = _PATTERN.match(value)
    if m is None:
        msg = f"'{value}' is not a time of the form 'yyyy-MM-dd HH:mm:ss' (optionally ' +hh:mm')"
        raise ValueError(msg)
    parts = m.groups()[:6]
    given = 0
    while given < 6 and "*" not in parts[given]:
        given += 1
    if any("*" not in p for p in parts[given:]):
        msg = f"'{value}': wildcards must run to the end of the time ('2017-06-** **:**:**')"
        raise ValueError(msg)
    if given < 6 and not allow_wildcards:
        msg = f"'{value}': wildcards are allowed only in a one-value 'within'"
        raise ValueError(msg)
    if given == 0:
        msg = f"'{value}': at least the year must be given"
        raise ValueError(msg)
    nums = [int(p) for p in parts[:given]] + [1, 1, 0, 0, 0][given - 1 :]
    tz = UTC
    if m.group(7):
        sign = 1 if m.group(7) == "+" else -1
        tz = timezone(sign * timedelta(hours=int(m.group(8)), minutes=int(m.group(9))))
    try:
        start_dt = datetime(nums[0], nums[1], nums[2], nums[3], nums[4], nums[5], tzinfo=tz)
    except ValueError as exc:
        msg = f"'{value}': {exc}"
        raise ValueError(msg) from exc
    start = int(start_dt.timestamp() * 1000)
    if given == 6:
        return start, None
    field = _FIELDS[given - 1]
    if field in ("year", "month"):
        months = 12 if field == "year" else 1
        index = start_dt.year * 12 + start_dt.month - 1 + months
        end_dt = start_dt.replace(year=index // 12, month=index % 12 + 1)
        return start, int(end_dt.timestamp() * 1000)
    return start, start + _FIXED_MS[field]


def within_range(first: Any, second: Any = None, *, two: bool = False) -> tuple[int, int]:
    """[start, end) of `within first` or `within first, second`."""
    if two:
        start, _ = parse_time(first, allow_wildcards=False)
        end, _ = parse_time(second, allow_wildcards=False)
        if start > end:
            msg = f"'within {first!r}, {second!r}' ends before it starts"
            raise ValueError(msg)
        return start, end
    start, until = parse_time(first, allow_wildcards=True)
    if until is not None:
        return start, until
    end = start + 1000 if isinstance(first, str) else start + 1
    return start, end

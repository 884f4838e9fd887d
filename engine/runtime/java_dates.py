"""Java `SimpleDateFormat` / `FastDateFormat` patterns (`yyyy-MM-dd HH:mm:ss.SSS`), formatted
and parsed in UTC, for the `time:` functions WSO2 shipped with every product.

Supported letters: G y Y M L d D E u a H k K h m s S z Z X and quoted literals (`'T'`,
`''` for a quote). Parsing reads from the start of the text, as Java's `DateFormat.parse`
does (text after the pattern is ignored); a field of two or more letters followed by another
number field reads exactly that many digits (`yyyyMMdd`), otherwise as many as are there.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from functools import lru_cache

_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_MONTHS_SHORT = [calendar.month_abbr[i] for i in range(1, 13)]
_DAYS = list(calendar.day_name)  # Monday first
_DAYS_SHORT = list(calendar.day_abbr)
_LETTERS = set("GyYMLdDEuaHkKhmsSzZX")
_NUMERIC = set("yYMLdDuHkKhmsS")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

Token = tuple[str, int]  # (letter, count); letter "'" is a literal held in a separate list


class DateFormatError(ValueError):
    """A pattern Cepheus cannot read, or a date that does not match its pattern."""


@lru_cache(maxsize=256)
def tokens(pattern: str) -> tuple[tuple[str, int | str], ...]:
    """The pattern as (letter, count) fields and ("'", text) literals."""
    out: list[tuple[str, int | str]] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            j = i + 1
            buf = []
            while j < n:
                if pattern[j] == "'":
                    if j + 1 < n and pattern[j + 1] == "'":
                        buf.append("'")
                        j += 2
                        continue
                    break
                buf.append(pattern[j])
                j += 1
            if j >= n and (i + 1 == n or pattern[n - 1] != "'"):
                msg = f"unterminated quote in date pattern '{pattern}'"
                raise DateFormatError(msg)
            out.append(("'", "".join(buf) or "'"))
            i = j + 1
        elif ch.isalpha():
            if ch not in _LETTERS:
                msg = f"illegal pattern character '{ch}' in date pattern '{pattern}'"
                raise DateFormatError(msg)
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            out.append((ch, j - i))
            i = j
        else:
            out.append(("'", ch))
            i += 1
    return tuple(out)


def check(pattern: str) -> str | None:
    """None if the pattern is usable, else why not."""
    try:
        tokens(pattern)
    except DateFormatError as exc:
        return str(exc)
    return None


def _pad(v: int, count: int) -> str:
    return str(v).zfill(count)


def format_ms(ms: int, pattern: str) -> str:
    """Epoch milliseconds as text in the pattern (UTC)."""
    t = _EPOCH + _dt.timedelta(milliseconds=ms)
    parts: list[str] = []
    for letter, count in tokens(pattern):
        if letter == "'":
            parts.append(str(count))
            continue
        assert isinstance(count, int)
        if letter == "G":
            parts.append("AD" if t.year > 0 else "BC")
        elif letter in "yY":
            parts.append(_pad(t.year % 100, 2) if count == 2 else _pad(t.year, count))
        elif letter in "ML":
            if count >= 4:
                parts.append(_MONTHS[t.month - 1])
            elif count == 3:
                parts.append(_MONTHS_SHORT[t.month - 1])
            else:
                parts.append(_pad(t.month, count))
        elif letter == "d":
            parts.append(_pad(t.day, count))
        elif letter == "D":
            parts.append(_pad(t.timetuple().tm_yday, count))
        elif letter == "E":
            parts.append(_DAYS[t.weekday()] if count >= 4 else _DAYS_SHORT[t.weekday()])
        elif letter == "u":
            parts.append(_pad(t.isoweekday(), count))
        elif letter == "a":
            parts.append("AM" if t.hour < 12 else "PM")
        elif letter == "H":
            parts.append(_pad(t.hour, count))
        elif letter == "k":
            parts.append(_pad(t.hour or 24, count))
        elif letter == "K":
            parts.append(_pad(t.hour % 12, count))
        elif letter == "h":
            parts.append(_pad(t.hour % 12 or 12, count))
        elif letter == "m":
            parts.append(_pad(t.minute, count))
        elif letter == "s":
            parts.append(_pad(t.second, count))
        elif letter == "S":
            parts.append(_pad(t.microsecond // 1000, count))
        elif letter == "z":
            parts.append("Coordinated Universal Time" if count >= 4 else "UTC")
        elif letter == "Z":
            parts.append("+00:00" if count == 5 else "+0000")
        elif letter == "X":
            parts.append("Z")
    return "".join(parts)


@lru_cache(maxsize=256)
def _parser(pattern: str) -> tuple[re.Pattern[str], tuple[tuple[str, int], ...]]:
    toks = tokens(pattern)
    rx: list[str] = []
    fields: list[tuple[str, int]] = []
    for k, (letter, count) in enumerate(toks):
        if letter == "'":
            rx.append(re.escape(str(count)))
            continue
        assert isinstance(count, int)
        nxt = toks[k + 1][0] if k + 1 < len(toks) else None
        if letter in _NUMERIC and not (letter in "ML" and count >= 3):
            fixed = nxt in _NUMERIC and toks[k + 1][0] != "'"
            rx.append(rf"([+-]?\d{{{count}}})" if fixed else r"([+-]?\d+)")
        elif letter in "ML":
            names = _MONTHS if count >= 4 else _MONTHS_SHORT
            rx.append("(" + "|".join(names + (_MONTHS_SHORT if count >= 4 else _MONTHS)) + ")")
        elif letter == "E":
            rx.append("(" + "|".join(_DAYS + _DAYS_SHORT) + ")")
        elif letter == "a":
            rx.append("(AM|PM)")
        elif letter == "G":
            rx.append("(AD|BC)")
        elif letter in "zZX":
            rx.append(r"(Z|UTC|GMT|Coordinated Universal Time|(?:GMT|UTC)?[+-]\d{1,2}(?::?\d{2})?)")
        fields.append((letter, count))
    return re.compile("".join(rx), re.IGNORECASE), tuple(fields)


def _offset_ms(text: str) -> int:
    m = re.search(r"([+-])(\d{1,2})(?::?(\d{2}))?$", text)
    if not m:
        return 0
    sign = -1 if m.group(1) == "-" else 1
    return sign * (int(m.group(2)) * 60 + int(m.group(3) or 0)) * 60_000


def parse_ms(text: str, pattern: str) -> int:
    """Text in the pattern as epoch milliseconds (UTC unless the text carries a zone)."""
    rx, fields = _parser(pattern)
    m = rx.match(text)
    if m is None:
        msg = f"Unparseable date: \"{text}\" (pattern '{pattern}')"
        raise DateFormatError(msg)
    year, month, day, hour, minute, second, milli = 1970, 1, 1, 0, 0, 0, 0
    yday: int | None = None
    pm: bool | None = None
    twelve = False
    offset = 0
    for (letter, count), value in zip(fields, m.groups(), strict=True):
        if letter in "yY":
            year = int(value)
            if count <= 2 and len(value.lstrip("+-")) <= 2:
                year += 2000 if year < 80 else 1900
        elif letter in "ML":
            if count >= 3:
                low = value.lower()
                month = next(
                    i + 1 for i in range(12) if low in (_MONTHS[i].lower(), _MONTHS_SHORT[i].lower())
                )
            else:
                month = int(value)
        elif letter == "d":
            day = int(value)
        elif letter == "D":
            yday = int(value)
        elif letter in "Hk":
            hour = int(value) % 24
        elif letter in "Kh":
            hour = int(value) % 12
            twelve = True
        elif letter == "m":
            minute = int(value)
        elif letter == "s":
            second = int(value)
        elif letter == "S":
            milli = int(value)
        elif letter == "a":
            pm = value.upper() == "PM"
        elif letter in "zZX":
            offset = _offset_ms(value)
    if twelve and pm:
        hour += 12
    try:
        base = _dt.datetime(year, 1, 1, tzinfo=_dt.UTC)
        if yday is not None:
            date = base + _dt.timedelta(days=yday - 1)
        else:
            # Java's lenient calendar rolls over: month 13 is January of the next year
            extra_years, m0 = divmod(month - 1, 12)
            date = _dt.datetime(year + extra_years, m0 + 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(days=day - 1)
    except (ValueError, OverflowError) as exc:
        msg = f"Unparseable date: \"{text}\" (pattern '{pattern}')"
        raise DateFormatError(msg) from exc
    ms = (date - _EPOCH) // _dt.timedelta(milliseconds=1)
    return ms + ((hour * 60 + minute) * 60 + second) * 1000 + milli - offset


def fields_of(ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=ms)


def add_units(ms: int, unit: str, amount: int) -> int:
    """Java `Calendar.add` in UTC: months and years keep the day, clamped to the month's end."""
    t = fields_of(ms)
    if unit in ("YEAR", "MONTH", "QUARTER"):
        months = amount * {"YEAR": 12, "MONTH": 1, "QUARTER": 3}[unit]
        total = t.year * 12 + (t.month - 1) + months
        y, m0 = divmod(total, 12)
        d = min(t.day, calendar.monthrange(y, m0 + 1)[1])
        return ((t.replace(year=y, month=m0 + 1, day=d)) - _EPOCH) // _dt.timedelta(milliseconds=1)
    step = {
        "WEEK": 7 * 86_400_000,
        "DAY": 86_400_000,
        "HOUR": 3_600_000,
        "MINUTE": 60_000,
        "SECOND": 1000,
        "MILLISECOND": 1,
    }[unit]
    return ms + amount * step

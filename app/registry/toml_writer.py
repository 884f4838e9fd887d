"""A small TOML writer for declarative documents (the standard library only reads TOML).

Writes a table whose values are scalars, lists, tables, or lists of tables (`[[section]]`).
Multi-line strings (plan texts) become `'''` blocks so they stay readable; nested tables are
inline tables; lists of tables inside an entry are one inline table per line. TOML has no null,
so `None` is an error. Imports only `app.registry.errors`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from app.registry.errors import RegistryError

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class TomlWriteError(RegistryError):
    """A value TOML cannot hold (null, a non-finite float, a non-string key)."""


def dumps(doc: Mapping[str, Any]) -> str:
    lines: list[str] = []
    tables: list[tuple[str, list[Mapping[str, Any]]]] = []
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            tables.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value, key)}")
    for key, entries in tables:
        for entry in entries:
            if lines:
                lines.append("")
            lines.append(f"[[{_key(key)}]]")
            for name, value in entry.items():
                lines.append(f"{_key(name)} = {_value(value, f'{key}.{name}', top=True)}")
    return "\n".join(lines) + "\n"


def _key(key: object) -> str:
    if not isinstance(key, str):
        msg = f"TOML keys must be strings, got {key!r}"
        raise TomlWriteError(msg)
    return key if _BARE_KEY.match(key) else _basic(key)


def _value(value: Any, where: str, *, top: bool = False) -> str:
    if value is None:
        msg = f"{where}: TOML has no null value; write YAML (--format yaml) or remove the key"
        raise TomlWriteError(msg)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{where}: {value!r} cannot be written"
            raise TomlWriteError(msg)
        return repr(value)
    if isinstance(value, str):
        return _multiline(value) if top and "\n" in value else _basic(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = ", ".join(f"{_key(k)} = {_value(v, f'{where}.{k}')}" for k, v in value.items())
        return "{ " + items + " }"
    if isinstance(value, (list, tuple)):
        parts = [_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if top and any(isinstance(v, Mapping) for v in value):
            return "[\n" + "".join(f"    {p},\n" for p in parts) + "]"
        return "[" + ", ".join(parts) + "]"
    msg = f"{where}: cannot write a {type(value).__name__} as TOML"
    raise TomlWriteError(msg)


def _basic(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _multiline(text: str) -> str:
    """A `'''` literal block when the text allows one (the newline after ''' is not part of it)."""
    plain = all(ch in "\n\t" or (ord(ch) >= 0x20 and ord(ch) != 0x7F) for ch in text)
    if plain and "'''" not in text and not text.endswith("'"):
        return "'''\n" + text + "'''"
    return _basic(text)

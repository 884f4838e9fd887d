"""Field checks shared by the registry's entities; each raises `ValidationError` naming the field.

Imports only the registry's errors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from app.registry.errors import ValidationError

NAME_MAX = 200
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def check_name(what: str, value: object, field: str = "name") -> str:
    """A registry name: starts with a letter or `_`, then letters, digits, `_`, `.` or `-`."""
    if not isinstance(value, str) or not value:
        msg = f"{what}: {field} must be a non-empty string"
        raise ValidationError(msg, field=field)
    if len(value) > NAME_MAX or not _NAME.match(value):
        msg = (
            f"{what}: {field} {value!r} must start with a letter or '_' and contain only letters, "
            f"digits, '_', '.' or '-' (at most {NAME_MAX} characters)"
        )
        raise ValidationError(msg, field=field)
    return value


def check_choice(what: str, field: str, value: object, choices: Iterable[str]) -> str:
    options = list(choices)
    if value not in options:
        msg = f"{what}: {field} must be one of {', '.join(options)} (got {value!r})"
        raise ValidationError(msg, field=field)
    assert isinstance(value, str)
    return value


def check_bool(what: str, field: str, value: object) -> bool:
    if not isinstance(value, bool):
        msg = f"{what}: {field} must be true or false (got {value!r})"
        raise ValidationError(msg, field=field)
    return value


def check_str(what: str, field: str, value: object) -> str:
    if not isinstance(value, str):
        msg = f"{what}: {field} must be a string (got {type(value).__name__})"
        raise ValidationError(msg, field=field)
    return value


def _check_json_value(what: str, field: str, value: object) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{what}: {field} must be a finite number (got {value!r})"
            raise ValidationError(msg, field=field)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json_value(what, f"{field}[{i}]", item)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                msg = f"{what}: {field} keys must be strings (got {key!r})"
                raise ValidationError(msg, field=field)
            _check_json_value(what, f"{field}.{key}", item)
        return
    msg = f"{what}: {field} must be JSON data (string, number, boolean, null, list or table), got {type(value).__name__}"
    raise ValidationError(msg, field=field)


def check_json_object(what: str, field: str, value: object) -> dict[str, Any]:
    """A JSON object (a table of keys); returned as a plain dict that survives a JSON round trip."""
    if not isinstance(value, Mapping):
        msg = f"{what}: {field} must be a table of keys (got {type(value).__name__})"
        raise ValidationError(msg, field=field)
    _check_json_value(what, field, value)
    result: dict[str, Any] = json.loads(json.dumps(value))
    return result

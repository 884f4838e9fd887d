"""Plan names (user text) as directory names of the input log, and back.

Letters, digits, `-` and `_` stay; every other character becomes `%XX` per UTF-8 byte, so
`..`, `/`, NUL or a leading dot can never name another place. A name whose encoding would pass
`MAX_DIRNAME` becomes `~` and a SHA-256 of the name, with the name in the file `plan` inside.
Imports nothing of ours.
"""

from __future__ import annotations

import hashlib
import string
from pathlib import Path
from urllib.parse import unquote

MAX_DIRNAME = 200
NAME_FILE = "plan"
_SAFE = frozenset(string.ascii_letters + string.digits + "-_")


def encode(plan: str) -> str:
    """The directory name of `plan`; `ValueError` for an empty name."""
    if not plan:
        msg = "a plan name for the input log must not be empty"
        raise ValueError(msg)
    name = "".join(
        c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in plan
    )
    if len(name) > MAX_DIRNAME:
        return "~" + hashlib.sha256(plan.encode("utf-8", "surrogatepass")).hexdigest()
    return name


def is_hashed(dirname: str) -> bool:
    return dirname.startswith("~")


def decode(directory: Path) -> str | None:
    """The plan name of an input log directory, or None if it is not one of ours."""
    name = directory.name
    if is_hashed(name):
        try:
            return (directory / NAME_FILE).read_text("utf-8", "surrogatepass")
        except (OSError, UnicodeDecodeError):
            return None
    if not name or not all(c in _SAFE or c == "%" for c in name):
        return None
    plan = unquote(name, "utf-8", "surrogatepass")
    return plan if encode(plan) == name else None

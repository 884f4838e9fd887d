"""Bearer tokens of the console API: `cep_<id>_<secret>`, shown to the user once.

The registry keeps a token's id, its user and label, and the SHA-256 of its secret (32 random
bytes: a fast digest is enough, unlike a password no dictionary reaches it), so a copy of the
registry gives no usable token. Revoking a token deletes its row. Imports nothing of ours.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PREFIX = "cep_"
_SHAPE = re.compile(r"cep_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
MAX_LABEL = 200


@dataclass(frozen=True)
class Token:
    id: str
    user: str
    label: str
    created: dt.datetime


def new_token(user: str, label: str) -> tuple[Token, str]:
    """A fresh token for `user` and its text."""
    label = label.strip()
    if len(label) > MAX_LABEL:
        label = label[:MAX_LABEL]
    token = Token(secrets.token_hex(8), user, label, dt.datetime.now(dt.UTC).replace(tzinfo=None))
    return token, f"{PREFIX}{token.id}_{secrets.token_urlsafe(32)}"


def parse(presented: str) -> tuple[str, str] | None:
    """(id, whole token) of a well-formed token text, else None."""
    match = _SHAPE.fullmatch(presented)
    return (match.group(1), presented) if match else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def matches(presented: str, stored_sha256: str) -> bool:
    return hmac.compare_digest(_digest(presented), stored_sha256)


def to_row(token: Token, text: str) -> dict[str, Any]:
    return {
        "id": token.id,
        "user_name": token.user,
        "label": token.label,
        "secret_sha256": _digest(text),
        "created": token.created,
    }


def from_row(row: Mapping[Any, Any]) -> Token:
    return Token(row["id"], row["user_name"], row["label"], row["created"])

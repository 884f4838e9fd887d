"""Console users, their roles and passwords: scrypt with a per-user random salt, verified in
constant time. A user is an `admin` (may change anything) or a `viewer` (reads only).

A stored hash reads `scrypt$<n>$<r>$<p>$<salt>$<key>` (salt and key in base64), so the cost
can be raised later without invalidating existing hashes. Imports only the registry's checks.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from app.registry.errors import ValidationError
from app.registry.validation import check_choice, check_name

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
KEY_BYTES = 32
SALT_BYTES = 16
MIN_PASSWORD = 8
ROLES = ("admin", "viewer")


@dataclass(frozen=True)
class User:
    name: str
    password_hash: str = field(repr=False)
    revision: int = field(default=0, compare=False)
    role: str = "admin"

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    def checked(self) -> User:
        check_name("user", self.name)
        check_choice(f"user {self.name!r}", "role", self.role, ROLES)
        if not self.password_hash.startswith("scrypt$"):
            msg = f"user {self.name!r}: password_hash must be an scrypt hash (use hash_password)"
            raise ValidationError(msg, field="password_hash")
        return self


def check_password(password: object, what: str = "password") -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        msg = f"{what} must be a string of at least {MIN_PASSWORD} characters"
        raise ValidationError(msg, field="password")
    return password


def hash_password(password: str) -> str:
    """A fresh salted scrypt hash of `password`."""
    salt = secrets.token_bytes(SALT_BYTES)
    key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P, KEY_BYTES)
    return "$".join(["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), _b64(salt), _b64(key)])


def verify_password(password: str, stored: str | None) -> bool:
    """Whether `password` matches `stored`; takes as long when there is no stored hash."""
    try:
        if stored is None:
            raise ValueError
        scheme, n, r, p, salt, key = stored.split("$")
        if scheme != "scrypt":
            raise ValueError
        expected = base64.b64decode(key)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p), len(expected))
    except ValueError:
        # unknown user or unreadable hash: spend the same time so timing reveals nothing
        _scrypt(password, b"\0" * SALT_BYTES, SCRYPT_N, SCRYPT_R, SCRYPT_P, KEY_BYTES)
        return False
    return hmac.compare_digest(actual, expected)


def random_password() -> str:
    return secrets.token_urlsafe(18)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=128 * r * (n + p + 2) * 2
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")

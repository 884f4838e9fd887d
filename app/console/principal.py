"""Who is asking: a `Principal` from a console session, a bearer token or basic credentials.

The console's pages log in with a session cookie (Flask-Login); scripts call the JSON API with
a bearer token (`Authorization: Bearer cep_...`, see `app.registry.tokens`) or, as the node's
other endpoints, HTTP basic credentials (checked and throttled by `app.auth.Credentials`).
The role is read from the registry on every request, so a change of role or a deleted user
takes effect at once; a session also ends when its user's password changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import flask_login  # type: ignore[import-untyped]
from flask import Response, request

from adapters.addresses import client_key
from adapters.http.replies import json_error
from app.auth import Credentials
from app.http.basic_auth import login_refusal
from app.registry import Registry
from app.registry.users import User


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    via: str  # session | token | basic

    @property
    def admin(self) -> bool:
        return self.role == "admin"


class SessionUser(flask_login.UserMixin):  # type: ignore[misc]
    """A logged-in console user, as Flask-Login keeps it: the name and a fingerprint of the
    password hash (so a password change ends the user's other sessions)."""

    def __init__(self, user: User) -> None:
        self.user = user

    def get_id(self) -> str:
        return session_id(self.user)


def session_id(user: User) -> str:
    return f"{user.name}\0{user.password_hash[-12:]}"


def load_session_user(registry: Registry) -> Callable[[str], SessionUser | None]:
    def load(user_id: str) -> SessionUser | None:
        name = user_id.split("\0", 1)[0]
        user = registry.get_user(name)
        if user is None or session_id(user) != user_id:
            return None
        return SessionUser(user)

    return load


def identify(registry: Registry, credentials: Credentials) -> Principal | Response:
    """The principal of the current request, or the JSON refusal to send (401/429/503)."""
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        # guessed tokens count as failed logins of the address: locked out, it is refused
        # without a look into the registry
        address = request.environ.get("REMOTE_ADDR") or ""
        keys = (f"address {client_key(address) if address else '?'}",)
        locked = credentials.throttle.locked(keys)
        if locked is not None:
            retry = str(max(1, math.ceil(locked[1])))
            return json_error(
                429, "too many unknown tokens from this address; try again later", {"Retry-After": retry}
            )
        user = registry.token_user(header[7:].strip())
        if user is None:
            credentials.throttle.failed(keys)
            return json_error(401, "the bearer token is unknown or was revoked")
        return Principal(user.name, user.role, "token")
    if header:
        refusal = login_refusal(credentials, via="api")
        if refusal is not None:
            return refusal
        auth = request.authorization
        user = registry.get_user(auth.username) if auth is not None and auth.username else None
        if user is None:
            return json_error(401, "the user no longer exists")
        return Principal(user.name, user.role, "basic")
    current = flask_login.current_user
    if current is not None and current.is_authenticated:
        user = current.user
        return Principal(user.name, user.role, "session")
    return json_error(401, "log in to the console, or send a bearer token (Authorization: Bearer cep_...)")


def refusal(registry: Registry, credentials: Credentials, *, change: bool) -> Response | None:
    """None when the request's principal may read (or, with `change`, change: an admin), else the
    JSON refusal: for endpoints outside the API blueprint that take the same credentials."""
    who = identify(registry, credentials)
    if isinstance(who, Response):
        return who
    if change and not who.admin:
        return json_error(403, f"user {who.name!r} is a viewer: only an admin may change this")
    return None

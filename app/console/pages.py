"""What every console page shares: the `Page` type, the logged-in user, and one way to run a
change from a form (`attempt`): flash what came of it, and on a refusal go back to the form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flask_login  # type: ignore[import-untyped]
from flask import Response, flash, redirect, render_template, request
from werkzeug.wrappers import Response as BaseResponse

from app.console import actions
from app.console.actions import ApiError
from app.registry import RegistryError

Page = Response | BaseResponse | str


def me() -> Any:
    """The logged-in user (`app.registry.users.User`)."""
    return flask_login.current_user.user


def attempt(action: Callable[[], Any], done: str, then: str) -> Page:
    """Run an action; flash what came of it and go to `then`; on a refusal, back where the form was."""
    try:
        action()
    except ApiError as exc:
        field = f" ({exc.field})" if exc.field else ""
        flash(f"{exc}{field}", "error")
        return redirect(request.referrer or then)
    flash(done, "ok")
    return redirect(then)


def raise_(exc: Exception) -> Any:
    raise exc


def registry_call(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except RegistryError as exc:
        raise actions.refusal(exc) from None


def not_found(message: str) -> Page:
    return Response(render_template("error.html", message=message), 404)

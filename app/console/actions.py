"""What the API and the pages both do to the registry, with one way to refuse: `ApiError`.

A change is one registry transaction checked as `cepheus apply` checks a file (references,
SiddhiQL against the registered streams, an adapter's or formatter's settings by building it):
nothing is written unless all of it holds. Refusals keep the field they are about; a plan's
SiddhiQL errors carry every position.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from flask import Response

import engine
from app.console.entities import RESOURCES, EntityError, Resource, check_settings, from_json
from app.console.errors import ConsoleError
from app.registry import InUseError, InvalidPlan, Outcome, Registry, RegistryError, ValidationError
from app.registry.plans import ExecutionPlan, check_text, plan_name
from engine.errors import QueryError


class ApiError(ConsoleError):
    """A refused request: its HTTP `status`, the `field` it is about, and `extra` keys of the reply."""

    def __init__(self, status: int, message: str, field: str | None = None, **extra: Any) -> None:
        self.status = status
        self.field = field
        self.extra = extra
        super().__init__(message)


def reply(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, default=str), status=status, mimetype="application/json")


def error_reply(exc: ApiError) -> Response:
    body: dict[str, Any] = {"error": str(exc)}
    if exc.field is not None:
        body["field"] = exc.field
    return reply(body | exc.extra, exc.status)


def query_errors(error: QueryError) -> list[dict[str, Any]]:
    return [
        {"line": d.line, "col": d.col, "end_line": d.end_line, "end_col": d.end_col, "message": d.message}
        | ({"hint": d.hint} if d.hint else {})
        for d in error.errors
    ]


def refusal(exc: RegistryError) -> ApiError:
    if isinstance(exc, InvalidPlan):
        first = exc.query_error
        return ApiError(
            422,
            f"plan {exc.plan!r}: text: {first.line}:{first.col}: {first.errors[0].message}",
            "text",
            errors=query_errors(exc.query_error),
        )
    if isinstance(exc, InUseError):
        return ApiError(409, str(exc))
    if isinstance(exc, ValidationError):  # settings sit beside the fixed keys in the API's JSON
        return ApiError(422, str(exc), exc.field.removeprefix("config.").removeprefix("options."))
    return ApiError(400, str(exc))


def resource(name: str) -> Resource:
    found = RESOURCES.get(name)
    if found is None:
        raise ApiError(404, f"no such resource: {name}")
    return found


def parsed(res: Resource, data: Any) -> Any:
    if res.name == "plans" and isinstance(data, dict) and isinstance(data.get("text"), str):
        try:
            engine.validate(data["text"])
        except QueryError as exc:
            first = exc.errors[0]
            raise ApiError(
                422, f"text: {first.line}:{first.col}: {first.message}", "text", errors=query_errors(exc)
            ) from None
    try:
        return from_json(res, data)
    except EntityError as exc:
        raise ApiError(400 if exc.field is None else 422, str(exc), exc.field) from None


def get(registry: Registry, res: Resource, key: str) -> Any:
    with registry.reading() as store:
        return res.get(store, key)


def write(registry: Registry, res: Resource, entity: Any, *, create_only: bool) -> tuple[Outcome, Any]:
    """Store `entity`; (what happened, the entity as stored)."""
    try:
        with registry.transaction() as store:
            if create_only and res.get(store, res.key(entity)) is not None:
                raise ApiError(409, f"{res.what} {res.key(entity)} exists already (PUT replaces it)")
            check_settings(store, entity)
            outcome = res.put(store, entity)
    except EntityError as exc:
        raise ApiError(422, str(exc), exc.field) from None
    except RegistryError as exc:
        raise refusal(exc) from None
    return outcome, get(registry, res, res.key(entity))


def delete(registry: Registry, res: Resource, key: str) -> None:
    try:
        with registry.transaction() as store:
            found = res.delete(store, key)
    except RegistryError as exc:
        raise refusal(exc) from None
    if not found:
        raise ApiError(404, f"{res.what} {key} does not exist")


def set_enabled(registry: Registry, name: str, enabled: bool) -> Any:
    res = RESOURCES["plans"]
    plan = get(registry, res, name)
    if plan is None:
        raise ApiError(404, f"plan {name} does not exist")
    return write(registry, res, replace(plan, enabled=enabled), create_only=False)[1]


def validate_plan(registry: Registry, text: object, name: object = None) -> list[dict[str, Any]]:
    """Every problem of a plan's text (checked against the registered streams); [] when none."""
    if not isinstance(text, str):
        raise ApiError(422, "text (the plan's SiddhiQL) is required", "text")
    name = name or plan_name(text) or "plan"
    if not isinstance(name, str):
        raise ApiError(422, "name must be a string", "name")
    try:
        with registry.reading() as store:
            check_text(ExecutionPlan(name, text), store.get_stream)
    except InvalidPlan as exc:
        return query_errors(exc.query_error)
    return []


def test_datasource(registry: Registry, name: str) -> None:
    """Connect to data source `name` (its `${VAR}`s from this node's environment) and run
    `SELECT 1`; raises `ApiError` saying why not."""
    datasource = get(registry, RESOURCES["datasources"], name)
    if datasource is None:
        raise ApiError(404, f"data source {name} does not exist")
    try:
        url = sa.make_url(datasource.resolved(os.environ).url)
    except RegistryError as exc:
        raise refusal(exc) from None
    timeout = {"connect_timeout": 5} if url.get_backend_name() in ("mysql", "mariadb", "postgresql") else {}
    engine = sa.create_engine(url, connect_args=timeout, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as exc:
        reason = getattr(exc, "orig", None) or exc
        raise ApiError(502, f"data source {name}: cannot connect: {reason}") from None
    finally:
        engine.dispose()


_ENDPOINT = re.compile(r"(?:tcp|ssl|https?)://\[?([^\s/:|,{}\]]+)\]?:(\d+)")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def test_adapter(registry: Registry, name: str) -> str:
    """Reach what output adapter `name` writes to (an RDBMS adapter's data source; the host and
    port of an HTTP adapter's URL or of every receiver of a wso2event adapter); what was
    reached, or `ApiError` saying what was not."""
    adapter = get(registry, RESOURCES["adapters"], name)
    if adapter is None:
        raise ApiError(404, f"output adapter {name} does not exist")
    if adapter.datasource is not None:
        test_datasource(registry, adapter.datasource)
        return f"data source {adapter.datasource}"
    try:
        config = adapter.resolved(os.environ).config
    except RegistryError as exc:
        raise refusal(exc) from None
    url = str(config.get("url") or config.get("receiverURL") or "")
    endpoints = [(host, int(port)) for host, port in _ENDPOINT.findall(url)]
    if not endpoints and url:
        parts = urlsplit(url)
        if parts.hostname:
            endpoints = [(parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme, 80))]
    if not endpoints:
        return (
            "nothing to reach (it writes to the node's log)"
            if adapter.type == "logger"
            else "no address to reach"
        )
    failed = []
    for host, port in endpoints:
        try:
            socket.create_connection((host, port), timeout=5).close()
        except OSError as exc:
            failed.append(f"{host}:{port} ({exc.strerror or exc})")
    if failed:
        raise ApiError(502, f"output adapter {name}: cannot connect to {', '.join(failed)}")
    return ", ".join(f"{host}:{port}" for host, port in endpoints)

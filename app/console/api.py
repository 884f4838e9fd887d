"""The console's JSON API under `/api/v1/`: one resource per page of the console.

- `streams`, `plans`, `receivers`, `datasources`, `adapters`, `formatters`: `GET` (list, one),
  `POST` (create; 409 if it exists), `PUT /<key>` (create or replace), `DELETE /<key>` (409 while
  something refers to it, naming it). Bodies are entries of a declarative document
  (`app.console.entities`). A change is one registry transaction, checked as `cepheus apply`
  checks a file: nothing is written unless all of it holds, and every member redeploys it.
- `plans/validate` (the editor's check as you type), `plans/<name>/deploy|undeploy`.
- `plans/<name>/query` (an on-demand query on the plan deployed here: `{"query": "..."}` →
  `{"columns": [...], "rows": [[...], ...]}`; a read needs any user, a change an admin).
- `streams/<id>/events` (the event simulator), `streams/<id>/trace` (the last events).
- `users`, `tokens` (bearer tokens: shown once at creation), `cluster` (members, leases,
  pins, drains), `spark` (the plans this node drives on Spark: their queries' status), `server`
  (the node's report; graceful restart and shutdown).

Reading needs any user; changing needs an admin (a viewer gets 403); a user may manage their
own tokens and password. Errors are `{"error": message, "field": key}` (a plan's SiddhiQL
errors also carry `errors: [{line, col, end_line, end_col, message}]`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy.exc
from flask import Blueprint, Response, g, request

import engine
from adapters.http.events import EventFormatError
from adapters.http.json_body import JsonBodyError, load_json
from app.console import actions
from app.console.actions import ApiError, reply
from app.console.entities import RESOURCES, to_json
from app.console.errors import OnDemandRefused
from app.console.principal import Principal, identify
from app.console.services import ConsoleServices
from app.registry import Outcome, RegistryError
from app.registry.leases import RegistryLeases
from app.registry.members import RegistryMembers
from app.registry.users import ROLES
from engine.errors import CEPError, ProcessingError, QueryError

log = logging.getLogger(__name__)

PREFIX = "/api/v1"


def api_blueprint(services: ConsoleServices) -> Blueprint:
    bp = Blueprint("api", __name__, url_prefix=PREFIX)
    registry = services.registry

    @bp.before_request
    def authenticate() -> Response | None:
        who = identify(registry, services.credentials)
        if isinstance(who, Response):
            return who
        g.principal = who
        if (
            request.method not in ("GET", "HEAD", "OPTIONS")
            and not who.admin
            and not _own_business()
            and not _on_demand_query()
        ):
            return reply({"error": f"user {who.name!r} is a viewer: only an admin may change this"}, 403)
        return None

    @bp.errorhandler(ApiError)
    def api_error(exc: ApiError) -> Response:
        return actions.error_reply(exc)

    @bp.errorhandler(sqlalchemy.exc.OperationalError)
    def registry_down(exc: Exception) -> Response:
        log.warning("api %s %s: the registry cannot be reached: %s", request.method, request.path, exc)
        return reply({"error": "the registry cannot be reached; try again"}, 503)

    def body() -> Any:
        raw = request.get_data(cache=False)
        if not raw:
            return {}
        try:
            return load_json(raw, services.max_json_depth)
        except JsonBodyError as exc:
            raise ApiError(400, str(exc)) from None

    def principal() -> Principal:
        who: Principal = g.principal
        return who

    # ---- the index ---------------------------------------------------------------------------

    @bp.get("/")
    def index() -> Response:
        who = principal()
        return reply(
            {
                "node": services.node_id,
                "user": {"name": who.name, "role": who.role, "via": who.via},
                "resources": [*RESOURCES, "users", "tokens", "cluster", "server"],
                "openapi": f"{PREFIX}/openapi.json",
            }
        )

    # ---- registry entities -------------------------------------------------------------------

    @bp.get("/<kind>")
    def list_entities(kind: str) -> Response:
        res = actions.resource(kind)
        with registry.reading() as store:
            return reply([to_json(res, e) for e in res.list(store)])

    @bp.post("/<kind>")
    def create_entity(kind: str) -> Response:
        res = actions.resource(kind)
        _, stored = actions.write(registry, res, actions.parsed(res, body()), create_only=True)
        return reply(to_json(res, stored), 201)

    @bp.get("/<kind>/<path:key>")
    def get_entity(kind: str, key: str) -> Response:
        res = actions.resource(kind)
        entity = actions.get(registry, res, key)
        if entity is None:
            raise ApiError(404, f"{res.what} {key} does not exist")
        return reply(to_json(res, entity))

    @bp.put("/<kind>/<path:key>")
    def put_entity(kind: str, key: str) -> Response:
        res = actions.resource(kind)
        data = body()
        if isinstance(data, dict) and kind != "streams":
            data.setdefault("name", key)
        entity = actions.parsed(res, data)
        if res.key(entity) != key:
            raise ApiError(422, f"the body describes {res.what} {res.key(entity)}, not {key}", "name")
        outcome, stored = actions.write(registry, res, entity, create_only=False)
        return reply(
            to_json(res, stored) | {"outcome": str(outcome)}, 201 if outcome is Outcome.CREATED else 200
        )

    @bp.delete("/<kind>/<path:key>")
    def delete_entity(kind: str, key: str) -> Response:
        actions.delete(registry, actions.resource(kind), key)
        return Response(status=204)

    # ---- plans -------------------------------------------------------------------------------

    @bp.post("/plans/validate")
    def validate_plan() -> Response:
        data = body()
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object with text")
        errors = actions.validate_plan(registry, data.get("text"), data.get("name"))
        return reply({"valid": not errors, "errors": errors})

    @bp.post("/plans/<name>/deploy")
    def deploy(name: str) -> Response:
        return reply(to_json(RESOURCES["plans"], actions.set_enabled(registry, name, True)))

    @bp.post("/plans/<name>/undeploy")
    def undeploy(name: str) -> Response:
        return reply(to_json(RESOURCES["plans"], actions.set_enabled(registry, name, False)))

    @bp.post("/plans/<name>/query")
    def query(name: str) -> Response:
        data = body()
        text = data.get("query") if isinstance(data, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise ApiError(422, 'the body must be {"query": "<on-demand query>"}', "query")
        if services.query is None:
            raise ApiError(503, "this node runs no plans")
        try:
            changes = engine.parse_query(text).changes
            if changes and not principal().admin:
                raise ApiError(
                    403, f"user {principal().name!r} is a viewer: only an admin may change a table"
                )
            columns, rows = services.query(name, text)
        except ApiError:
            raise  # the viewer's refusal above, not one of the query's errors below
        except QueryError as exc:
            first = exc.errors[0]
            message = f"query: {first.line}:{first.col}: {first.message}"
            raise ApiError(422, message, "query", errors=actions.query_errors(exc)) from None
        except LookupError as exc:
            raise ApiError(404, str(exc).strip("'\"")) from None
        except OnDemandRefused as exc:
            raise ApiError(409, str(exc)) from None
        except ProcessingError as exc:
            raise ApiError(422, f"query failed: {exc}", "query") from None
        except CEPError as exc:  # the plan was redeployed or stopped meanwhile
            raise ApiError(503, f"{exc}; try again") from None
        if changes:
            log.info("plan %s: on-demand change by %s: %s", name, principal().name, text)
        return reply({"columns": columns, "rows": rows})

    @bp.post("/datasources/<name>/test")
    def test_datasource(name: str) -> Response:
        actions.test_datasource(registry, name)
        return reply({"reached": f"data source {name}"})

    @bp.post("/adapters/<name>/test")
    def test_adapter(name: str) -> Response:
        return reply({"reached": actions.test_adapter(registry, name)})

    # ---- the simulator and the tracer ----------------------------------------------------------

    @bp.post("/streams/<stream_id>/events")
    def simulate(stream_id: str) -> Response:
        if services.send_events is None:
            raise ApiError(503, "this node takes no events now")
        try:
            accepted = services.send_events(stream_id, body())
        except EventFormatError as exc:
            raise ApiError(422, str(exc), "events") from None
        except LookupError as exc:
            raise ApiError(404, str(exc)) from None
        return reply({"accepted": accepted})

    @bp.get("/streams/<stream_id>/trace")
    def trace(stream_id: str) -> Response:
        if services.trace is None:
            raise ApiError(503, "this node traces no events")
        limit = request.args.get("limit", "50")
        if not limit.isdigit() or not 1 <= int(limit) <= 1000:
            raise ApiError(422, "limit must be a whole number from 1 to 1000", "limit")
        try:
            return reply(services.trace(stream_id, int(limit)))
        except LookupError as exc:
            raise ApiError(404, str(exc)) from None

    # ---- users and tokens ----------------------------------------------------------------------

    def user_json(name: str, role: str) -> dict[str, Any]:
        return {"name": name, "role": role}

    @bp.get("/users")
    def list_users() -> Response:
        return reply([user_json(u.name, u.role) for u in registry.list_users()])

    @bp.get("/users/<name>")
    def get_user(name: str) -> Response:
        user = registry.get_user(name)
        if user is None:
            raise ApiError(404, f"user {name} does not exist")
        return reply(user_json(user.name, user.role))

    def user_fields(data: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object")
        for key in data:
            if key not in allowed:
                raise ApiError(422, f"unknown field {key!r} (a user has {', '.join(allowed)})", key)
        role = data.get("role")
        if role is not None and role not in ROLES:
            raise ApiError(422, f"role must be one of {', '.join(ROLES)}", "role")
        password = data.get("password")
        if password is not None and not isinstance(password, str):
            raise ApiError(422, "password must be a string", "password")
        return data

    def put_user(name: str, password: str | None, role: str | None) -> Outcome:
        try:
            return registry.put_user(name, password, role)
        except RegistryError as exc:
            raise actions.refusal(exc) from None

    @bp.post("/users")
    def create_user() -> Response:
        data = user_fields(body(), ("name", "password", "role"))
        name = data.get("name")
        if not isinstance(name, str):
            raise ApiError(422, "name is required", "name")
        if registry.get_user(name) is not None:
            raise ApiError(409, f"user {name} exists already")
        put_user(name, data.get("password") or "", data.get("role") or "viewer")
        return reply(user_json(name, data.get("role") or "viewer"), 201)

    @bp.patch("/users/<name>")
    def change_user(name: str) -> Response:
        who = principal()
        data = user_fields(body(), ("password", "role"))
        if registry.get_user(name) is None:
            raise ApiError(404, f"user {name} does not exist")
        if not who.admin and (name != who.name or "role" in data):
            raise ApiError(403, "a viewer may change only their own password")
        put_user(name, data.get("password"), data.get("role"))
        user = registry.get_user(name)
        assert user is not None
        return reply(user_json(user.name, user.role))

    @bp.delete("/users/<name>")
    def delete_user(name: str) -> Response:
        try:
            found = registry.delete_user(name)
        except RegistryError as exc:
            raise actions.refusal(exc) from None
        if not found:
            raise ApiError(404, f"user {name} does not exist")
        return Response(status=204)

    def token_json(token: Any) -> dict[str, Any]:
        return {
            "id": token.id,
            "user": token.user,
            "label": token.label,
            "created": token.created.isoformat(),
        }

    @bp.get("/tokens")
    def list_tokens() -> Response:
        who = principal()
        every = who.admin and request.args.get("all") in ("1", "true")
        return reply([token_json(t) for t in registry.list_tokens(None if every else who.name)])

    @bp.post("/tokens")
    def create_token() -> Response:
        who = principal()
        data = body()
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object")
        for key in data:
            if key != "label":
                raise ApiError(422, f"unknown field {key!r} (a token has label)", key)
        label = data.get("label", "")
        if not isinstance(label, str):
            raise ApiError(422, "label must be a string", "label")
        token, text = registry.create_token(who.name, label)
        return reply(token_json(token) | {"token": text}, 201)

    @bp.delete("/tokens/<token_id>")
    def revoke_token(token_id: str) -> Response:
        who = principal()
        mine = {t.id for t in registry.list_tokens(who.name)}
        if token_id not in mine and not who.admin:
            raise ApiError(404, f"you have no token {token_id}")
        if not registry.delete_token(token_id):
            raise ApiError(404, f"token {token_id} does not exist")
        return Response(status=204)

    # ---- the cluster ---------------------------------------------------------------------------

    @bp.get("/cluster")
    def cluster() -> Response:
        members = RegistryMembers(registry)
        pins = members.pins()
        return reply(
            {
                "members": [m.to_json() for m in members.list()],
                "leases": [
                    {
                        "plan": x.plan,
                        "holder": x.holder,
                        "epoch": x.epoch,
                        "ttl_ms": x.ttl_ms,
                        "pinned": pins.get(x.plan),
                    }
                    for x in RegistryLeases(registry).all()
                ],
                "this_node": (services.health().get("cluster")),
            }
        )

    @bp.put("/cluster/plans/<plan>/notifier")
    def move(plan: str) -> Response:
        data = body()
        node = data.get("node") if isinstance(data, dict) else None
        if not isinstance(node, str) or not node:
            raise ApiError(422, "node (the member to notify for the plan) is required", "node")
        members = RegistryMembers(registry)
        if node not in {m.node for m in members.list()}:
            raise ApiError(422, f"member {node} has never reported to this registry", "node")
        members.pin(plan, node)
        return reply({"plan": plan, "pinned": node})

    @bp.delete("/cluster/plans/<plan>/notifier")
    def unpin(plan: str) -> Response:
        if not RegistryMembers(registry).unpin(plan):
            raise ApiError(404, f"plan {plan} is not pinned")
        return Response(status=204)

    @bp.put("/cluster/members/<node>/draining")
    def drain(node: str) -> Response:
        data = body()
        draining = data.get("draining", True) if isinstance(data, dict) else None
        if not isinstance(draining, bool):
            raise ApiError(422, "draining must be true or false", "draining")
        if not RegistryMembers(registry).drain(node, draining):
            raise ApiError(404, f"member {node} has never reported to this registry")
        return reply({"node": node, "draining": draining})

    # ---- Spark --------------------------------------------------------------------------------

    @bp.get("/spark")
    def spark() -> Response:
        """The plans this node drives on Spark, each with its queries' status."""
        if services.spark is None:
            return reply({"enabled": False, "plans": {}})
        return reply({"enabled": True, "plans": services.spark()})

    # ---- the server ----------------------------------------------------------------------------

    @bp.get("/server")
    def server() -> Response:
        return reply(services.health())

    def confirmed_action(action: Callable[[], None] | None, what: str) -> Response:
        data = body()
        if not isinstance(data, dict) or data.get("confirm") is not True:
            raise ApiError(422, f'{what} needs {{"confirm": true}}', "confirm")
        if action is None:
            raise ApiError(503, f"this node cannot {what} on request")
        log.warning("%s requested by %s", what, principal().name)
        action()
        return reply({"status": f"{what} started"}, 202)

    @bp.post("/server/restart")
    def restart() -> Response:
        return confirmed_action(services.restart, "restart")

    @bp.post("/server/shutdown")
    def shutdown() -> Response:
        return confirmed_action(services.shutdown, "shut down")

    return bp


def _on_demand_query() -> bool:
    """`POST /plans/<name>/query`: a viewer may read (the route refuses them a change)."""
    parts = request.path.removeprefix(PREFIX).split("/")
    return request.method == "POST" and len(parts) == 4 and parts[1] == "plans" and parts[3] == "query"


def _own_business() -> bool:
    """Changes a viewer may make: their own tokens and password (checked again in the routes)."""
    path = request.path.removeprefix(PREFIX)
    return path.startswith("/tokens") or (request.method == "PATCH" and path.startswith("/users/"))

"""The OpenAPI 3.1 document of the console's JSON API, served at `/api/v1/openapi.json`.

Written out here, not generated: it is the contract the API tests check every reply against
(its schemas are JSON Schema 2020-12).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from app.console.entities import RESOURCES

_ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _answers(ok: int, schema: dict[str, Any] | None, *refusals: int) -> dict[str, Any]:
    answers: dict[str, Any] = {
        str(ok): {"description": "done"} | (_json(schema) if schema is not None else {})
    }
    for status in (401, 429, *refusals):
        answers[str(status)] = {"description": "refused"} | _json(_ERROR)
    return answers


def _write(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"requestBody": {"required": True} | _json(schema or {"type": "object"})}


ATTRIBUTES = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name", "type"],
        "properties": {"name": {"type": "string"}, "type": {"type": "string"}},
        "additionalProperties": False,
    },
}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "string"},
            "field": {"type": "string"},
            "errors": {"type": "array", "items": {"$ref": "#/components/schemas/Position"}},
        },
    },
    "Position": {
        "type": "object",
        "required": ["line", "col", "message"],
        "properties": {
            "line": {"type": "integer"},
            "col": {"type": "integer"},
            "end_line": {"type": "integer"},
            "end_col": {"type": "integer"},
            "message": {"type": "string"},
            "hint": {"type": "string"},
        },
    },
    "streams": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "version": {"type": "string"},
            "description": {"type": "string"},
            "meta": ATTRIBUTES,
            "correlation": ATTRIBUTES,
            "payload": ATTRIBUTES,
            "revision": {"type": "integer"},
            "outcome": {"type": "string"},
        },
        "additionalProperties": False,
    },
    "plans": {
        "type": "object",
        "required": ["text"],
        "properties": {
            "name": {"type": "string"},
            "text": {"type": "string"},
            "enabled": {"type": "boolean"},
            "snapshot_interval_minutes": {"type": "integer", "minimum": 0},
            "distributed_mode": {"enum": ["none", "redundant", "spark"]},
            "ha_mode": {"enum": ["failover", "active-active", "full-active-active", None]},
            "revision": {"type": "integer"},
            "outcome": {"type": "string"},
        },
        "additionalProperties": False,
    },
    "receivers": {
        "type": "object",
        "required": ["name", "type"],
        "properties": {
            "name": {"type": "string"},
            "type": {"enum": ["thrift", "http"]},
            "enabled": {"type": "boolean"},
        },
        "additionalProperties": True,
    },
    "datasources": {
        "type": "object",
        "required": ["name", "url"],
        "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
        "additionalProperties": True,
    },
    "adapters": {
        "type": "object",
        "required": ["name", "type"],
        "properties": {"name": {"type": "string"}, "type": {"type": "string"}},
        "additionalProperties": True,
    },
    "formatters": {
        "type": "object",
        "required": ["name", "stream", "adapter", "type"],
        "properties": {
            "name": {"type": "string"},
            "stream": {"type": "string"},
            "adapter": {"type": "string"},
            "type": {"type": "string"},
            "mappings": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "additionalProperties": True,
    },
    "User": {
        "type": "object",
        "required": ["name", "role"],
        "properties": {"name": {"type": "string"}, "role": {"enum": ["admin", "viewer"]}},
        "additionalProperties": False,
    },
    "Token": {
        "type": "object",
        "required": ["id", "user", "label", "created"],
        "properties": {
            "id": {"type": "string"},
            "user": {"type": "string"},
            "label": {"type": "string"},
            "created": {"type": "string"},
            "token": {"type": "string", "description": "only in the reply that created it"},
        },
        "additionalProperties": False,
    },
    "Validation": {
        "type": "object",
        "required": ["valid", "errors"],
        "properties": {
            "valid": {"type": "boolean"},
            "errors": {"type": "array", "items": {"$ref": "#/components/schemas/Position"}},
        },
    },
    "Snapshot": {
        "type": "object",
        "required": ["id", "plan", "created_at", "node", "size"],
        "properties": {
            "id": {"type": "integer"},
            "plan": {"type": "string"},
            "created_at": {"type": "string"},
            "node": {"type": "string"},
            "size": {"type": "integer"},
        },
    },
    "QueryResult": {
        "type": "object",
        "required": ["columns", "rows"],
        "properties": {
            "columns": {"type": "array", "items": {"type": "string"}},
            "rows": {"type": "array", "items": {"type": "array"}},
        },
        "additionalProperties": False,
    },
    "Accepted": {"type": "object", "required": ["accepted"], "properties": {"accepted": {"type": "integer"}}},
    "Started": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}},
    "Cluster": {
        "type": "object",
        "required": ["members", "leases"],
        "properties": {"members": {"type": "array"}, "leases": {"type": "array"}, "this_node": {}},
    },
    "Report": {"type": "object", "required": ["status", "node"]},
    "Index": {"type": "object", "required": ["node", "user", "resources"]},
}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _paths() -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/": {
            "get": {"summary": "who is asking, and the resources", "responses": _answers(200, _ref("Index"))}
        }
    }
    for name, res in RESOURCES.items():
        key = "id" if name == "streams" else "name"
        one, many = _ref(name), {"type": "array", "items": _ref(name)}
        paths[f"/{name}"] = {
            "get": {"summary": f"every {res.what}", "responses": _answers(200, many)},
            "post": {"summary": f"create a {res.what}"}
            | _write(one)
            | {"responses": _answers(201, one, 400, 403, 409, 422)},
        }
        paths[f"/{name}/{{{key}}}"] = {
            "parameters": [{"name": key, "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"summary": f"one {res.what}", "responses": _answers(200, one, 404)},
            "put": {"summary": f"create or replace a {res.what}"} | _write(one) | {"responses": _answers(200, one, 400, 403, 422) | {"201": {"description": "created"} | _json(one)}},
            "delete": {"summary": f"delete a {res.what}", "responses": _answers(204, None, 403, 404, 409)},
        }  # fmt: skip
    named = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
    paths["/plans/validate"] = {
        "post": {"summary": "check a plan's SiddhiQL"}
        | _write()
        | {"responses": _answers(200, _ref("Validation"), 400, 422)}
    }
    for action in ("deploy", "undeploy"):
        paths[f"/plans/{{name}}/{action}"] = {
            "parameters": named,
            "post": {"summary": f"{action} a plan", "responses": _answers(200, _ref("plans"), 403, 404)},
        }
    paths["/plans/{name}/query"] = {
        "parameters": named,
        "post": {
            "summary": "an on-demand query on the plan deployed here (a change needs an admin)",
            "description": "`from T [on c] select ...` reads a table or named window; `delete`, "
            "`update`, `update or insert into` and `insert into` change a table. A plan with an "
            "input log (persistence or redundant mode) takes no changes (409).",
        }
        | _write(
            {
                "type": "object",
                "required": ["query"],
                "properties": {"query": {"type": "string"}},
            }
        )
        | {"responses": _answers(200, _ref("QueryResult"), 400, 403, 404, 409, 422, 503)},
    }
    paths["/plans/{name}/snapshots"] = {
        "parameters": named,
        "get": {
            "summary": "the snapshots kept of a plan, newest first",
            "responses": _answers(200, {"type": "array", "items": _ref("Snapshot")}, 503),
        },
        "post": {
            "summary": "take a snapshot of a plan deployed here now",
            "responses": _answers(201, _ref("Snapshot"), 403, 404, 409, 413, 503),
        },
    }
    paths["/plans/{name}/snapshots/{id}/restore"] = {
        "parameters": [*named, {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
        "post": {
            "summary": "load a kept snapshot into the running plan",
            "responses": _answers(
                200,
                {"type": "object", "required": ["plan", "snapshot", "kept", "fresh", "unfit"]},
                403,
                404,
                409,
                422,
                503,
            ),
        },
    }
    for kind in ("datasources", "adapters"):
        paths[f"/{kind}/{{name}}/test"] = {
            "parameters": named,
            "post": {
                "summary": "connect to what it writes to",
                "responses": _answers(200, {"type": "object", "required": ["reached"]}, 403, 404, 502),
            },
        }
    stream = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    paths["/streams/{id}/events"] = {
        "parameters": stream,
        "post": {"summary": "send events (the simulator)"}
        | _write({"type": ["array", "object"]})
        | {"responses": _answers(200, _ref("Accepted"), 403, 404, 422, 503)},
    }
    paths["/streams/{id}/trace"] = {
        "parameters": stream,
        "get": {
            "summary": "the last events of a stream",
            "responses": _answers(200, {"type": "array"}, 404, 422, 503),
        },
    }
    users = {"type": "array", "items": _ref("User")}
    paths["/users"] = {
        "get": {"summary": "every user", "responses": _answers(200, users)},
        "post": {"summary": "add a user (name, password, role)"}
        | _write()
        | {"responses": _answers(201, _ref("User"), 400, 403, 409, 422)},
    }
    paths["/users/{name}"] = {
        "parameters": named,
        "get": {"summary": "one user", "responses": _answers(200, _ref("User"), 404)},
        "patch": {"summary": "change a password or role"}
        | _write()
        | {"responses": _answers(200, _ref("User"), 400, 403, 404, 409, 422)},
        "delete": {
            "summary": "delete a user and its tokens",
            "responses": _answers(204, None, 403, 404, 409),
        },
    }
    paths["/tokens"] = {
        "get": {
            "summary": "your tokens (?all=1: everyone's, for an admin)",
            "responses": _answers(200, {"type": "array", "items": _ref("Token")}),
        },
        "post": {"summary": "a new token (shown once)"}
        | _write()
        | {"responses": _answers(201, _ref("Token"), 400, 422)},
    }
    paths["/tokens/{id}"] = {
        "parameters": stream,
        "delete": {"summary": "revoke a token", "responses": _answers(204, None, 404)},
    }
    paths["/cluster"] = {
        "get": {"summary": "members, leases, pins", "responses": _answers(200, _ref("Cluster"))}
    }
    plan = [{"name": "plan", "in": "path", "required": True, "schema": {"type": "string"}}]
    paths["/cluster/plans/{plan}/notifier"] = {
        "parameters": plan,
        "put": {"summary": "pin the plan's notifier to a member"}
        | _write()
        | {"responses": _answers(200, {"type": "object"}, 403, 422)},
        "delete": {"summary": "unpin", "responses": _answers(204, None, 403, 404)},
    }
    node = [{"name": "node", "in": "path", "required": True, "schema": {"type": "string"}}]
    paths["/cluster/members/{node}/draining"] = {
        "parameters": node,
        "put": {"summary": "drain a member (or end the drain)"}
        | _write()
        | {"responses": _answers(200, {"type": "object"}, 403, 404, 422)},
    }
    spark = {
        "type": "object",
        "required": ["enabled", "plans"],
        "properties": {"enabled": {"type": "boolean"}, "plans": {"type": "object"}},
    }
    paths["/spark"] = {
        "get": {
            "summary": "the plans this node drives on Spark, with their queries",
            "responses": _answers(200, spark),
        }
    }
    paths["/server"] = {"get": {"summary": "the node's report", "responses": _answers(200, _ref("Report"))}}
    for action in ("restart", "shutdown"):
        paths[f"/server/{action}"] = {
            "post": {"summary": f'graceful {action} ({{"confirm": true}})'}
            | _write()
            | {"responses": _answers(202, _ref("Started"), 403, 422, 503)}
        }
    return paths  # fmt: skip


def document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "Cepheus console API", "version": "1"},
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}, {"basic": []}, {"session": []}],
        "paths": _paths(),
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "a token from POST /tokens"},
                "basic": {"type": "http", "scheme": "basic"},
                "session": {"type": "apiKey", "in": "cookie", "name": "cepheus_session"},
            },
        },
    }


def openapi_blueprint() -> Blueprint:
    bp = Blueprint("openapi", __name__)
    doc = document()

    @bp.get("/api/v1/openapi.json")
    def openapi() -> Response:
        return jsonify(doc)

    return bp

"""The console's JSON API on a real SQLite registry: every resource, bad input refused with the
field (nothing written), authorization by role and token, CSRF for sessions, and every reply
checked against the OpenAPI document the API serves."""

from __future__ import annotations

import io
import re
import socket
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate as validate_spec
from werkzeug.test import TestResponse

from app.console.openapi import document
from tests.unit.app.console.conftest import ADMIN_PASSWORD, Console_, basic, csrf_of

PIZZA_STREAM = {
    "name": "pizzaOrders",
    "version": "1.0.0",
    "payload": [{"name": "orderNo", "type": "STRING"}, {"name": "price", "type": "DOUBLE"}],
}
PLAN = """@Plan:name('orders')
@Import('pizzaOrders:1.0.0')
define stream Orders (orderNo string, price double);
@Export('bigOrders:1.0.0')
define stream Big (orderNo string, price double);
from Orders[price > 20] select orderNo, price insert into Big;
"""
BIG_STREAM = PIZZA_STREAM | {"name": "bigOrders"}

SPEC = document()
validate_spec(SPEC)  # the document itself is valid OpenAPI 3.1


def conforms(reply: TestResponse, method: str, template: str) -> Any:
    """The reply's JSON, checked against the document's schema for `template` and its status."""
    operation = SPEC["paths"][template][method.lower()]
    answer = operation["responses"].get(str(reply.status_code))
    assert answer is not None, (
        f"{method} {template}: {reply.status_code} is not documented: {reply.get_data(as_text=True)}"
    )
    if "content" not in answer:
        assert not reply.get_data(), f"{method} {template}: {reply.status_code} has a body"
        return None
    assert reply.mimetype == "application/json"
    body = reply.get_json()
    schema = answer["content"]["application/json"]["schema"] | {"components": SPEC["components"]}
    jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)
    return body


def call(
    console: Console_, method: str, url: str, template: str, headers: dict[str, str], **kw: Any
) -> tuple[int, Any]:
    reply = console.client().open(f"/api/v1{url}", method=method, headers=headers, **kw)
    return reply.status_code, conforms(reply, method, template)


def test_without_credentials_the_api_answers_json_401_and_pages_send_to_the_login(console: Console_) -> None:
    reply = console.client().get("/api/v1/streams")
    assert reply.status_code == 401 and reply.get_json()["error"].startswith("log in")
    reply = console.client().get(
        "/api/v1/streams", headers={"Authorization": "Bearer cep_0000000000000000_" + "x" * 43}
    )
    assert reply.status_code == 401 and "revoked" in reply.get_json()["error"]
    reply = console.client().get("/api/v1/streams", headers=basic("admin", "wrong-password"))
    assert reply.status_code == 401
    page = console.client().get("/plans")
    assert page.status_code == 302 and page.headers["Location"].startswith("/login")
    assert console.client().get("/api/v1/streams", headers=basic("admin", ADMIN_PASSWORD)).status_code == 200


def test_streams_plans_and_their_references(console: Console_) -> None:
    admin = console.admin()
    status, body = call(console, "POST", "/streams", "/streams", admin, json=PIZZA_STREAM)
    assert status == 201 and body["id"] == "pizzaOrders:1.0.0"
    status, _ = call(console, "POST", "/streams", "/streams", admin, json=PIZZA_STREAM)
    assert status == 409
    call(console, "PUT", "/streams/bigOrders:1.0.0", "/streams/{id}", admin, json=BIG_STREAM)
    status, body = call(console, "POST", "/plans", "/plans", admin, json={"text": PLAN})
    assert status == 201 and body["name"] == "orders" and body["enabled"] is True
    status, body = call(console, "GET", "/plans", "/plans", admin)
    assert [p["name"] for p in body] == ["orders"]
    status, body = call(console, "POST", "/plans/orders/undeploy", "/plans/{name}/undeploy", admin)
    assert status == 200 and body["enabled"] is False
    status, body = call(console, "DELETE", "/streams/pizzaOrders:1.0.0", "/streams/{id}", admin)
    assert status == 409 and "orders" in body["error"]  # names the plan that uses it
    assert console.registry.get_stream("pizzaOrders:1.0.0") is not None
    status, _ = call(console, "DELETE", "/plans/orders", "/plans/{name}", admin)
    assert status == 204
    status, _ = call(console, "DELETE", "/streams/pizzaOrders:1.0.0", "/streams/{id}", admin)
    assert status == 204
    status, _ = call(console, "GET", "/streams/pizzaOrders:1.0.0", "/streams/{id}", admin)
    assert status == 404


def test_a_plan_that_does_not_compile_is_refused_with_every_position(console: Console_) -> None:
    admin = console.admin()
    call(console, "POST", "/streams", "/streams", admin, json=PIZZA_STREAM)
    head = "@Plan:name('p')\n@Import('pizzaOrders:1.0.0')\ndefine stream Orders (orderNo string, price double);\n"
    revision = console.registry.revision()
    # a syntax error stops the parser: one error, where `price >` needs an expression and finds
    # the second '>' (col 20)
    broken = head + "from Orders[price >> 20] select orderNo insert into Out;\n"
    syntax = [
        {"line": 4, "col": 20, "end_line": 4, "end_col": 21, "message": "expected an expression, found '>'"}
    ]
    status, body = call(console, "POST", "/plans", "/plans", admin, json={"text": broken})
    assert (status, body) == (
        422,
        {"error": f"text: 4:20: {syntax[0]['message']}", "field": "text", "errors": syntax},
    )
    status, body = call(console, "POST", "/plans/validate", "/plans/validate", admin, json={"text": broken})
    assert (status, body) == (200, {"valid": False, "errors": syntax})
    # two unknown attributes in one query: both are reported, each at its own span
    two = head + "from Orders[prise > 20] select orderNo, amount insert into Out;\n"
    unknown = [
        {
            "line": 4,
            "col": 13,
            "end_line": 4,
            "end_col": 18,
            "message": "unknown attribute 'prise'",
            "hint": "did you mean 'price'?",
        },
        {"line": 4, "col": 41, "end_line": 4, "end_col": 47, "message": "unknown attribute 'amount'"},
    ]
    status, body = call(console, "POST", "/plans", "/plans", admin, json={"text": two})
    assert (status, body) == (
        422,
        {"error": "text: 4:13: unknown attribute 'prise'", "field": "text", "errors": unknown},
    )
    status, body = call(console, "POST", "/plans/validate", "/plans/validate", admin, json={"text": two})
    assert (status, body) == (200, {"valid": False, "errors": unknown})
    # a query whose output does not match the stream it inserts into: at that stream's name
    wrong_stream = PLAN.replace("price double);\n@Export", "price int);\n@Export")
    status, body = call(
        console, "POST", "/plans/validate", "/plans/validate", admin, json={"text": wrong_stream}
    )
    mismatch = {
        "line": 6,
        "col": 59,
        "end_line": 6,
        "end_col": 62,
        "message": "query output (orderNo string, price int) does not match stream 'Big' (orderNo string, price double)",
        "hint": "rename or cast the selected attributes (e.g. 'as name') to match the definition",
    }
    assert (status, body) == (200, {"valid": False, "errors": [mismatch]})
    # a plan that compiles, checked against the registry: each binding's problem at its annotation
    unbound = PLAN.replace("price double", "price int")
    bindings = [
        {
            "line": 2,
            "col": 1,
            "end_line": 2,
            "end_col": 29,
            "message": "stream Orders (orderNo string, price int) does not match the definition of "
            "pizzaOrders:1.0.0 (orderNo string, price double)",
        },
        {
            "line": 4,
            "col": 1,
            "end_line": 4,
            "end_col": 27,
            "message": "stream bigOrders:1.0.0 is not defined; define it (a [[streams]] entry) first",
        },
    ]
    status, body = call(console, "POST", "/plans", "/plans", admin, json={"text": unbound})
    error = f"plan 'orders': text: 2:1: {bindings[0]['message']}"
    assert (status, body) == (422, {"error": error, "field": "text", "errors": bindings})
    status, body = call(console, "POST", "/plans/validate", "/plans/validate", admin, json={"text": unbound})
    assert (status, body) == (200, {"valid": False, "errors": bindings})
    assert console.registry.revision() == revision and console.registry.list_plans() == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (PIZZA_STREAM | {"colour": "red"}, "colour"),  # unknown field
        (PIZZA_STREAM | {"name": "x'; DROP TABLE cep_streams;--"}, "name"),  # SQL in a name
        (PIZZA_STREAM | {"name": "<script>alert(1)</script>"}, "name"),  # script in a name
        (PIZZA_STREAM | {"payload": [{"name": "price", "type": "MONEY"}]}, None),  # wrong type
        (PIZZA_STREAM | {"version": 7}, "version"),  # wrong JSON type
    ],
)
def test_bad_streams_are_refused_and_nothing_changes(
    console: Console_, body: dict[str, Any], field: str | None
) -> None:
    revision = console.registry.revision()
    status, reply = call(console, "POST", "/streams", "/streams", console.admin(), json=body)
    assert 400 <= status < 500, reply
    if field is not None:
        assert reply.get("field") == field, reply
    assert console.registry.revision() == revision and console.registry.list_streams() == []


def test_connector_settings_are_checked_by_building_them(console: Console_, tmp_path: Any) -> None:
    admin = console.admin()
    call(console, "POST", "/streams", "/streams", admin, json=PIZZA_STREAM)
    url = f"sqlite:///{tmp_path / 'sink.db'}"
    status, _ = call(
        console, "POST", "/datasources", "/datasources", admin, json={"name": "sink", "url": url}
    )
    assert status == 201
    adapter = {"name": "orders", "type": "rdbms", "datasource": "sink", "table": "orders"}
    status, body = call(console, "POST", "/adapters", "/adapters", admin, json=adapter | {"tabel": "x"})
    assert status == 422 and body["field"] == "tabel", body
    status, body = call(
        console, "POST", "/adapters", "/adapters", admin, json=adapter | {"datasource": "nowhere"}
    )
    assert status == 422 and "nowhere" in body["error"]
    status, _ = call(console, "POST", "/adapters", "/adapters", admin, json=adapter)
    assert status == 201
    formatter = {"name": "f", "stream": "pizzaOrders:1.0.0", "adapter": "orders", "type": "map"}
    for mappings, field in (
        ({"x; DROP TABLE orders;--": "orderNo"}, "mappings.x; DROP TABLE orders;--"),  # SQL as a column
        ({"order_no": "<script>alert(1)</script>"}, "mappings.order_no"),  # markup as an attribute
    ):
        status, body = call(
            console, "POST", "/formatters", "/formatters", admin, json=formatter | {"mappings": mappings}
        )
        assert status == 422 and body["field"] == field, body
    assert console.registry.list_formatters() == []
    status, body = call(
        console,
        "POST",
        "/formatters",
        "/formatters",
        admin,
        json=formatter | {"mappings": {"price'--": "cost"}},
    )
    assert status == 422 and "cost" in body["error"] and body["field"].startswith("mappings."), body
    status, body = call(
        console,
        "POST",
        "/formatters",
        "/formatters",
        admin,
        json=formatter | {"mappings": {"order_no": "orderNo"}},
    )
    assert status == 201 and body["mappings"] == {"order_no": "orderNo"}
    status, body = call(console, "DELETE", "/adapters/orders", "/adapters/{name}", admin)
    assert status == 409 and "f" in body["error"]
    assert [a.name for a in console.registry.list_adapters()] == ["orders"]


def test_a_viewer_reads_everything_and_changes_nothing_but_their_own_tokens(console: Console_) -> None:
    call(console, "POST", "/streams", "/streams", console.admin(), json=PIZZA_STREAM)
    viewer = console.viewer()
    revision = console.registry.revision()
    status, body = call(console, "GET", "/streams", "/streams", viewer)
    assert status == 200 and len(body) == 1
    for method, url, template, kw in [
        ("POST", "/streams", "/streams", {"json": BIG_STREAM}),
        ("DELETE", "/streams/pizzaOrders:1.0.0", "/streams/{id}", {}),
        ("POST", "/users", "/users", {"json": {"name": "eve", "password": "12345678", "role": "admin"}}),
        ("POST", "/server/restart", "/server/restart", {"json": {"confirm": True}}),
    ]:
        status, body = call(console, method, url, template, viewer, **kw)
        assert status == 403 and "viewer" in body["error"], (url, body)
    status, body = call(console, "PATCH", "/users/victor", "/users/{name}", viewer, json={"role": "admin"})
    assert status == 403
    assert console.registry.revision() == revision and console.requests == []
    status, body = call(console, "POST", "/tokens", "/tokens", viewer, json={"label": "mine"})
    assert status == 201 and body["user"] == "victor" and body["token"].startswith("cep_")
    status, _ = call(console, "DELETE", f"/tokens/{body['id']}", "/tokens/{id}", viewer)
    assert status == 204


def test_tokens_and_users(console: Console_) -> None:
    admin = console.admin()
    status, body = call(
        console,
        "POST",
        "/users",
        "/users",
        admin,
        json={"name": "olga", "password": "olga-password", "role": "admin"},
    )
    assert status == 201 and body == {"name": "olga", "role": "admin"}
    status, body = call(console, "POST", "/users", "/users", admin, json={"name": "p", "password": "short"})
    assert status == 422 and body["field"] == "password"
    status, body = call(
        console,
        "POST",
        "/users",
        "/users",
        admin,
        json={"name": "q", "password": "long-enough", "is_admin": True},
    )
    assert status == 422 and body["field"] == "is_admin"
    status, body = call(console, "PATCH", "/users/olga", "/users/{name}", admin, json={"role": "root"})
    assert status == 422 and body["field"] == "role"
    token = (
        console.client()
        .post("/api/v1/tokens", headers=basic("olga", "olga-password"), json={"label": "ci"})
        .get_json()
    )
    olga = {"Authorization": f"Bearer {token['token']}"}
    status, body = call(console, "GET", "/", "/", olga)
    assert body["user"] == {"name": "olga", "role": "admin", "via": "token"}
    status, body = call(console, "GET", "/tokens", "/tokens", olga)
    assert [t["id"] for t in body] == [token["id"]] and "token" not in body[0]  # shown once only
    status, _ = call(console, "DELETE", f"/tokens/{token['id']}", "/tokens/{id}", admin)
    assert status == 204
    status, _ = call(console, "GET", "/", "/", olga)
    assert status == 401
    status, _ = call(console, "DELETE", "/users/olga", "/users/{name}", admin)
    assert status == 204
    status, body = call(console, "DELETE", "/users/admin", "/users/{name}", admin)
    assert status == 409 and "last admin" in body["error"]


def test_a_session_needs_its_csrf_token_to_change_anything(console: Console_) -> None:
    client, token = console.session()
    assert client.get("/api/v1/streams").status_code == 200
    refused = client.post("/api/v1/streams", json=PIZZA_STREAM)
    assert refused.status_code == 400 and "CSRF" in refused.get_json()["error"]
    refused = client.post("/api/v1/streams", json=PIZZA_STREAM, headers={"X-CSRFToken": "forged"})
    assert refused.status_code == 400
    assert console.registry.list_streams() == []
    accepted = client.post("/api/v1/streams", json=PIZZA_STREAM, headers={"X-CSRFToken": token})
    assert accepted.status_code == 201
    form = client.post("/streams", data={"name": "other", "payload": "x INT"})
    assert form.status_code == 400 and console.registry.get_stream("other:1.0.0") is None


def test_logins_are_rate_limited(console: Console_) -> None:
    client = console.client()
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf-token" content="([^"]+)"', page)
    assert token
    statuses = [
        client.post(
            "/login", data={"username": "admin", "password": f"guess-{i}", "csrf_token": token.group(1)}
        ).status_code
        for i in range(5)
    ]
    assert statuses[:3] == [401, 401, 401] and statuses[-1] == 429
    right = client.post(
        "/login", data={"username": "admin", "password": ADMIN_PASSWORD, "csrf_token": token.group(1)}
    )
    assert right.status_code == 429  # locked out for a while, even with the right password
    assert (
        client.post("/login", data={"username": "admin", "password": ADMIN_PASSWORD}).status_code == 400
    )  # no CSRF


def test_pages_carry_security_headers_and_cookies_are_http_only(console: Console_) -> None:
    reply = console.client().get("/login")
    csp = reply.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    cookie = reply.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "<script>" not in reply.get_data(as_text=True)  # no inline script


def test_simulator_cluster_and_server(console: Console_) -> None:
    admin = console.admin()
    status, body = call(
        console, "POST", "/streams/in:1.0.0/events", "/streams/{id}/events", admin, json=[[1], [2]]
    )
    assert status == 200 and body == {"accepted": 2}
    status, body = call(
        console, "POST", "/streams/nope:1.0.0/events", "/streams/{id}/events", admin, json=[[1]]
    )
    assert status == 404
    status, body = call(console, "GET", "/cluster", "/cluster", admin)
    assert body["members"] == [] and body["leases"] == []
    status, body = call(
        console,
        "PUT",
        "/cluster/plans/p/notifier",
        "/cluster/plans/{plan}/notifier",
        admin,
        json={"node": "ghost"},
    )
    assert status == 422 and body["field"] == "node"
    status, body = call(console, "POST", "/server/restart", "/server/restart", admin, json={})
    assert status == 422 and body["field"] == "confirm"
    assert ("restart", None) not in console.requests
    status, body = call(console, "POST", "/server/restart", "/server/restart", admin, json={"confirm": True})
    assert status == 202 and ("restart", None) in console.requests
    status, body = call(console, "GET", "/server", "/server", admin)
    assert body["node"] == "node-t"
    assert console.client().get("/api/v1/openapi.json").get_json() == SPEC


def test_a_viewers_forms_change_nothing(console: Console_) -> None:
    client, token = console.session("victor", "viewer-password")
    page = client.post("/streams", data={"name": "mine", "payload": "x INT", "csrf_token": token})
    assert page.status_code == 302
    assert "viewer" in client.get(page.headers["Location"]).get_data(as_text=True)
    assert console.registry.list_streams() == []
    reply = client.post("/tokens", data={"label": "mine", "csrf_token": token})  # their own token: allowed
    assert reply.status_code == 200 and "cep_" in reply.get_data(as_text=True)


def test_the_simulator_takes_csv_and_jsonl_uploads(console: Console_) -> None:
    client, token = console.session()
    csv_file = (io.BytesIO(b"room,v\nr1,5\nr2,7.5\n"), "readings.csv")
    page = client.post(
        "/simulator", data={"stream": "in:1.0.0", "events": "", "file": csv_file, "csrf_token": token},
        content_type="multipart/form-data",
    )  # fmt: skip
    assert page.status_code == 200 and "2 event(s) sent to in:1.0.0" in page.get_data(as_text=True)
    assert console.requests[-1] == (
        "events",
        ("in:1.0.0", [{"data": {"room": "r1", "v": 5}}, {"data": {"room": "r2", "v": 7.5}}]),
    )
    jsonl = (io.BytesIO(b'["r1", 5]\n\n{"data": ["r2", 6]}\n'), "readings.jsonl")
    page = client.post(
        "/simulator",
        data={"stream": "in:1.0.0", "file": jsonl, "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert console.requests[-1] == ("events", ("in:1.0.0", [["r1", 5], {"data": ["r2", 6]}]))
    broken = (io.BytesIO(b'["r1", 5]\n{oops\n'), "readings.jsonl")
    page = client.post(
        "/simulator",
        data={"stream": "in:1.0.0", "file": broken, "csrf_token": token},
        content_type="multipart/form-data",
    )
    assert "readings.jsonl: line 2: not JSON" in page.get_data(as_text=True)
    assert len(console.requests) == 2  # nothing sent of the broken file


def test_receivers_and_datasources_are_checked(console: Console_) -> None:
    admin = console.admin()
    status, body = call(
        console, "POST", "/receivers", "/receivers", admin, json={"name": "bridge", "type": "kafka"}
    )
    assert status == 422 and body["field"] == "type" and "thrift" in body["error"]
    status, body = call(
        console,
        "POST",
        "/receivers",
        "/receivers",
        admin,
        json={"name": "web", "type": "http", "enabled": "yes"},
    )
    assert status == 422 and body["field"] == "enabled"
    status, body = call(
        console, "PUT", "/receivers/web", "/receivers/{name}", admin, json={"type": "http", "enabled": False}
    )
    assert status == 201 and body == {
        "name": "web",
        "type": "http",
        "enabled": False,
        "revision": body["revision"],
        "outcome": "created",
    }
    status, body = call(
        console, "PUT", "/receivers/web", "/receivers/{name}", admin, json={"name": "other", "type": "http"}
    )
    assert status == 422 and body["field"] == "name"
    status, body = call(
        console, "POST", "/datasources", "/datasources", admin, json={"name": "db", "url": "not a url"}
    )
    assert status == 422 and body["field"] == "url"
    assert console.registry.list_datasources() == []
    status, body = call(console, "POST", "/datasources", "/datasources", admin, json=["db"])
    assert status == 400


def test_a_login_starts_a_new_session(console: Console_) -> None:
    """A token planted before the login (session fixation) is worth nothing after it."""
    client = console.client()
    before = csrf_of(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"username": "admin", "password": ADMIN_PASSWORD, "csrf_token": before})
    after = csrf_of(client.get("/").get_data(as_text=True))
    refused = client.post("/api/v1/streams", json=PIZZA_STREAM, headers={"X-CSRFToken": before})
    assert after != before and refused.status_code == 400
    assert (
        client.post("/api/v1/streams", json=PIZZA_STREAM, headers={"X-CSRFToken": after}).status_code == 201
    )


def test_connection_tests_reach_what_a_data_source_or_adapter_writes_to(
    console: Console_, tmp_path: Any
) -> None:
    admin = console.admin()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    try:
        port = listener.getsockname()[1]
        call(
            console,
            "POST",
            "/datasources",
            "/datasources",
            admin,
            json={"name": "db", "url": f"sqlite:///{tmp_path / 'x.db'}"},
        )
        call(
            console,
            "POST",
            "/datasources",
            "/datasources",
            admin,
            json={"name": "gone", "url": f"postgresql+psycopg2://u@127.0.0.1:{closed_port}/x"},
        )
        status, body = call(console, "POST", "/datasources/db/test", "/datasources/{name}/test", admin)
        assert (status, body) == (200, {"reached": "data source db"})
        status, body = call(console, "POST", "/datasources/gone/test", "/datasources/{name}/test", admin)
        assert status == 502 and "cannot connect" in body["error"]
        for name, url, expected in (
            ("up", f"http://127.0.0.1:{port}/hook", 200),
            ("down", f"http://127.0.0.1:{closed_port}/hook", 502),
        ):
            call(
                console,
                "POST",
                "/adapters",
                "/adapters",
                admin,
                json={"name": name, "type": "http", "url": url},
            )
            status, body = call(console, "POST", f"/adapters/{name}/test", "/adapters/{name}/test", admin)
            assert status == expected, body
        status, body = call(console, "POST", "/adapters/nope/test", "/adapters/{name}/test", admin)
        assert status == 404
        status, _ = call(console, "POST", "/adapters/up/test", "/adapters/{name}/test", console.viewer())
        assert status == 403
    finally:
        listener.close()


def test_guessed_tokens_lock_the_address_out(console: Console_) -> None:
    guesses = [
        console.client()
        .get("/api/v1/", headers={"Authorization": f"Bearer cep_{i:016x}_" + "x" * 43})
        .status_code
        for i in range(5)
    ]
    assert guesses[:3] == [401, 401, 401] and guesses[-1] == 429
    locked = console.client().get("/api/v1/", headers=console.admin())
    assert (
        locked.status_code == 429 and int(locked.headers["Retry-After"]) >= 1
    )  # even a good token, for a while

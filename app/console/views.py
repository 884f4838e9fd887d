"""The console's pages: server-rendered HTML forms over the same actions as the JSON API.

Every page needs a login (`/login`, a session cookie); a viewer sees everything and changes
nothing but their own password and tokens. Forms carry the session's CSRF token. Changes go
through `app.console.actions`, i.e. to the registry, from where every member redeploys them.
Scripts (`static/console.js`: live validation in the plan editor, live charts and the tracer)
call the JSON API with the session; the pages work without them except for those live parts.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import flask_login  # type: ignore[import-untyped]
from flask import Blueprint, Response, flash, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response as BaseResponse

import engine
from adapters.http.events import EventFormatError
from app.console import actions
from app.console.actions import ApiError
from app.console.entities import RESOURCES, to_json
from app.console.principal import SessionUser
from app.console.services import ConsoleServices
from app.node.auth import Outcome as LoginOutcome
from app.registry import RegistryError
from app.registry.connectors import ADAPTER_TYPES, FORMATTER_TYPES, RECEIVER_TYPES
from app.registry.leases import RegistryLeases
from app.registry.members import RegistryMembers
from app.registry.plans import DISTRIBUTED_MODES, HA_MODES, bound_streams
from app.registry.streams import ATTRIBUTE_TYPES, SECTIONS
from app.registry.users import ROLES

log = logging.getLogger(__name__)

Page = Response | BaseResponse | str

CONNECTORS = {  # the pages of entities with a type and settings
    "receivers": ("Receivers", RECEIVER_TYPES, "Event receivers (Thrift Data Bridge, HTTP)."),
    "datasources": ("Data sources", (), "Databases the RDBMS output adapters write to (SQLAlchemy URLs)."),
    "adapters": ("Output adapters", ADAPTER_TYPES, "Where formatted events go."),
    "formatters": ("Formatters", FORMATTER_TYPES, "How a stream's events become what an adapter sends."),
}
EXAMPLES = {
    "receivers": {"name": "", "type": "http", "enabled": True},
    "datasources": {"name": "", "url": "mysql+pymysql://user:${DB_PASSWORD}@127.0.0.1:3306/db"},
    "adapters": {"name": "", "type": "rdbms", "datasource": "", "table": "", "mode": "insert"},
    "formatters": {"name": "", "stream": "name:1.0.0", "adapter": "", "type": "map", "mappings": {"column": "attribute"}},
}  # fmt: skip
MAX_UPLOAD_EVENTS = 10_000


def views_blueprint(services: ConsoleServices) -> Blueprint:
    bp = Blueprint(
        "console", __name__, template_folder="templates", static_folder="static", static_url_path="/assets"
    )
    registry = services.registry

    def me() -> Any:
        return flask_login.current_user.user

    @bp.before_request
    def require_login() -> Page | None:
        if request.endpoint in ("console.login", "console.static", "console.favicon"):
            return None
        if not flask_login.current_user.is_authenticated:
            return redirect(url_for("console.login", next=request.full_path.rstrip("?")))
        if request.method == "POST" and not me().admin and request.endpoint not in OWN_BUSINESS:
            flash(f"user {me().name} is a viewer: only an admin may change this", "error")
            return redirect(request.referrer or url_for("console.dashboard"))
        return None

    @bp.app_context_processor
    def common() -> dict[str, Any]:
        user = flask_login.current_user
        return {"node_id": services.node_id, "user": user.user if user and user.is_authenticated else None}

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

    @bp.get("/favicon.ico")
    def favicon() -> Page:
        return redirect(url_for("console.static", filename="favicon.svg"), 301)

    # ---- login -----------------------------------------------------------------------------

    @bp.route("/login", methods=["GET", "POST"])
    def login() -> Page:
        if request.method == "GET":
            return render_template("login.html")
        name = request.form.get("username", "")
        password = request.form.get("password", "")
        verdict = services.credentials.check(
            name, password, request.environ.get("REMOTE_ADDR") or "", "console"
        )
        if verdict.outcome is not LoginOutcome.ACCEPTED:
            status = (
                429
                if verdict.outcome is LoginOutcome.THROTTLED
                else 503
                if verdict.outcome is LoginOutcome.BUSY
                else 401
            )
            message = "wrong user name or password" if status == 401 else verdict.message or "try again later"
            headers = {"Retry-After": str(max(1, math.ceil(verdict.retry_after)))} if status != 401 else {}
            return Response(render_template("login.html", error=message, username=name), status, headers)
        user = registry.get_user(name)
        if user is None:
            return Response(render_template("login.html", error="wrong user name or password"), 401)
        session.clear()  # nothing of the session before the login carries over (no fixation)
        flask_login.login_user(SessionUser(user))
        target = request.args.get("next", "")
        parts = urlsplit(target)
        if not target.startswith("/") or target.startswith("//") or parts.scheme or parts.netloc:
            target = url_for("console.dashboard")
        return redirect(target)

    @bp.post("/logout")
    def logout() -> Page:
        flask_login.logout_user()
        return redirect(url_for("console.login"))

    # ---- dashboard ---------------------------------------------------------------------------

    @bp.get("/")
    def dashboard() -> Page:
        report = services.health()
        cluster = report.get("cluster") or {}
        roles = {name: p.get("role") for name, p in (cluster.get("plans") or {}).items()}
        return render_template("dashboard.html", report=report, roles=roles)

    # ---- streams -----------------------------------------------------------------------------

    @bp.get("/streams")
    def streams() -> Page:
        with registry.reading() as store:
            items = store.list_streams()
        return render_template("streams.html", streams=items, types=ATTRIBUTE_TYPES, sections=SECTIONS)

    @bp.post("/streams")
    def create_stream() -> Page:
        def create() -> None:
            form = request.form
            entry: dict[str, Any] = {
                "name": form.get("name", "").strip(),
                "version": form.get("version", "").strip() or "1.0.0",
                "description": form.get("description", ""),
            }
            for section in SECTIONS:
                entry[section] = _attribute_lines(form.get(section, ""), section)
            res = RESOURCES["streams"]
            actions.write(registry, res, actions.parsed(res, entry), create_only=True)

        return attempt(create, "stream created", url_for("console.streams"))

    @bp.get("/streams/<stream_id>")
    def stream(stream_id: str) -> Page:
        found = actions.get(registry, RESOURCES["streams"], stream_id)
        if found is None:
            return _not_found(f"stream {stream_id} does not exist")
        with registry.reading() as store:
            users = [p.name for p in store.list_plans() if stream_id in bound_streams(p.text)]
        return render_template("stream.html", stream=found, plans=users, sections=SECTIONS)

    @bp.post("/streams/<stream_id>/delete")
    def delete_stream(stream_id: str) -> Page:
        return attempt(
            lambda: actions.delete(registry, RESOURCES["streams"], stream_id),
            f"stream {stream_id} deleted",
            url_for("console.streams"),
        )

    # ---- plans -------------------------------------------------------------------------------

    @bp.get("/plans")
    def plans() -> Page:
        with registry.reading() as store:
            items = store.list_plans()
        states = services.health().get("plans") or {}
        return render_template("plans.html", plans=items, states=states)

    @bp.get("/plans/new")
    def new_plan() -> Page:
        return render_template(
            "plan.html", plan=None, modes=DISTRIBUTED_MODES, ha_modes=HA_MODES, text=NEW_PLAN
        )

    @bp.get("/plans/<name>")
    def plan(name: str) -> Page:
        found = actions.get(registry, RESOURCES["plans"], name)
        if found is None:
            return _not_found(f"plan {name} does not exist")
        state = (services.health().get("plans") or {}).get(name)
        snapshots: list[Any] = []
        if services.snapshots is not None:
            status, listed = services.snapshots.list(name)
            snapshots = listed if status == 200 else []
        return render_template(
            "plan.html",
            plan=found,
            modes=DISTRIBUTED_MODES,
            ha_modes=HA_MODES,
            text=found.text,
            state=state,
            queries=_queries(found.text),
            streams=sorted(bound_streams(found.text)),
            snapshots=snapshots,
        )

    def snapshot_request(name: str, status_body: tuple[int, Any], done: str) -> Page:
        status, body = status_body
        if status >= 400:
            flash(body.get("error", f"refused ({status})"), "error")
        else:
            flash(done.format(**body), "ok")
        return redirect(url_for("console.plan", name=name))

    @bp.post("/plans/<name>/snapshots")
    def take_snapshot(name: str) -> Page:
        if services.snapshots is None:
            return _not_found("this node takes no snapshots")
        return snapshot_request(name, services.snapshots.take(name), "snapshot {id} taken ({size} bytes)")

    @bp.post("/plans/<name>/snapshots/<int:snapshot_id>/restore")
    def restore_snapshot(name: str, snapshot_id: int) -> Page:
        if services.snapshots is None:
            return _not_found("this node takes no snapshots")
        return snapshot_request(
            name,
            services.snapshots.restore(name, snapshot_id),
            "snapshot {snapshot} restored into plan {plan}",
        )

    @bp.post("/plans/save")
    def save_plan() -> Page:
        form = request.form
        entry: dict[str, Any] = {
            "name": form.get("name", "").strip(),
            "text": form.get("text", "").replace("\r\n", "\n"),
            "enabled": form.get("enabled") == "on",
            "distributed_mode": form.get("distributed_mode", "none"),
        }
        interval = form.get("snapshot_interval_minutes", "0").strip() or "0"
        entry["snapshot_interval_minutes"] = int(interval) if interval.isdigit() else interval
        if entry["distributed_mode"] == "redundant":
            entry["ha_mode"] = form.get("ha_mode") or "failover"
        if not entry["name"]:
            del entry["name"]
        res = RESOURCES["plans"]
        try:
            plan = actions.parsed(res, entry)
            actions.write(registry, res, plan, create_only=form.get("new") == "1")
        except ApiError as exc:
            errors = exc.extra.get("errors") or []
            return Response(
                render_template(
                    "plan.html",
                    plan=None
                    if form.get("new") == "1"
                    else actions.get(registry, res, entry.get("name", "")),
                    modes=DISTRIBUTED_MODES,
                    ha_modes=HA_MODES,
                    text=entry["text"],
                    form=entry,
                    error=str(exc),
                    errors=errors,
                ),
                422,
            )
        flash(f"plan {plan.name} saved", "ok")
        return redirect(url_for("console.plan", name=plan.name))

    @bp.post("/plans/<name>/<action>")
    def plan_action(name: str, action: str) -> Page:
        if action == "delete":
            return attempt(
                lambda: actions.delete(registry, RESOURCES["plans"], name),
                f"plan {name} deleted",
                url_for("console.plans"),
            )
        if action not in ("deploy", "undeploy"):
            return _not_found(f"no action {action}")
        return attempt(
            lambda: actions.set_enabled(registry, name, action == "deploy"),
            f"plan {name}: {action}ed",
            url_for("console.plan", name=name),
        )

    # ---- receivers, data sources, adapters, formatters ----------------------------------------

    @bp.get("/<any(receivers, datasources, adapters, formatters):kind>")
    def connectors(kind: str) -> Page:
        res = RESOURCES[kind]
        with registry.reading() as store:
            items = [to_json(res, e) for e in res.list(store)]
        title, types, about = CONNECTORS[kind]
        example = json.dumps(EXAMPLES[kind], indent=2)
        return render_template(
            "connectors.html", kind=kind, title=title, types=types, about=about, items=items, example=example
        )

    @bp.get("/<any(receivers, datasources, adapters, formatters):kind>/<name>")
    def connector(kind: str, name: str) -> Page:
        res = RESOURCES[kind]
        found = actions.get(registry, res, name)
        if found is None:
            return _not_found(f"{res.what} {name} does not exist")
        shown = {k: v for k, v in to_json(res, found).items() if k != "revision"}
        title, types, about = CONNECTORS[kind]
        return render_template(
            "connector.html",
            kind=kind,
            title=title,
            name=name,
            what=res.what,
            text=json.dumps(shown, indent=2),
        )

    @bp.post("/<any(receivers, datasources, adapters, formatters):kind>")
    def save_connector(kind: str) -> Page:
        res = RESOURCES[kind]
        original = request.form.get("original")

        def save() -> None:
            try:
                data = json.loads(request.form.get("definition", ""))
            except json.JSONDecodeError as exc:
                raise ApiError(
                    400, f"the definition is not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
                ) from None
            entity = actions.parsed(res, data)
            if original and res.key(entity) != original:
                raise ApiError(422, f"the name is {original}; create a new {res.what} to use another", "name")
            actions.write(registry, res, entity, create_only=not original)

        return attempt(save, f"{res.what} saved", url_for("console.connectors", kind=kind))

    @bp.post("/<any(receivers, datasources, adapters, formatters):kind>/<name>/delete")
    def delete_connector(kind: str, name: str) -> Page:
        res = RESOURCES[kind]
        return attempt(
            lambda: actions.delete(registry, res, name),
            f"{res.what} {name} deleted",
            url_for("console.connectors", kind=kind),
        )

    @bp.post("/adapters/<name>/test")
    def test_adapter(name: str) -> Page:
        reached: list[str] = []
        return attempt(
            lambda: reached.append(actions.test_adapter(registry, name)),
            f"output adapter {name}: connected",
            url_for("console.connectors", kind="adapters"),
        )

    @bp.post("/datasources/<name>/test")
    def test_datasource(name: str) -> Page:
        return attempt(
            lambda: actions.test_datasource(registry, name),
            f"data source {name}: connected",
            url_for("console.connectors", kind="datasources"),
        )

    # ---- simulator and tracer ----------------------------------------------------------------

    def stream_ids() -> list[str]:
        with registry.reading() as store:
            return [s.id for s in store.list_streams()]

    @bp.route("/simulator", methods=["GET", "POST"])
    def simulator() -> Page:
        if request.method == "GET":
            return render_template("simulator.html", streams=stream_ids(), text="")
        stream_id = request.form.get("stream", "")
        text = request.form.get("events", "")
        upload = request.files.get("file")
        try:
            if upload is not None and upload.filename:
                body = _uploaded_events(upload.filename, upload.read(), services, stream_id)
            else:
                body = json.loads(text) if text.strip() else []
            if services.send_events is None:
                raise ApiError(503, "this node takes no events now")
            accepted = services.send_events(stream_id, body)
        except json.JSONDecodeError as exc:
            flash(f"the events are not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}", "error")
        except (EventFormatError, ApiError, LookupError) as exc:
            flash(str(exc), "error")
        else:
            flash(f"{accepted} event(s) sent to {stream_id}", "ok")
        return render_template("simulator.html", streams=stream_ids(), text=text, chosen=stream_id)

    @bp.get("/tracer")
    def tracer() -> Page:
        return render_template("tracer.html", streams=stream_ids())

    # ---- cluster -----------------------------------------------------------------------------

    @bp.get("/cluster")
    def cluster() -> Page:
        members = RegistryMembers(registry)
        return render_template(
            "cluster.html",
            members=members.list(),
            leases=RegistryLeases(registry).all(),
            pins=members.pins(),
            here=services.health().get("cluster"),
        )

    @bp.post("/cluster/move")
    def move() -> Page:
        plan, node = request.form.get("plan", ""), request.form.get("node", "")

        def pin() -> None:
            members = RegistryMembers(registry)
            if node not in {m.node for m in members.list()}:
                raise ApiError(422, f"member {node} has never reported to this registry", "node")
            members.pin(plan, node)

        return attempt(pin, f"plan {plan}: notifier pinned to {node}", url_for("console.cluster"))

    @bp.post("/cluster/drain")
    def drain() -> Page:
        node, undo = request.form.get("node", ""), request.form.get("undo") == "1"
        return attempt(
            lambda: (
                RegistryMembers(registry).drain(node, not undo)
                or _raise(ApiError(404, f"member {node} is unknown"))
            ),
            f"member {node}: {'no longer draining' if undo else 'draining'}",
            url_for("console.cluster"),
        )

    # ---- server ------------------------------------------------------------------------------

    @bp.get("/server")
    def server() -> Page:
        return render_template("server.html", report=services.health(), confirm=request.args.get("confirm"))

    @bp.post("/server/<any(restart, shutdown):action>")
    def server_action(action: str) -> Page:
        if request.form.get("confirm") != "yes":
            return redirect(url_for("console.server", confirm=action))
        handler = services.restart if action == "restart" else services.shutdown
        if handler is None:
            flash(f"this node cannot {action} on request", "error")
            return redirect(url_for("console.server"))
        log.warning("%s requested from the console by %s", action, me().name)
        handler()
        return render_template("server_going.html", action=action)

    # ---- users and tokens --------------------------------------------------------------------

    @bp.get("/users")
    def users() -> Page:
        who = me()
        everyone = registry.list_users() if who.admin else [who]
        tokens = registry.list_tokens(None if who.admin else who.name)
        return render_template("users.html", users=everyone, tokens=tokens, roles=ROLES)

    @bp.post("/users")
    def add_user() -> Page:
        form = request.form
        name, role = form.get("name", "").strip(), form.get("role", "viewer")

        def add() -> None:
            if registry.get_user(name) is not None:
                raise ApiError(409, f"user {name} exists already")
            _registry_call(lambda: registry.put_user(name, form.get("password", ""), role))

        return attempt(add, f"user {name} added", url_for("console.users"))

    @bp.post("/users/<name>/password")
    def change_password(name: str) -> Page:
        if name != me().name and not me().admin:
            flash("you may change only your own password", "error")
            return redirect(url_for("console.users"))
        return attempt(
            lambda: _registry_call(lambda: registry.put_user(name, request.form.get("password", ""))),
            f"password of {name} changed",
            url_for("console.users"),
        )

    @bp.post("/users/<name>/role")
    def change_role(name: str) -> Page:
        return attempt(
            lambda: _registry_call(lambda: registry.put_user(name, None, request.form.get("role"))),
            f"role of {name} changed",
            url_for("console.users"),
        )

    @bp.post("/users/<name>/delete")
    def delete_user(name: str) -> Page:
        return attempt(
            lambda: _registry_call(lambda: registry.delete_user(name)),
            f"user {name} deleted",
            url_for("console.users"),
        )

    @bp.post("/tokens")
    def create_token() -> Page:
        label = request.form.get("label", "")
        _, text = registry.create_token(me().name, label)
        who = me()
        return render_template(
            "users.html",
            users=registry.list_users() if who.admin else [who],
            tokens=registry.list_tokens(None if who.admin else who.name),
            roles=ROLES,
            new_token=text,
        )

    @bp.post("/tokens/<token_id>/revoke")
    def revoke_token(token_id: str) -> Page:
        who = me()
        mine = {t.id for t in registry.list_tokens(who.name)}

        def revoke() -> None:
            if (token_id not in mine and not who.admin) or not registry.delete_token(token_id):
                raise ApiError(404, f"no token {token_id}")

        return attempt(revoke, "token revoked", url_for("console.users"))

    return bp


OWN_BUSINESS = {"console.logout", "console.change_password", "console.create_token", "console.revoke_token"}

NEW_PLAN = """@Plan:name('myPlan')

@Import('inStream:1.0.0')
define stream InStream (id string, value double);

@Export('outStream:1.0.0')
define stream OutStream (id string, total double);

from InStream#window.length(10)
select id, sum(value) as total
group by id
insert into OutStream;
"""


def _raise(exc: Exception) -> Any:
    raise exc


def _registry_call(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except RegistryError as exc:
        raise actions.refusal(exc) from None


def _not_found(message: str) -> Page:
    return Response(render_template("error.html", message=message), 404)


def _queries(text: str) -> list[dict[str, Any]]:
    """The plan's queries and partitions: name, first line and their text (nothing if it does not parse)."""
    try:
        parsed = engine.parse(text)
    except engine.QueryError:
        return []
    lines = text.splitlines()
    out = []
    for i, element in enumerate(parsed.elements, 1):
        span = element.span
        name = getattr(element, "name", None) or f"{type(element).__name__.lower()} {i}"
        body = "\n".join(lines[span.line - 1 : span.end_line]) if span is not None else ""
        out.append({"name": name, "line": span.line if span is not None else None, "text": body})
    return out


def _attribute_lines(text: str, section: str) -> list[dict[str, str]]:
    """`name TYPE` per line (or `name:TYPE`, or comma-separated) → attribute entries."""
    out = []
    for i, raw in enumerate(text.replace(",", "\n").splitlines(), 1):
        item = raw.strip()
        if not item:
            continue
        parts = item.replace(":", " ").split()
        if len(parts) != 2:
            raise ApiError(
                422, f"{section}: line {i}: write `name TYPE`, e.g. `price DOUBLE` (got {item!r})", section
            )
        out.append({"name": parts[0], "type": parts[1].upper()})
    return out


def _uploaded_events(filename: str, data: bytes, services: ConsoleServices, stream_id: str) -> Any:
    """The events of an uploaded CSV (a header row of attribute names) or JSONL file."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApiError(400, f"{filename}: not UTF-8 text") from None
    lines = text.splitlines()
    if len(lines) > MAX_UPLOAD_EVENTS + 1:
        raise ApiError(413, f"{filename}: at most {MAX_UPLOAD_EVENTS} events per upload")
    if filename.lower().endswith((".jsonl", ".ndjson", ".json")):
        events = []
        for i, line in enumerate(lines, 1):
            if line.strip():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ApiError(400, f"{filename}: line {i}: not JSON: {exc.msg}") from None
        return events
    reader = csv.DictReader(io.StringIO(text))
    return [{"data": {k: _csv_value(v) for k, v in row.items() if k}} for row in reader]


def _csv_value(value: str | None) -> Any:
    if value is None or value == "":
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value

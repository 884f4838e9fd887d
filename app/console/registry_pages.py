"""The console's pages of registry entities: streams, execution plans (the editor, snapshots),
receivers, data sources, output adapters and formatters."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for

import engine
from app.console import actions
from app.console.actions import ApiError
from app.console.entities import RESOURCES, to_json
from app.console.pages import Page, attempt, not_found
from app.console.services import ConsoleServices
from app.registry.connectors import ADAPTER_TYPES, FORMATTER_TYPES, RECEIVER_TYPES
from app.registry.plans import DISTRIBUTED_MODES, HA_MODES, bound_streams
from app.registry.streams import ATTRIBUTE_TYPES, SECTIONS

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


def register(bp: Blueprint, services: ConsoleServices) -> None:
    registry = services.registry

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
            return not_found(f"stream {stream_id} does not exist")
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
            return not_found(f"plan {name} does not exist")
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
            return not_found("this node takes no snapshots")
        return snapshot_request(name, services.snapshots.take(name), "snapshot {id} taken ({size} bytes)")

    @bp.post("/plans/<name>/snapshots/<int:snapshot_id>/restore")
    def restore_snapshot(name: str, snapshot_id: int) -> Page:
        if services.snapshots is None:
            return not_found("this node takes no snapshots")
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
            return not_found(f"no action {action}")
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
            return not_found(f"{res.what} {name} does not exist")
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

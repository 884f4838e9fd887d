"""The console's operations pages: the event simulator and tracer, the cluster, the plans this
node drives on Spark (WSO2 CEP 4.0's "Distributed Deployment Status"), the server (graceful
restart and shutdown)."""

from __future__ import annotations

import csv
import io
import json
import logging
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for

from adapters.http.events import EventFormatError
from app.console.actions import ApiError
from app.console.pages import Page, attempt, me, raise_
from app.console.services import ConsoleServices
from app.registry.leases import RegistryLeases
from app.registry.members import RegistryMembers

log = logging.getLogger(__name__)

MAX_UPLOAD_EVENTS = 10_000


def register(bp: Blueprint, services: ConsoleServices) -> None:
    registry = services.registry

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
                or raise_(ApiError(404, f"member {node} is unknown"))
            ),
            f"member {node}: {'no longer draining' if undo else 'draining'}",
            url_for("console.cluster"),
        )

    # ---- Spark --------------------------------------------------------------------------------

    @bp.get("/spark")
    def spark() -> Page:
        plans = services.spark() if services.spark is not None else None
        return render_template("spark.html", plans=plans, chosen=request.args.get("plan"))

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

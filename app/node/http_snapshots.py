"""Snapshots on request, on the node's HTTP port: take one of a deployed plan now, or restore one.

- `POST /api/v1/plans/<name>/snapshots`: snapshot plan `name` (persistence mode or not) and
  store it in the registry; 201 with its meta.
- `POST /api/v1/plans/<name>/snapshots/<id>/restore`: load snapshot `id` of plan `name` into
  the running plan (`PlanManager.replace_state`: a fresh runtime takes the state and then
  replaces the running one, so a load that fails leaves the plan as it was); 200 with what
  went where (`kept`, `fresh`, `unfit`).

Basic authentication as every endpoint here (`app.node.http_api`). Refusals: 404 for a plan
not deployed here or a snapshot it does not have, 409 for a snapshot whose bytes fail their
checks, 422 for one the plan cannot load, 503 when the registry cannot be reached. These
routes are kept apart from the rest so they can move under the console's API.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import sqlalchemy.exc
from flask import Blueprint, Response

from adapters.http.replies import json_error
from app.node.auth import Credentials
from app.node.errors import UnknownPlan
from app.node.http_api import login_refusal
from app.node.plans import PlanManager
from app.node.snapshots import SnapshotDeferred, SnapshotKeeper, SnapshotTooLarge, describe
from engine import RestoreReport
from engine.errors import StateError
from ha.errors import SnapshotCorrupt, SnapshotMissing

log = logging.getLogger(__name__)


def report_json(plan: str, snapshot_id: int, report: RestoreReport) -> dict[str, Any]:
    return {
        "plan": plan,
        "snapshot": snapshot_id,
        "kept": report.kept,
        "fresh": report.fresh,
        "unfit": [{"part": part, "reason": reason} for part, reason in report.unfit],
    }


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


def _registry_down(exc: sqlalchemy.exc.SQLAlchemyError) -> Response:
    cause = exc.orig if isinstance(exc, sqlalchemy.exc.DBAPIError) else exc
    return json_error(503, f"the registry cannot be reached ({cause}); try again when it is back")


def snapshots_blueprint(plans: PlanManager, keeper: SnapshotKeeper, credentials: Credentials) -> Blueprint:
    bp = Blueprint("snapshots", __name__, url_prefix="/api/v1/plans")

    @bp.post("/<name>/snapshots")
    def take(name: str) -> Response:
        refusal = login_refusal(credentials)
        if refusal is not None:
            return refusal
        found = plans.deployment(name)
        if found is None:
            return json_error(404, str(UnknownPlan(name)))
        try:
            meta = keeper.take(*found)
        except SnapshotTooLarge as exc:
            return json_error(413, f"plan {name!r}: {exc}")
        except SnapshotDeferred as exc:
            return json_error(409, str(exc))
        except sqlalchemy.exc.SQLAlchemyError as exc:
            return _registry_down(exc)
        return _json(201, meta.to_json())

    @bp.post("/<name>/snapshots/<int:snapshot_id>/restore")
    def restore(name: str, snapshot_id: int) -> Response:
        refusal = login_refusal(credentials)
        if refusal is not None:
            return refusal
        if plans.deployment(name) is None:
            return json_error(404, str(UnknownPlan(name)))
        try:
            _, blob = keeper.load(name, snapshot_id)
            report = plans.replace_state(name, blob)
            _cover_journal(plans, keeper, name)
        except (SnapshotMissing, UnknownPlan) as exc:
            return json_error(404, str(exc))
        except SnapshotCorrupt as exc:
            return json_error(409, str(exc))
        except StateError as exc:
            msg = (
                f"snapshot {snapshot_id} does not load into plan {name!r}: {exc}; the plan runs on unchanged"
            )
            return json_error(422, msg)
        except sqlalchemy.exc.SQLAlchemyError as exc:
            return _registry_down(exc)
        log.info("plan %s restored from snapshot %d on request: %s", name, snapshot_id, describe(report))
        return _json(200, report_json(name, snapshot_id, report))

    return bp


def _cover_journal(plans: PlanManager, keeper: SnapshotKeeper, name: str) -> None:
    """A plan with an input log takes a snapshot of the state just restored: otherwise a crash
    would replay the log on top of the snapshot before it."""
    found = plans.deployment(name)
    if found is None or plans.journal(name) is None:
        return
    try:
        keeper.take(*found)
    except Exception as exc:
        log.error(
            "plan %s: no snapshot of the restored state (%s); take one before the next crash", name, exc
        )

"""Snapshots on request, on the node's HTTP port: take one of a deployed plan now, or restore one.

- `GET /api/v1/plans/<name>/snapshots`: the snapshots the registry keeps of plan `name`.
- `POST /api/v1/plans/<name>/snapshots`: snapshot plan `name` (persistence mode or not) and
  store it in the registry; 201 with its meta.
- `POST /api/v1/plans/<name>/snapshots/<id>/restore`: load snapshot `id` of plan `name` into
  the running plan (`PlanManager.replace_state`: a fresh runtime takes the state and then
  replaces the running one, so a load that fails leaves the plan as it was); 200 with what
  went where (`kept`, `fresh`, `unfit`).

`SnapshotRequests` does the work (the console's plan page uses it too); the node passes the
console API's authorization (a session, a bearer token or basic credentials; an admin to take
or restore). Refusals: 404 for a plan not deployed here or a snapshot it does not have, 409
for a snapshot whose bytes fail their checks, 422 for one the plan cannot load, 503 when the
registry cannot be reached.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy.exc
from flask import Blueprint, Response

from app.node.errors import UnknownPlan
from app.node.plans import PlanManager
from app.persistence.snapshot_keeper import SnapshotDeferred, SnapshotKeeper, SnapshotTooLarge, describe
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


def _error(status: int, message: str) -> tuple[int, Any]:
    return status, {"error": message}


def _registry_down(exc: sqlalchemy.exc.SQLAlchemyError) -> tuple[int, Any]:
    cause = exc.orig if isinstance(exc, sqlalchemy.exc.DBAPIError) else exc
    return _error(503, f"the registry cannot be reached ({cause}); try again when it is back")


class SnapshotRequests:
    """Snapshots asked for by an operator: each answer is (HTTP status, JSON body)."""

    def __init__(self, plans: PlanManager, keeper: SnapshotKeeper) -> None:
        self.plans = plans
        self.keeper = keeper

    def list(self, name: str) -> tuple[int, Any]:
        try:
            return 200, [m.to_json() for m in self.keeper.kept(name)]
        except sqlalchemy.exc.SQLAlchemyError as exc:
            return _registry_down(exc)

    def take(self, name: str) -> tuple[int, Any]:
        found = self.plans.deployment(name)
        if found is None:
            return _error(404, str(UnknownPlan(name)))
        try:
            meta = self.keeper.take(*found)
        except SnapshotTooLarge as exc:
            return _error(413, f"plan {name!r}: {exc}")
        except SnapshotDeferred as exc:
            return _error(409, str(exc))
        except sqlalchemy.exc.SQLAlchemyError as exc:
            return _registry_down(exc)
        return 201, meta.to_json()

    def restore(self, name: str, snapshot_id: int) -> tuple[int, Any]:
        plans, keeper = self.plans, self.keeper
        if plans.deployment(name) is None:
            return _error(404, str(UnknownPlan(name)))
        try:
            _, blob = keeper.load(name, snapshot_id)
            report = plans.replace_state(name, blob)
            _cover_journal(plans, keeper, name)
        except (SnapshotMissing, UnknownPlan) as exc:
            return _error(404, str(exc))
        except SnapshotCorrupt as exc:
            return _error(409, str(exc))
        except StateError as exc:
            msg = (
                f"snapshot {snapshot_id} does not load into plan {name!r}: {exc}; the plan runs on unchanged"
            )
            return _error(422, msg)
        except sqlalchemy.exc.SQLAlchemyError as exc:
            return _registry_down(exc)
        log.info("plan %s restored from snapshot %d on request: %s", name, snapshot_id, describe(report))
        return 200, report_json(name, snapshot_id, report)


def snapshots_blueprint(
    requests: SnapshotRequests, authorize: Callable[[bool], Response | None]
) -> Blueprint:
    """`authorize(change)`: None when the request may read (`change` False) or take and restore
    snapshots (True), else the refusal to send."""
    bp = Blueprint("snapshots", __name__, url_prefix="/api/v1/plans")

    def answer(result: tuple[int, Any]) -> Response:
        return _json(*result)

    @bp.get("/<name>/snapshots")
    def listed(name: str) -> Response:
        return authorize(False) or answer(requests.list(name))

    @bp.post("/<name>/snapshots")
    def take(name: str) -> Response:
        return authorize(True) or answer(requests.take(name))

    @bp.post("/<name>/snapshots/<int:snapshot_id>/restore")
    def restore(name: str, snapshot_id: int) -> Response:
        return authorize(True) or answer(requests.restore(name, snapshot_id))

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

"""`PlanManager`: the registry's enabled execution plans, compiled and running on the wall clock.

`apply(plans)` deploys what is new, redeploys what changed (its text, or the definition of a
stream it imports or exports) and undeploys what is gone or disabled; a plan whose text or
streams are unchanged keeps running with its state, and a redeployed one keeps the state of
every query whose text and schemas are unchanged. A persistence-mode plan deployed anew is
restored from its newest snapshot (`restore`, the node's `SnapshotKeeper`), and one that stops
running here (undeployed, disabled, or replaced by a text that fails) leaves a last one
(`retire`). A plan that fails to deploy is reported
with the reason and the others are unaffected. One clock thread fires the timers of every
plan (time windows, triggers, pattern `within`); sends fire due timers too.

With an input log (`journals`), a persistence-mode plan runs through its `PlanJournal`: its
input and timer firings are logged before they are processed, on a logged clock, and a plan
deployed anew replays the log after the snapshot it was restored from (`recover`), so it
carries on exactly where the last process stopped. Its outputs carry their provenance.

For the operations metrics: the events each plan emitted on each exported stream (`emitted`,
counted in the plan's export callback, which its runtime's lock serialises, so without a lock
of its own), and the plans restoring a snapshot or replaying their input log right now
(`restoring`, while `apply` deploys them).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import engine
from adapters.throttle import Throttle
from app.cluster import Cluster
from app.cluster.gate import LockedGate
from app.node.catalog import StreamCatalog
from app.node.errors import UnknownPlan
from app.node.ingress import Binding, Ingress, Row
from app.node.outputs import OutputHub
from app.persistence.journal import Journals, PlanJournal, wall_ms
from app.persistence.snapshot_keeper import Restored, describe, persistent
from app.registry import ExecutionPlan
from app.registry.plans import BindsStreams, StreamBinding, stream_bindings
from app.spark.driver import SparkDriver, SparkPlan
from app.spark.errors import SparkPlanError
from engine import Runtime
from engine.events import Event

log = logging.getLogger(__name__)

LOCAL_MODES = ("none", "redundant")
SPARK_ELSEWHERE = (
    "distributed_mode 'spark' runs on the nodes with [spark] enabled = true; this node has it off "
    "(set it in the node's configuration, or CEPHEUS__SPARK__ENABLED=true, and restart the node)"
)
TICK_SECONDS = 0.02  # the longest a due timer waits when no event arrives


@dataclass
class Deployed(BindsStreams):
    plan: ExecutionPlan
    runtime: Runtime
    bindings: list[StreamBinding]
    fingerprint: str
    journal: PlanJournal | None = None
    gate: LockedGate | None = None  # a redundant plan's held outputs


@dataclass(frozen=True)
class PlanStatus:
    name: str
    state: str  # "running", "failed", "disabled"; spark plans: "starting", "spark" or "elsewhere"
    message: str = ""


class PlanManager:
    def __init__(
        self,
        catalog: StreamCatalog,
        ingress: Ingress,
        outputs: OutputHub,
        compile_plan: Callable[[str, Callable[[], int] | None], Runtime] | None = None,
        restore: Callable[[ExecutionPlan, Runtime], Restored] | None = None,
        retire: Callable[[ExecutionPlan, Runtime], object] | None = None,
        journals: Journals | None = None,
        checkpoint: Callable[[ExecutionPlan, Runtime], object] | None = None,
        cluster: Cluster | None = None,
        spark: SparkDriver | None = None,
    ) -> None:
        self._catalog = catalog
        self._ingress = ingress
        self._outputs = outputs
        self._compile = compile_plan or _compile_on_wall_clock
        self._restore = restore
        self._retire = retire
        self.journals = journals
        self._checkpoint = checkpoint
        self.cluster = cluster
        self.spark = spark
        self._spark_plans: dict[str, SparkPlan] = {}
        self._lock = threading.Lock()
        self._deployed: dict[str, Deployed] = {}
        self._status: dict[str, PlanStatus] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._clock_thread: threading.Thread | None = None
        self._timer_errors = Throttle(10.0)
        # (plan, exported stream id) → [events emitted]; the cell outlives a redeploy
        self._emitted: dict[tuple[str, str], list[int]] = {}
        self._restoring: dict[str, str] = {}  # plan → what it is doing ("restoring a snapshot", ...)

    # ---- deployment ----------------------------------------------------------------------

    def apply(self, plans: Sequence[ExecutionPlan]) -> dict[str, PlanStatus]:
        """Make the running set match `plans`; returns every plan's status."""
        with self._lock:
            status: dict[str, PlanStatus] = {}
            wanted: dict[str, ExecutionPlan] = {}
            wanted_spark: dict[str, ExecutionPlan] = {}
            for plan in plans:
                if not plan.enabled:
                    status[plan.name] = PlanStatus(plan.name, "disabled")
                elif plan.distributed_mode == "spark" and self.spark is None:
                    status[plan.name] = PlanStatus(plan.name, "elsewhere", SPARK_ELSEWHERE)
                elif plan.distributed_mode == "spark":
                    wanted_spark[plan.name] = plan
                elif plan.distributed_mode not in LOCAL_MODES:
                    status[plan.name] = PlanStatus(
                        plan.name,
                        "elsewhere",
                        f"distributed_mode {plan.distributed_mode!r} does not run here",
                    )
                else:
                    wanted[plan.name] = plan
            deployed = dict(self._deployed)
            retired: list[Deployed] = []
            departing: list[Deployed] = []  # stop running here with their state: a last snapshot
            handed: list[tuple[Deployed, Deployed]] = []  # redeployed: (running, its replacement)
            fresh_names: set[str] = set()
            for name in list(deployed):
                if name not in wanted:
                    departing.append(deployed.pop(name))
                    log.info("plan %s undeployed", name)
            for name, plan in wanted.items():
                current = deployed.get(name)
                bindings = _bindings(plan)
                fingerprint = self._fingerprint(plan, bindings)
                if current is not None and current.fingerprint == fingerprint:
                    current.plan = plan
                    status[name] = PlanStatus(name, "running")
                    continue
                try:
                    fresh = self._deploy(plan, bindings, fingerprint)
                except (engine.CEPError, _BindingError) as exc:
                    message = exc.format(f"plan {name}") if isinstance(exc, engine.QueryError) else str(exc)
                    status[name] = PlanStatus(name, "failed", message)
                    log.error("plan %s not deployed: %s", name, message)
                    if current is not None:
                        departing.append(deployed.pop(name))
                    continue
                if current is not None:
                    handed.append((current, fresh))
                else:
                    if fresh.journal is not None:
                        fresh.journal.runtime = fresh.runtime
                    try:
                        if self._restore is not None and persistent(plan):
                            self._restore_into(plan, fresh)
                        elif fresh.journal is not None:
                            self._recover_log(fresh.journal, fresh.gate)
                    finally:
                        self._restoring.pop(name, None)
                deployed[name] = fresh
                fresh_names.add(name)
                status[name] = PlanStatus(name, "running")
                log.info(
                    "plan %s %s (imports %s; exports %s)",
                    name,
                    "redeployed" if current is not None else "deployed",
                    ", ".join(b.stream_id for b in fresh.imports) or "nothing",
                    ", ".join(b.stream_id for b in fresh.exports) or "nothing",
                )
            spark_plans, spark_stopped = self._apply_spark(wanted_spark, status, fresh_names)
            cyclic = _cycles(deployed, spark_plans)
            while cyclic:
                # the plans (re)deployed now closed the cycle: refuse them, keep the ones that ran before
                for name in (cyclic & fresh_names) or cyclic:
                    if name in spark_plans:
                        spark_stopped.append((spark_plans.pop(name), False))
                    else:
                        retired.append(deployed.pop(name))
                    message = "its @Import/@Export streams form a cycle with other plans; break the cycle"
                    status[name] = PlanStatus(name, "failed", message)
                    log.error("plan %s not deployed: %s", name, message)
                cyclic = _cycles(deployed, spark_plans)
            for old, fresh in handed:
                if deployed.get(fresh.plan.name) is fresh:
                    self._hand_over(old, fresh)
                retired.append(old)
            self._deployed = deployed
            self._spark_plans = spark_plans
            self._status = status
            self._ingress.set_routes(self._routes(deployed))
        if self.spark is not None:
            for old_spark, drain in spark_stopped:  # routed to no more: their queries stop
                self.spark.retire(old_spark, drain)
        if self._retire is not None:
            for old in departing:  # routed to no more: its state is final
                self._retire(old.plan, old.runtime)
        if self.cluster is not None:
            for old in departing:
                if old.plan.name not in self._deployed:
                    self.cluster.forget(old.plan.name)
        for old in retired + departing:
            old.runtime.shutdown()
        self._wake.set()
        return dict(status)

    def _apply_spark(
        self, wanted: dict[str, ExecutionPlan], status: dict[str, PlanStatus], fresh_names: set[str]
    ) -> tuple[dict[str, SparkPlan], list[tuple[SparkPlan, bool]]]:
        """The Spark plans to run now, and those to stop (with whether to drain their hand-off
        first: a text replaced by another). Called under the lock; starts nothing that blocks."""
        running = dict(self._spark_plans)
        stopping: list[tuple[SparkPlan, bool]] = []
        for name in list(running):
            if name not in wanted:
                stopping.append((running.pop(name), False))
                log.info("plan %s undeployed from Spark", name)
        for name, plan in wanted.items():
            current = running.get(name)
            bindings = _bindings(plan)
            fingerprint = self._fingerprint(plan, bindings)
            if current is not None and current.fingerprint == fingerprint:
                current.plan = plan
                status[name] = PlanStatus(name, current.state, current.message)
                continue
            try:
                fresh = self._deploy_spark(plan, bindings, fingerprint, current)
            except (engine.CEPError, _BindingError) as exc:
                message = exc.format(f"plan {name}") if isinstance(exc, engine.QueryError) else str(exc)
                status[name] = PlanStatus(name, "failed", message)
                log.error("plan %s not deployed on Spark: %s", name, message)
                if current is not None:
                    stopping.append((running.pop(name), False))
                continue
            if current is not None:
                stopping.append((current, True))
            running[name] = fresh
            fresh_names.add(name)
            status[name] = PlanStatus(name, fresh.state, fresh.message)
            log.info(
                "plan %s %s on Spark (imports %s; exports %s)",
                name,
                "redeployed" if current is not None else "deployed",
                ", ".join(b.stream_id for b in fresh.imports) or "nothing",
                ", ".join(b.stream_id for b in fresh.exports) or "nothing",
            )
        return running, stopping

    def _deploy_spark(
        self, plan: ExecutionPlan, bindings: list[StreamBinding], fingerprint: str, current: SparkPlan | None
    ) -> SparkPlan:
        assert self.spark is not None
        runtime = engine.compile(plan.text)  # a text that does not parse fails here, with positions
        try:
            for binding in bindings:
                self._check_binding(runtime, binding)
            if not any(b.direction == "import" for b in bindings):
                msg = "a plan on Spark reads only what the node receives: @Import at least one stream"
                raise SparkPlanError(msg)
            return self.spark.deploy(
                plan,
                bindings,
                fingerprint,
                runtime,
                lambda stream_id: self._emitted.setdefault((plan.name, stream_id), [0]),
                after=current,
            )
        except BaseException:
            runtime.shutdown()
            raise

    def _hand_over(self, old: Deployed, fresh: Deployed) -> None:
        """A redeployed plan keeps the state of every query whose text and schemas are
        unchanged: the running runtime hands its state over and the routes switch to the
        new one in the same step, so no event falls between them."""
        name = fresh.plan.name
        if fresh.journal is not None and old.journal is None:
            fresh.journal.reset()  # just put in persistence mode: records of an earlier stint would not fit

        def switch() -> None:
            if fresh.journal is not None:
                fresh.journal.runtime = fresh.runtime
                fresh.journal.deployed = fresh.fingerprint
            self._deployed = {**self._deployed, name: fresh}
            self._ingress.set_routes(self._routes(self._deployed))

        try:
            report = old.runtime.hand_over(fresh.runtime, switch)
        except engine.CEPError as exc:
            switch()
            old.runtime.shutdown()
            log.warning("plan %s starts with empty state after its redeploy: %s", name, exc)
            report = None
        finally:
            if self.cluster is not None and fresh.journal is not None and self._redundant(fresh.plan):
                self.cluster.redeployed(name)  # a standby takes the notifier's state of the new text
        if report is None:
            return
        log.info("plan %s carried its state over: %s", name, describe(report))
        if fresh.journal is not None and self._checkpoint is not None:
            # its log so far ran through the old text: a replay must start after this point
            self._checkpoint(fresh.plan, fresh.runtime)

    def _restore_into(self, plan: ExecutionPlan, fresh: Deployed) -> None:
        """Restore the plan's newest snapshot, then replay its input log after it."""
        assert self._restore is not None
        self._restoring[plan.name] = "restoring a snapshot"
        try:
            restored = self._restore(plan, fresh.runtime)
        except Exception:  # a snapshot must never keep a plan from running
            log.exception("plan %s starts with empty state: restoring its snapshot failed", plan.name)
            return
        journal = fresh.journal
        if journal is None or not restored.known:
            return  # without knowing the snapshots, the log is left as it is for a later deploy
        if restored.discarded:
            journal.reset()
            journal.senders.clear()
            return
        journal.restore_senders(restored.annex)
        meta = restored.meta
        replica = self._redundant(plan)
        outputs = restored.annex.get("outputs")
        if fresh.gate is not None and meta is not None and isinstance(outputs, dict):
            try:  # before the replay holds the outputs of the records after the snapshot
                fresh.gate.restore(outputs)
            except (KeyError, TypeError, ValueError) as exc:
                fresh.gate.reset(meta.input_position or 0)  # it vouches for nothing before the snapshot
                log.warning("plan %s: the snapshot's held outputs are unreadable: %s", plan.name, exc)
        self._restoring[plan.name] = "replaying the input log"
        try:
            written = fresh.gate.trim if fresh.gate is not None else None
            if meta is None:
                journal.recover(restored=False, replica=replica, written=written)
            else:
                journal.recover(True, meta.input_log, meta.input_position, replica=replica, written=written)
        except Exception:  # an unreadable log must not keep the plan from running either
            log.exception(
                "plan %s: its input log cannot be replayed; it runs on from its snapshot", plan.name
            )

    def _recover_log(self, journal: PlanJournal, gate: LockedGate | None) -> None:
        """A redundant plan without snapshots starts from its whole input log, if it has it."""
        self._restoring[journal.plan] = "replaying the input log"
        try:
            journal.recover(restored=False, replica=True, written=gate.trim if gate is not None else None)
        except Exception:
            log.exception("plan %s: its input log cannot be replayed; it starts empty", journal.plan)

    def _redundant(self, plan: ExecutionPlan) -> bool:
        return self.cluster is not None and plan.distributed_mode == "redundant"

    def _fingerprint(self, plan: ExecutionPlan, bindings: list[StreamBinding]) -> str:
        """The plan's text and the definitions of the streams it binds: what a redeploy follows."""
        digest = hashlib.sha256(plan.text.encode())
        for binding in bindings:
            known = self._catalog.get(binding.stream_id)
            digest.update(repr((binding.stream_id, known.attributes if known else None)).encode())
        return digest.hexdigest()

    def _deploy(self, plan: ExecutionPlan, bindings: list[StreamBinding], fingerprint: str) -> Deployed:
        journal = gate = None
        if self.journals is not None and (persistent(plan) or self._redundant(plan)):
            journal = self.journals.of(plan.name)
        # a text that does not parse fails here, with positions
        runtime = self._compile(plan.text, None if journal is None else journal.clock)
        try:
            for binding in bindings:
                self._check_binding(runtime, binding)
            if journal is not None and self.cluster is not None and self._redundant(plan):
                if journal.deployed is None:  # deployed here first (a redeploy sets it at the switch)
                    journal.deployed = fingerprint
                gate = self.cluster.gate(plan.name, journal, plan.ha_mode)
            for binding in bindings:
                if binding.direction == "export":
                    runtime.subscribe(
                        binding.stream, self._exporter(plan.name, binding.stream_id, journal, gate)
                    )
        except BaseException:
            runtime.shutdown()
            raise
        return Deployed(plan, runtime, bindings, fingerprint, journal, gate)

    def _check_binding(self, runtime: Runtime, binding: StreamBinding) -> None:
        known = self._catalog.get(binding.stream_id)
        if known is None:
            msg = f"stream {binding.stream_id} (@{binding.direction.title()} of {binding.stream}) is not defined"
            raise _BindingError(msg)
        actual = tuple((name, kind) for name, kind in runtime.attributes(binding.stream))
        if actual != known.attributes:
            shown = ", ".join(f"{n} {t.value}" for n, t in known.attributes)
            msg = f"stream {binding.stream} does not match the definition of {binding.stream_id} ({shown})"
            raise _BindingError(msg)

    def _exporter(
        self, plan: str, stream_id: str, journal: PlanJournal | None, gate: LockedGate | None = None
    ) -> Callable[[list[Event]], None]:
        outputs, ingress = self._outputs, self._ingress
        emitted = self._emitted.setdefault((plan, stream_id), [0])

        tracer = ingress.tracer

        def export(events: list[Event]) -> None:
            emitted[0] += len(events)
            if stream_id in tracer.watched:
                tracer.record(stream_id, [tuple(e.data) for e in events], [e.timestamp for e in events])
            if journal is None:
                outputs.emit(stream_id, events)
            else:
                origin = journal.origin(stream_id, len(events))
                if gate is not None:  # it reaches the plans importing it once released (`app.node.links`)
                    gate.hold(stream_id, events, origin)
                    return
                outputs.emit(stream_id, events, origin)
                if journal.replaying or not journal.leading:
                    return  # the plans importing it logged what they got from the run replayed
            if ingress.routes().get(stream_id):
                rows: list[Row] = [tuple(e.data) for e in events]
                try:
                    ingress.forward(stream_id, rows, [e.timestamp for e in events], source=plan)
                except (
                    Exception
                ):  # another plan refused them (its input log is full): not this plan's failure
                    log.exception("plan %s: its %s could not reach the plans importing it", plan, stream_id)

        return export

    def _routes(self, deployed: dict[str, Deployed]) -> dict[str, tuple[Binding, ...]]:
        routes: dict[str, list[Binding]] = {}
        for name, d in deployed.items():
            exported = tuple(b.stream_id for b in d.exports)
            for b in d.imports:
                routes.setdefault(b.stream_id, []).append(
                    Binding(b.stream_id, name, d.runtime, b.stream, d.journal, exported, d.gate)
                )
        for name, sp in self._spark_plans.items():
            for b in sp.imports:
                routes.setdefault(b.stream_id, []).append(
                    Binding(
                        b.stream_id, name, sp.input, b.stream, exports=tuple(e.stream_id for e in sp.exports)
                    )
                )
        return {sid: tuple(bs) for sid, bs in routes.items()}

    def replace_state(self, name: str, blob: bytes) -> engine.RestoreReport:
        """Put the state in `blob` into running plan `name`, all at once or not at all.

        A fresh runtime of the plan is compiled and `blob` restored into it (partially: parts
        that no longer fit start empty); only then does it replace the running one, which is
        shut down. When the blob does not load (`StateError`) the running plan is untouched.
        `UnknownPlan` when `name` is not deployed here.
        """
        with self._lock:
            current = self._deployed.get(name)
            if current is None:
                raise UnknownPlan(name)
            fresh = self._deploy(current.plan, current.bindings, current.fingerprint)
            try:
                report = fresh.runtime.restore(blob, partial=True)
            except BaseException:
                fresh.runtime.shutdown()
                raise
            if fresh.journal is not None:
                with fresh.journal.lock:
                    fresh.journal.runtime = fresh.runtime
            self._deployed = {**self._deployed, name: fresh}
            self._ingress.set_routes(self._routes(self._deployed))
        current.runtime.shutdown()
        self._wake.set()
        return report

    # ---- introspection ----------------------------------------------------------------------

    def status(self) -> dict[str, PlanStatus]:
        """Every plan's status; a Spark plan's as it is now (its queries may have failed since)."""
        status = dict(self._status)
        if self.spark is not None:
            for name, sp in self._spark_plans.items():
                state, message, _ = self.spark.status(sp)
                status[name] = PlanStatus(name, state, message)
        return status

    def spark_status(self) -> dict[str, dict[str, Any]]:
        """Per Spark plan driven here: its state and its deployment's status (application,
        inflow, outflow, queries with their last progress)."""
        if self.spark is None:
            return {}
        return {name: self.spark.status(sp)[2] for name, sp in sorted(self._spark_plans.items())}

    def emitted(self) -> dict[tuple[str, str], int]:
        """Events emitted so far per (plan, exported stream id), redeploys included."""
        return {key: cell[0] for key, cell in list(self._emitted.items())}

    def restoring(self) -> dict[str, str]:
        """The plans being restored or replayed now, and which of the two."""
        return dict(self._restoring)

    def runtime(self, name: str) -> Runtime | None:
        d = self._deployed.get(name)
        return None if d is None else d.runtime

    def deployed(self) -> list[str]:
        return sorted(self._deployed)

    def deployment(self, name: str) -> tuple[ExecutionPlan, Runtime] | None:
        d = self._deployed.get(name)
        return None if d is None else (d.plan, d.runtime)

    def exports_of(self, name: str) -> tuple[str, ...]:
        """The registered streams plan `name` exports (none when it is not deployed here)."""
        deployed = self._deployed.get(name)
        return () if deployed is None else tuple(b.stream_id for b in deployed.exports)

    def deployments(self) -> list[tuple[ExecutionPlan, Runtime]]:
        return [(d.plan, d.runtime) for d in self._deployed.values()]

    def journal(self, name: str) -> PlanJournal | None:
        d = self._deployed.get(name)
        return None if d is None else d.journal

    # ---- the clock ---------------------------------------------------------------------------

    def start_clock(self) -> None:
        self._clock_thread = threading.Thread(target=self._run_clock, name="plan-clock", daemon=True)
        self._clock_thread.start()

    def _run_clock(self) -> None:
        while not self._stop.is_set():
            due: list[int] = []
            for d in list(self._deployed.values()):
                try:
                    nxt = d.runtime.tick() if d.journal is None else d.journal.tick()
                except engine.CEPError:
                    if self._deployed.get(d.plan.name) is d:
                        log.exception("plan %s failed while firing its timers", d.plan.name)
                    continue  # else: redeployed or undeployed meanwhile, its new runtime ticks next
                except Exception:
                    allowed, held = self._timer_errors.allow()
                    if allowed:  # a full input log fails every tick: say so every 10 s, not 50 times a second
                        log.exception(
                            "plan %s failed while firing its timers%s",
                            d.plan.name,
                            f" ({held} similar failures not shown)" if held else "",
                        )
                    continue
                if nxt is not None:
                    due.append(nxt)
            wait = TICK_SECONDS
            if due:
                wait = min(wait, max(0.0, (min(due) - wall_ms()) / 1000))
            self._wake.wait(wait)
            self._wake.clear()

    def quiesce(self) -> None:
        """Stop the clock and every route into the plans: from now on no event and no timer
        changes their state (what a final snapshot needs). Idempotent."""
        self._stop.set()
        self._wake.set()
        if self._clock_thread is not None:
            self._clock_thread.join(5)
        self._ingress.set_routes({})

    def stop(self) -> None:
        """Stop the clock and shut every plan down (their outputs are already in the adapters)."""
        self.quiesce()
        with self._lock:
            deployed, self._deployed = self._deployed, {}
            self._spark_plans = {}
            self._ingress.set_routes({})
        for d in deployed.values():
            d.runtime.shutdown()
        if self.spark is not None:
            self.spark.stop()  # its queries, then the session; the adapters are stopped after


class _BindingError(Exception):
    pass


def _compile_on_wall_clock(text: str, wall_time: Callable[[], int] | None) -> Runtime:
    return engine.compile(text, clock="wall", wall_time=wall_time)


def _bindings(plan: ExecutionPlan) -> list[StreamBinding]:
    try:
        return stream_bindings(engine.parse(plan.text))
    except engine.QueryError:
        return []


def _cycles(deployed: dict[str, Deployed], spark: Mapping[str, SparkPlan]) -> set[str]:
    """Plans on a cycle of plan → exported stream → importing plan (other than itself)."""
    bound = {name: d.bindings for name, d in deployed.items()} | {n: sp.bindings for n, sp in spark.items()}
    importers: dict[str, set[str]] = {}
    for name, bindings in bound.items():
        for b in bindings:
            if b.direction == "import":
                importers.setdefault(b.stream_id, set()).add(name)
    edges = {
        name: {
            p
            for b in bindings
            if b.direction == "export"
            for p in importers.get(b.stream_id, ())
            if p != name
        }
        for name, bindings in bound.items()
    }
    on_cycle: set[str] = set()
    for start in edges:
        stack, seen = list(edges[start]), set()
        while stack:
            node = stack.pop()
            if node == start:
                on_cycle.add(start)
                break
            if node not in seen:
                seen.add(node)
                stack.extend(edges.get(node, ()))
    return on_cycle

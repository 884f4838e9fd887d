"""Plans with `distributed_mode = "spark"` driven from this node (`[spark] enabled = true`).

Each plan text gets a directory `<spark dir>/<plan>/<text id>/` (the text id: the start of the
plan's fingerprint, its text and the definitions of its streams): `in/`, the hand-off the
node's receivers append the plan's input to before they acknowledge it, and `checkpoints/`,
where Spark keeps the queries' source offsets and state. A lock file there (`flock`) lets one
process at a time drive a checkpoint directory; a random id kept there makes the plan's output
origins its own, so two drivers (two nodes, each with its own directory) never skip each other's
rows in a shared sink.

The Spark session is made once per node, on first need, in a background thread: the node
serves at once, and the plan is "starting" until its queries run ("spark"). Its exports go
through the node's formatters and adapters as a local plan's do, each record with an origin
(query, micro-batch, index), and a micro-batch commits only once its adapters wrote it: an
RDBMS adapter skips what a micro-batch replayed after a restart had already written.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from app.config import Spark as SparkSettings
from app.node.errors import SparkPlanError
from app.node.ingress import Ingress, Row
from app.node.journal import Provenance
from app.node.outputs import OutputHub
from app.persistence.errors import InputLogError
from app.registry import ExecutionPlan
from app.registry.plans import StreamBinding
from app.spark.handoff import HandOff
from engine import Runtime
from engine.events import Event

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from app.spark.streaming import SparkDeployment

log = logging.getLogger(__name__)

HANDOFF = "in"
CHECKPOINTS = "checkpoints"
LOCK_FILE = "cepheus-driver.lock"
ID_FILE = "cepheus-id"
WAIT_SECONDS = 1.0  # a micro-batch waiting for its adapters checks this often whether the plan stops
START_WAIT_SECONDS = 120.0  # how long a new text waits for the old one's queries (same names) to stop


class DriverLock:
    """An exclusive `flock` on a checkpoint directory's lock file, held while this process
    drives the queries that use it; the file says who holds it."""

    def __init__(self, directory: Path, node_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / LOCK_FILE
        self._file: IO[str] | None = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.seek(0)
            holder = self._file.read().strip() or "another process"
            self._file.close()
            self._file = None
            msg = (
                f"checkpoint directory {directory} is in use by {holder}: only one node may drive a plan "
                "on one checkpoint directory; give each node its own [spark] dir, or enable [spark] "
                "on one node only"
            )
            raise SparkPlanError(msg) from None
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"node {node_id} (pid {os.getpid()})\n")
        self._file.flush()

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def driver_id(directory: Path) -> str:
    """The checkpoint directory's own id, made at its first use."""
    path = directory / ID_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        made = secrets.token_hex(6)
        tmp = directory / f".{ID_FILE}.tmp"
        tmp.write_text(made + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return made


class HandOffFailed(InputLogError):
    """The hand-off could not keep a bundle (a disk error): the receiver refuses it, as a full
    input log's, and the client sends it again."""


class HandOffInput:
    """A Spark plan's input on the node's routes: each row checked against the plan's stream
    (a bad event is refused here, not in Spark, where it would fail the query at every
    restart), then appended to the hand-off, on disk before the receiver acknowledges."""

    def __init__(self, handoff: HandOff, runtime: Runtime) -> None:
        self.handoff = handoff
        self._runtime = runtime

    def send(self, stream: str, rows: list[Row], timestamps: list[int] | int) -> None:
        stamps = [timestamps] * len(rows) if isinstance(timestamps, int) else timestamps
        check = self._runtime.check_row
        events = [(stream, t, check(stream, row)) for row, t in zip(rows, stamps, strict=True)]
        try:
            self.handoff.append(events)
        except OSError as exc:
            msg = f"cannot write to the hand-off {self.handoff.directory}: {exc.strerror or exc}"
            raise HandOffFailed(msg) from None


class HubSink:
    """One exported stream of a Spark plan, as a local plan's export: the node's formatters and
    adapters of the registered stream, then the plans importing it. A micro-batch returns once
    the adapters wrote it (waiting through an outage of their target), unless the plan stops."""

    def __init__(
        self,
        outputs: OutputHub,
        ingress: Ingress,
        plan: str,
        source: str,
        stream_id: str,
        emitted: list[int],
    ) -> None:
        self._outputs = outputs
        self._ingress = ingress
        self._plan = plan
        self._source = source  # the plan as its origins name it: `plan~driver id`
        self.stream_id = stream_id
        self._emitted = emitted
        self.stopping = threading.Event()

    def deliver(self, events: list[Event], log_id: str, batch_id: int) -> None:
        self._emitted[0] += len(events)
        self._outputs.emit(self.stream_id, events, (self._source, Provenance(log_id, batch_id, 0)))
        while not self._outputs.flush_stream(self.stream_id, WAIT_SECONDS):
            if self.stopping.is_set():
                msg = (
                    f"plan {self._plan}: stopped before the adapters of {self.stream_id} wrote micro-batch "
                    f"{batch_id}; it runs again at the next start"
                )
                raise SparkPlanError(msg)
        if self._ingress.routes().get(self.stream_id):
            rows: list[Row] = [tuple(e.data) for e in events]
            try:
                self._ingress.forward(self.stream_id, rows, [e.timestamp for e in events], source=self._plan)
            except Exception:  # another plan refused them: not this plan's failure
                log.exception(
                    "plan %s: its %s could not reach the plans importing it", self._plan, self.stream_id
                )


@dataclass
class SparkPlan:
    """One plan text driven on Spark from this node."""

    plan: ExecutionPlan
    bindings: list[StreamBinding]
    fingerprint: str
    directory: Path
    runtime: Runtime  # compiled here for the checks of bindings and input rows; never run
    input: HandOffInput
    lock: DriverLock
    sinks: dict[str, HubSink]
    state: str = "starting"  # "starting", "spark" (running), "failed", "stopped"
    message: str = ""
    deployment: SparkDeployment | None = None
    after: SparkPlan | None = None  # the text it replaces: its queries (same names) stop first
    stopping: threading.Event = field(default_factory=threading.Event)
    stopped: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    guard: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def imports(self) -> list[StreamBinding]:
        return [b for b in self.bindings if b.direction == "import"]

    @property
    def exports(self) -> list[StreamBinding]:
        return [b for b in self.bindings if b.direction == "export"]

    @property
    def checkpoints(self) -> Path:
        return self.directory / CHECKPOINTS


def plan_directory(spark_dir: Path, plan: str) -> Path:
    """Where a plan's texts keep their hand-off and checkpoints: `<spark dir>/<plan>`."""
    return spark_dir / re.sub(r"[^A-Za-z0-9_.-]", "_", plan)


class SparkDriver:
    """The node's Spark session and the Spark plans it drives."""

    def __init__(
        self,
        settings: SparkSettings,
        directory: Path,
        node_id: str,
        outputs: OutputHub,
        ingress: Ingress,
        session: Callable[[str], SparkSession] | None = None,
    ) -> None:
        self.settings = settings
        self.directory = directory
        self.node_id = node_id
        self._outputs = outputs
        self._ingress = ingress
        self._make_session = session or _spark_session
        self._session: SparkSession | None = None
        self._session_lock = threading.Lock()
        self._plans: list[SparkPlan] = []  # started and not yet stopped, for `stop`
        self._closed = False

    # ---- the session -----------------------------------------------------------------------

    def session(self) -> SparkSession:
        """The node's Spark session, made on first call (the JVM starts: seconds)."""
        with self._session_lock:
            if self._closed:
                msg = "the node is stopping"
                raise SparkPlanError(msg)
            if self._session is None:
                log.info("starting the Spark session on %s", self.settings.master)
                self._session = self._make_session(self.settings.master)
            return self._session

    # ---- plans -------------------------------------------------------------------------------

    def deploy(
        self,
        plan: ExecutionPlan,
        bindings: list[StreamBinding],
        fingerprint: str,
        runtime: Runtime,
        emitted: Callable[[str], list[int]],
        after: SparkPlan | None = None,
    ) -> SparkPlan:
        """Take the plan's directory (`SparkPlanError` when another driver has it) and start
        its queries in the background; `after`: the text it replaces, stopped by the caller."""
        directory = plan_directory(self.directory, plan.name) / fingerprint[:12]
        lock = DriverLock(directory / CHECKPOINTS, self.node_id)
        try:
            handoff = HandOff(str(directory / HANDOFF))
            source = f"{plan.name}~{driver_id(directory / CHECKPOINTS)}"
        except OSError as exc:
            lock.release()
            msg = f"plan {plan.name}: cannot use {directory} ({exc.strerror or exc}); check [spark] dir"
            raise SparkPlanError(msg) from None
        sinks = {
            b.stream: HubSink(
                self._outputs, self._ingress, plan.name, source, b.stream_id, emitted(b.stream_id)
            )
            for b in bindings
            if b.direction == "export"
        }
        sp = SparkPlan(
            plan,
            bindings,
            fingerprint,
            directory,
            runtime,
            HandOffInput(handoff, runtime),
            lock,
            sinks,
            message=f"starting its queries on Spark ({self.settings.master})",
            after=after,
        )
        sp.thread = threading.Thread(
            target=self._start, args=(sp,), name=f"spark-start-{plan.name}", daemon=True
        )
        self._plans.append(sp)
        sp.thread.start()
        return sp

    def _start(self, sp: SparkPlan) -> None:
        from app.spark.streaming import SparkDeployment

        try:
            if sp.after is not None:
                sp.after.stopped.wait(self.settings.drain_seconds + START_WAIT_SECONDS)
            session = self.session()
            s = self.settings
            deployment = SparkDeployment(
                session,
                sp.plan.text,
                str(sp.directory / HANDOFF),
                str(sp.checkpoints),
                dict(sp.sinks),
                trigger_seconds=s.trigger_seconds,
                state_partitions=s.state_partitions or None,
                watermark_delay_ms=s.watermark_delay_ms,
            )
            with sp.guard:
                if sp.stopping.is_set():
                    return
                sp.deployment = deployment
                deployment.start()
            sp.state, sp.message = "spark", ""
            log.info(
                "plan %s running on Spark %s (%d queries; hand-off %s)",
                sp.name,
                s.master,
                len(deployment.queries),
                sp.directory / HANDOFF,
            )
        except Exception as exc:  # no pyspark or Java, a plan Spark cannot run, the node stopping
            sp.state, sp.message = "failed", _first_line(exc)
            if not sp.stopping.is_set():
                log.error("plan %s cannot run on Spark: %s", sp.name, sp.message)

    def retire(self, sp: SparkPlan, drain: bool = False) -> None:
        """Stop a plan: with `drain`, its queries first process what its hand-off holds (up to
        `drain_seconds`); then the queries stop, then its sinks give up waiting."""
        deployment = sp.deployment
        if drain and deployment is not None and sp.state == "spark":
            done = threading.Thread(target=_process_available, args=(deployment,), daemon=True)
            done.start()
            done.join(self.settings.drain_seconds)
            if done.is_alive():
                log.warning(
                    "plan %s: its old text did not process its whole hand-off within %.0f s "
                    "([spark] drain_seconds); the rest stays in %s",
                    sp.name,
                    self.settings.drain_seconds,
                    sp.directory / HANDOFF,
                )
        with sp.guard:  # a start under way finishes first; one not there yet starts nothing
            sp.stopping.set()
        for sink in sp.sinks.values():
            sink.stopping.set()
        deployment = sp.deployment
        if deployment is not None:
            try:
                deployment.stop()
            except Exception as exc:
                log.warning("plan %s: stopping its Spark queries: %s", sp.name, _first_line(exc))
        sp.lock.release()
        sp.runtime.shutdown()
        if sp.state != "failed":
            sp.state, sp.message = "stopped", ""
        sp.stopped.set()
        if sp in self._plans:
            self._plans.remove(sp)
        log.info("plan %s stopped on Spark", sp.name)

    def status(self, sp: SparkPlan) -> tuple[str, str, dict[str, Any]]:
        """The plan's state and message, and its deployment's status (`SparkDeployment.status`)."""
        base: dict[str, Any] = {
            "plan": sp.name,
            "node": self.node_id,
            "master": self.settings.master,
            "directory": str(sp.directory),
            "inflow": str(sp.directory / HANDOFF),
            "outflow": sorted(sp.sinks),
            "queries": [],
        }
        state, message = sp.state, sp.message
        deployment = sp.deployment
        if deployment is not None and state == "spark":
            try:
                base.update(deployment.status())
            except Exception as exc:  # the session is going away
                return "failed", _first_line(exc), base | {"state": "failed", "message": _first_line(exc)}
            queries = base["queries"]
            down = [q for q in queries if not q["active"]]
            if down:
                q = down[0]
                state = "failed"
                message = f"query {q['name']} {'failed: ' + q['error'] if q.get('error') else 'stopped'}"
            else:
                message = f"on Spark {self.settings.master}: {len(queries)} queries active"
        return state, message, base | {"state": state, "message": message}

    def stop(self) -> None:
        """Stop every plan still running, then the session."""
        for sp in list(self._plans):
            self.retire(sp)
        with self._session_lock:
            self._closed = True
            session, self._session = self._session, None
        if session is not None:
            try:
                session.stop()
            except Exception as exc:
                log.warning("stopping the Spark session: %s", _first_line(exc))
            log.info("Spark session stopped")

    def plans(self) -> Mapping[str, SparkPlan]:
        return {sp.name: sp for sp in self._plans}


def _process_available(deployment: SparkDeployment) -> None:
    try:
        deployment.process_available()
    except Exception as exc:  # the query failed or was stopped meanwhile
        log.debug("processing what the hand-off held ended: %s", exc)


def _spark_session(master: str) -> SparkSession:
    from app.spark.session import spark_session

    return spark_session(master, "cepheus")


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__

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

With `[spark] shared = true` the nodes share `[spark] dir` (one file system, mounted at the same
path): each node's receivers append to `in/<node>/`, and the one node that holds the plan's
registry lease (`ha.spark_leadership`) runs the queries over every node's files. It starts
its Spark session and the queries only once it holds the lease, takes the directory's `flock`
as a second guard, and stops the queries when it cannot renew; the others say who drives.
The directory's id, and so the output origins, are the plan's, whichever node drives: a new
driver replaying a micro-batch the old one had written skips what the sink already has.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from adapters.output.base import Fence, Origin
from app.config import Spark as SparkSettings
from app.persistence.errors import InputLogError
from app.registry import ExecutionPlan
from app.registry.plans import BindsStreams, StreamBinding
from app.spark.errors import SparkPlanError
from app.spark.handoff import HandOff
from engine import Runtime
from engine.events import Event
from ha.lease import Timing
from ha.ports import LeaseStore
from ha.spark_leadership import Leadership, lease_key

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
LOCK_RETRY_SECONDS = 0.5  # a new driver waits this long between tries for the old one's flock
DRIVING_CHECK_SECONDS = 0.1  # a driver checks this often that it still holds the lease


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
                "on one checkpoint directory; give each node its own [spark] dir, enable [spark] "
                "on one node only, or set [spark] shared = true on every node sharing it"
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
    """The checkpoint directory's own id, made at its first use (nodes sharing the directory
    may race to make it: `link` keeps the first, and every node reads that one)."""
    path = directory / ID_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        made = secrets.token_hex(6)
        tmp = directory / f".{ID_FILE}.{made}.tmp"
        tmp.write_text(made + "\n", encoding="utf-8")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return path.read_text(encoding="utf-8").strip()


def writer_directory(node_id: str) -> str:
    """A node's sub-directory of a shared hand-off: its id, in characters safe for a path
    (Spark's file source skips names that start with `.` or `_`)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", node_id)
    return name if name[:1] not in ("", ".", "_") else f"node{name}"


Row = tuple[Any, ...]


class Outputs(Protocol):
    """What a Spark plan needs of the node's output hub (`app.node.outputs.OutputHub`)."""

    def emit(
        self, stream_id: str, events: list[Event], origin: Origin | None = None, fence: Fence | None = None
    ) -> None: ...

    def flush_stream(self, stream_id: str, timeout: float) -> bool: ...


class Routes(Protocol):
    """What a Spark plan needs of the node's ingress (`app.node.ingress.Ingress`): the plans
    importing the streams it exports."""

    def routes(self) -> Mapping[str, tuple[object, ...]]: ...

    def forward(self, stream_id: str, rows: list[Row], timestamps: list[int], source: str) -> None: ...


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
        outputs: Outputs,
        ingress: Routes,
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
        self._outputs.emit(self.stream_id, events, Origin(self._source, log_id, batch_id, 0))
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
class SparkPlan(BindsStreams):
    """One plan text driven on Spark from this node."""

    plan: ExecutionPlan
    bindings: list[StreamBinding]
    fingerprint: str
    directory: Path
    runtime: Runtime  # compiled here for the checks of bindings and input rows; never run
    input: HandOffInput
    lock: DriverLock | None  # shared: taken while this node drives the plan
    sinks: dict[str, HubSink]
    state: str = "starting"  # "starting", "spark" (running), "failed", "stopped"
    message: str = ""
    deployment: SparkDeployment | None = None
    after: SparkPlan | None = None  # the text it replaces: its queries (same names) stop first
    stopping: threading.Event = field(default_factory=threading.Event)
    stopped: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    guard: threading.Lock = field(default_factory=threading.Lock)
    lead: Leadership | None = None  # shared: the plan's election, as this node sees it
    halt: threading.Event | None = None  # shared: ends the current stint of driving
    stint: threading.Thread | None = None  # shared: the stint that starts, watches and stops the queries

    @property
    def name(self) -> str:
        return self.plan.name

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
        outputs: Outputs,
        ingress: Routes,
        session: Callable[[str], SparkSession] | None = None,
        leases: LeaseStore | None = None,
        timing: Timing | None = None,
    ) -> None:
        """`leases` (with `[spark] shared`): the registry's lease store, which elects the driver."""
        if settings.shared and leases is None:
            msg = "[spark] shared = true needs the registry's lease store"
            raise SparkPlanError(msg)
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
        self._leases = leases if settings.shared else None
        self.timing = timing or Timing()
        self._leads: dict[str, Leadership] = {}  # per plan name, across its texts
        self._elector: threading.Thread | None = None
        self._ending = threading.Event()
        self.deployment_class: type[SparkDeployment] | None = None  # the streaming module's (a test's)

    @property
    def shared(self) -> bool:
        return self._leases is not None

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
        lock = None if self.shared else DriverLock(directory / CHECKPOINTS, self.node_id)
        try:
            if self.shared:
                (directory / CHECKPOINTS).mkdir(parents=True, exist_ok=True)
                writer = directory / HANDOFF / writer_directory(self.node_id)
                handoff = HandOff(str(writer), writer=self.node_id)
            else:
                handoff = HandOff(str(directory / HANDOFF))
            source = f"{plan.name}~{driver_id(directory / CHECKPOINTS)}"
        except OSError as exc:
            if lock is not None:
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
        self._plans.append(sp)
        if self.shared:
            lead = self._leads.get(plan.name)
            if lead is None:
                lead = self._leads[plan.name] = Leadership(self.node_id, self.timing)
            lead.rejoin()
            sp.lead = lead
            sp.message = lead.describe(handoff.directory)
            if lead.driving:
                self._drive(sp)
            self._elect_in_background()
            return sp
        sp.thread = threading.Thread(
            target=self._start, args=(sp, sp.stopping.is_set), name=f"spark-start-{plan.name}", daemon=True
        )
        sp.thread.start()
        return sp

    # ---- the driver's election (shared) -------------------------------------------------

    def _elect_in_background(self) -> None:
        if self._elector is None:
            self._elector = threading.Thread(target=self._elect, name="spark-lease", daemon=True)
            self._elector.start()

    def _elect(self) -> None:
        """Ask for (or renew) each plan's lease every `renew_ms`; start or stop driving as it says."""
        assert self._leases is not None
        tick = self.timing.renew_ms / 4000
        while not self._ending.wait(tick):
            try:
                self._elect_once()
            except Exception:  # a bug here must not end the renewals: the driver would stop
                log.exception("electing the Spark drivers")

    def _elect_once(self) -> None:
        assert self._leases is not None
        for name, lead in list(self._leads.items()):
            now = time.monotonic()
            if lead.due(now):
                try:
                    lease = self._leases.acquire(lease_key(name), self.node_id, self.timing.ttl_ms)
                    error = None
                except Exception as exc:  # the registry unreachable: the deadline decides
                    lease, error = None, _first_line(exc)
                    log.debug("plan %s: the Spark driver's lease request failed: %s", name, error)
                step = lead.answered(now, lease, time.monotonic(), error)
            else:
                step = lead.check(now)
            texts = [sp for sp in self._plans if sp.name == name and not sp.stopping.is_set()]
            if step == "start" and texts:
                log.info("plan %s: this node drives it on Spark (lease %s)", name, lease_key(name))
                self._drive(texts[-1])
            elif step == "stop":
                log.warning(
                    "plan %s: this node no longer holds the lease to drive it (%s); stopping its queries",
                    name,
                    lead.error or f"now held by {lead.driver}",
                )
                for sp in texts:
                    if sp.halt is not None:
                        sp.halt.set()

    def _drive(self, sp: SparkPlan) -> None:
        """Start a stint of driving `sp` (after the previous stint, if any, has stopped)."""
        previous = sp.stint
        halt = sp.halt = threading.Event()
        sp.stint = threading.Thread(
            target=self._stint, args=(sp, halt, previous), name=f"spark-drive-{sp.name}", daemon=True
        )
        sp.stint.start()

    def _stint(self, sp: SparkPlan, halt: threading.Event, previous: threading.Thread | None) -> None:
        """Take the checkpoint directory's flock (the old driver may still be stopping), start
        the queries, and stop them as soon as the lease no longer holds."""
        lead = sp.lead
        assert lead is not None
        if previous is not None:
            previous.join()

        def holding() -> bool:
            return not halt.is_set() and not sp.stopping.is_set() and lead.holds(time.monotonic())

        try:
            while sp.lock is None:
                if not holding():
                    return
                try:
                    sp.lock = DriverLock(sp.checkpoints, self.node_id)
                except SparkPlanError:
                    sp.state, sp.message = (
                        "starting",
                        (
                            "holds the lease; waiting for the previous driver to let the checkpoint directory "
                            f"go ({_holder(sp.checkpoints)})"
                        ),
                    )
                    halt.wait(LOCK_RETRY_SECONDS)
            for sink in sp.sinks.values():
                sink.stopping.clear()
            sp.state, sp.message = "starting", f"starting its queries on Spark ({self.settings.master})"
            self._start(sp, lambda: not holding())
            if sp.state == "failed" and not holding():  # the lease went while Spark started
                sp.state = "starting"
            elif sp.state == "failed":
                lead.resign()
                self._release_lease(sp.name)
                sp.message += "; this node no longer asks to drive the plan: another node with Spark does"
                return
            while holding():
                halt.wait(DRIVING_CHECK_SECONDS)
        finally:
            self._stop_queries(sp)
            if sp.lock is not None:
                sp.lock.release()
                sp.lock = None
            if sp.state != "failed" and not sp.stopping.is_set():
                sp.state, sp.message = "starting", lead.describe(sp.input.handoff.directory)

    def _release_lease(self, name: str) -> None:
        """Give the plan's lease up at once (its queries have stopped): another node takes over
        without waiting for it to expire."""
        assert self._leases is not None
        try:
            self._leases.release(lease_key(name), self.node_id)
        except Exception as exc:  # then it runs out on its own
            log.warning("plan %s: could not release the Spark driver's lease: %s", name, _first_line(exc))

    def _stop_queries(self, sp: SparkPlan) -> None:
        for sink in sp.sinks.values():
            sink.stopping.set()
        with sp.guard:  # a start under way finishes first
            deployment, sp.deployment = sp.deployment, None
        if deployment is not None:
            try:
                deployment.stop()
            except Exception as exc:
                log.warning("plan %s: stopping its Spark queries: %s", sp.name, _first_line(exc))
            log.info("plan %s: its Spark queries stopped", sp.name)

    # ---- running ------------------------------------------------------------------------

    def _start(self, sp: SparkPlan, cancelled: Callable[[], bool]) -> None:
        try:
            from app.spark.streaming import SparkDeployment

            make = self.deployment_class or SparkDeployment
            if sp.after is not None:
                sp.after.stopped.wait(self.settings.drain_seconds + START_WAIT_SECONDS)
            session = self.session()
            s = self.settings
            deployment = make(
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
                if cancelled():
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
            if not cancelled():
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
        if sp.lead is not None:
            self._end_stint(sp)
        else:
            self._stop_queries(sp)
            if sp.lock is not None:
                sp.lock.release()
        sp.runtime.shutdown()
        if sp.state != "failed":
            sp.state, sp.message = "stopped", ""
        sp.stopped.set()
        if sp in self._plans:
            self._plans.remove(sp)
        log.info("plan %s stopped on Spark", sp.name)

    def _end_stint(self, sp: SparkPlan) -> None:
        """A shared plan's text stops here: its stint stops its queries and lets the flock go;
        the lease is given up unless another text of the plan still runs here."""
        lead = sp.lead
        assert lead is not None
        if sp.halt is not None:
            sp.halt.set()
        if sp.stint is not None:
            sp.stint.join(START_WAIT_SECONDS)
        if any(p.name == sp.name and p is not sp for p in self._plans):
            return
        driving = lead.driving or lead.driver == self.node_id
        lead.resign()
        if self._leads.get(sp.name) is lead:
            del self._leads[sp.name]
        if driving:
            self._release_lease(sp.name)

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
        lead = sp.lead
        if lead is not None:
            base["driver"] = lead.driver
            if sp.deployment is None and state != "failed" and not lead.driving:
                message = lead.describe(sp.input.handoff.directory)
                state = "spark" if lead.driver not in (None, self.node_id) and not lead.error else "starting"
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
        """Stop every plan still running (a shared plan's lease given up, for another node to
        take over at once), then the session."""
        self._ending.set()
        if self._elector is not None:
            self._elector.join(10)
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


def _holder(directory: Path) -> str:
    try:
        return (directory / LOCK_FILE).read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__

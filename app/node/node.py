"""`Node`: one Cepheus server — registry, plans, receivers, output adapters — started and stopped as a unit.

Start order: registry (migrate, or refuse a newer schema; first-start admin), stream
catalog, output adapters, plans and their clock, receivers, the registry watcher. Stop order
is the reverse, so that nothing acknowledged is lost: receivers close first (a Thrift bundle
or HTTP request in progress finishes, and its events are in the plans and then in the
adapters' buffers by the time it is acknowledged), then the plans stop, then every adapter
delivers its buffer (up to `adapters.stop_timeout_seconds`).

The HTTP port also serves the operations endpoints (`app.console.ops`: `/metrics`, `/livez`,
`/readyz`) from `ops_numbers` and `readiness`. The registry counts as reachable while the
watcher's last poll read it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

from adapters.http.receiver import Streams, events_blueprint, publish_json
from adapters.output.base import Fence, Origin
from adapters.thrift import DataBridgeServer, ServerSettings
from adapters.throttle import Throttle
from app.auth import Credentials, login_throttle
from app.cluster import Cluster, ClusterSettings
from app.cluster.errors import StateDoesNotFit
from app.cluster.tls import cluster_keys
from app.config import Config
from app.console.ops import Numbers, Readiness, ops_blueprint
from app.console.principal import refusal
from app.console.services import ConsoleServices
from app.http.basic_auth import login_refusal
from app.http.limits import Limits
from app.http.screen import address_lockout
from app.http.server import WebServer
from app.node import heap
from app.node.catalog import StreamCatalog
from app.node.errors import NodeError
from app.node.ingress import Ingress
from app.node.links import PlanLinks
from app.node.on_demand import OnDemandQueries
from app.node.outputs import OutputHub
from app.node.plans import PlanManager
from app.node.receiver import RegistryHandler
from app.node.snapshot_requests import SnapshotRequests, snapshots_blueprint
from app.persistence.input_log import InputLog
from app.persistence.journal import Journals
from app.persistence.snapshot_keeper import SnapshotKeeper
from app.private_files import private_dir
from app.registry import Change, Receiver, Registry
from app.registry.leases import RegistryLeases
from app.registry.members import RegistryMembers
from app.registry.snapshots import RegistrySnapshots
from app.spark.driver import SparkDriver
from app.webapp import create_app
from engine.events import Event
from ha.lease import Timing
from ha.membership import Timeouts

log = logging.getLogger("cepheus.node")


def wanted_listeners(receivers: Sequence[Receiver], cfg: Config) -> dict[str, bool]:
    """Which receivers run: the registry's receiver entries decide; without any of a type, the config."""
    out = {}
    for kind, default in (("thrift", cfg.thrift.enabled), ("http", cfg.http.enabled)):
        entries = [r for r in receivers if r.type == kind]
        out[kind] = any(r.enabled for r in entries) if entries else default
    return out


def http_limits(cfg: Config) -> Limits:
    http = cfg.http
    return Limits(
        threads=http.threads,
        max_connections=http.max_connections,
        max_connections_per_address=http.max_connections_per_address,
        header_timeout=http.header_timeout_seconds,
        body_timeout=http.body_timeout_seconds,
        idle_timeout=http.idle_timeout_seconds,
        max_header_bytes=http.max_header_bytes,
        max_body_bytes=http.max_request_bytes,
        max_inflight_bytes=http.max_inflight_bytes,
    )


class Node:
    def __init__(
        self, config: Config, admin_password: str | None = None, discard_state: bool = False
    ) -> None:
        self.config = config
        self._admin_password = admin_password
        self.registry = Registry(config.registry.url)
        self.catalog = StreamCatalog(self.registry)
        self.outputs = OutputHub(config.adapters, stop_timeout=config.adapters.stop_timeout_seconds)
        # a bundle waits for room in the adapters its plans feed, then is refused (backpressure)
        self.ingress = Ingress(room=self._room, full_wait=config.adapters.full_wait_ms / 1000)
        self.links = PlanLinks(self.ingress)  # redundant plans' exports to the plans importing them
        self.journals: Journals | None = None
        persistence = config.persistence
        self.cluster = self._cluster(config) if config.cluster.wka else None
        if persistence.input_log or self.cluster is not None:
            self.journals = Journals(
                lambda: InputLog(
                    os.path.join(config.data_dir, "input-log"),
                    persistence.fsync,
                    interval_ms=persistence.fsync_interval_ms,
                    max_bytes=persistence.max_log_bytes,
                )
            )
        self.snapshots = SnapshotKeeper(
            RegistrySnapshots(self.registry),
            config.node_id,
            config.persistence.keep_snapshots,
            deployed=lambda: self.plans.deployments(),
            discard_state=discard_state,
            journals=self.journals,
            max_bytes=persistence.max_snapshot_bytes,
        )
        self.plans = PlanManager(
            self.catalog,
            self.ingress,
            self.outputs,
            restore=self.snapshots.restore,
            retire=self.snapshots.farewell,
            journals=self.journals,
            checkpoint=self.snapshots.checkpoint,
            cluster=self.cluster,
            spark=self._spark(config),
        )
        self.credentials = Credentials(self.registry.verify_user, throttle=login_throttle(config.login))
        self.thrift: DataBridgeServer | None = None
        self.web: WebServer | None = None
        self._http_open = False
        self._reconcile_lock = threading.Lock()
        self._seen_revision = 0
        self._stopping = threading.Event()
        self._stop_requested = threading.Event()  # the console asked for a graceful stop
        self.restart_requested = False
        self._watcher: threading.Thread | None = None
        self._watch_errors = Throttle(30.0)
        self._registry_reachable = True  # the watcher's last poll read the registry
        self._started = False
        self._serving = False  # started completely: only then is a final snapshot worth taking

    def _cluster(self, config: Config) -> Cluster:
        c, ha = config.cluster, config.ha
        settings = ClusterSettings(
            me=config.node_id,
            advertise=config.cluster_address,
            host=c.host,
            port=config.cluster_port,
            wka=tuple(c.wka),
            keys=cluster_keys(c.secret.encode(), c.cert_file, c.key_file, c.ca_file),
            timeouts=Timeouts(c.heartbeat_ms, c.suspect_ms, c.dead_ms),
            timing=Timing(ha.lease_ms, ha.renew_ms, ha.margin_ms),
            failback_s=ha.failback_ms / 1000,
        )
        return Cluster(
            settings,
            RegistryLeases(self.registry),
            RegistryMembers(self.registry),
            emit=self._emit_released,
            install=self._install_notifiers_state,
            flush=self._flush_plan,
            admit=self.ingress.admit_plan,
            fenced=self._fenced_plan,
        )

    def _flush_plan(self, plan: str | None, timeout: float) -> bool:
        """Whether the adapters and links `plan`'s exports feed (None: every plan's) wrote what
        they were given within `timeout` s."""
        deadline = time.monotonic() + timeout
        if plan is None:
            return self.outputs.flush(timeout) and self.links.flush(max(0.0, deadline - time.monotonic()))
        streams = self.plans.exports_of(plan)
        adapters = self.outputs.adapters_of(streams)
        return all(a.flush(max(0.0, deadline - time.monotonic())) for a in adapters) and self.links.flush(
            max(0.0, deadline - time.monotonic()), streams
        )

    def _fenced_plan(self, plan: str) -> int:
        """Records of the adapters and links `plan`'s exports feed that may not reach their
        target: refused by a fence, or dropped from a full buffer, or abandoned."""
        streams = self.plans.exports_of(plan)
        stats = [a.stats for a in self.outputs.adapters_of(streams)] + list(
            self.links.stats(streams).values()
        )
        return sum(s.fenced + s.overflow + s.abandoned for s in stats)

    def _emit_released(
        self, stream_id: str, events: list[Event], origin: Origin | None = None, fence: Fence | None = None
    ) -> None:
        """A redundant plan's outputs its gate released: to the adapters and the importing plans."""
        self.outputs.emit(stream_id, events, origin, fence)
        self.links.emit(stream_id, events, origin, fence)

    def _room(self, streams: frozenset[str], timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        full = self.outputs.room(streams, timeout)
        return full if full is not None else self.links.room(streams, max(0.0, deadline - time.monotonic()))

    def _spark(self, config: Config) -> SparkDriver | None:
        """The driver of this node's Spark plans, when `[spark] enabled`; the session starts
        with the first such plan, in the background."""
        if not config.spark.enabled:
            return None
        ha = config.ha
        return SparkDriver(
            config.spark,
            config.spark_dir,
            config.node_id,
            self.outputs,
            self.ingress,
            # [spark] shared: the plan's registry lease elects the one node that drives it
            leases=RegistryLeases(self.registry) if config.spark.shared else None,
            timing=Timing(ha.lease_ms, ha.renew_ms, ha.margin_ms),
        )

    def _install_notifiers_state(self, name: str, blob: bytes) -> dict[str, Any]:
        """A standby of redundant plan `name` takes its notifier's state: all of it, or it is no
        copy of the notifier (`StateDoesNotFit`); what the notifier kept with it (its annex)."""
        report = self.plans.replace_state(name, blob)
        if report.fresh or report.unfit:
            raise StateDoesNotFit(name, [*report.fresh, *(part for part, _ in report.unfit)])
        return report.annex

    # ---- start -------------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        cfg = self.config
        private_dir(cfg.data_dir)
        log.info("node %s starting (data in %s)", cfg.node_id, os.path.abspath(cfg.data_dir))
        before, after = self.registry.migrate()
        self.registry.check_schema()
        upgrade = f"upgraded from {before or 'empty'}" if before != after else "up to date"
        log.info("registry %r at schema %s (%s)", self.registry, after, upgrade)
        generated = self.registry.ensure_admin(self._admin_password)
        if generated is not None:
            log.warning(
                "created user admin with the generated password %s (shown once; set CEPHEUS_ADMIN_PASSWORD "
                "before the first start to choose it)",
                generated,
            )
        self._started = True
        if self.cluster is not None:
            self.cluster.start()
        self.reconcile()
        self.plans.start_clock()
        self.snapshots.start()
        self._start_web()
        self._watcher = threading.Thread(target=self._watch, name="registry-watcher", daemon=True)
        self._watcher.start()
        log.info("registry watcher polling every %.1f s", cfg.registry.poll_seconds)
        self._serving = True
        log.info("node %s started", cfg.node_id)

    def _start_web(self) -> None:
        cfg = self.config
        streams = Streams(self.catalog.get, self.ingress.publish_rows)
        bp = events_blueprint(
            streams,
            lambda: login_refusal(self.credentials),
            cfg.http.max_request_bytes,
            enabled=lambda: self._http_open,
            max_json_depth=cfg.http.max_json_depth,
        )
        snapshot_requests = SnapshotRequests(self.plans, self.snapshots)
        snapshots = snapshots_blueprint(
            snapshot_requests, lambda change: refusal(self.registry, self.credentials, change=change)
        )
        ops = ops_blueprint(
            self.ops_numbers,
            self.readiness,
            None if cfg.console.metrics_public else lambda: login_refusal(self.credentials),
        )
        services = ConsoleServices(
            registry=self.registry,
            credentials=self.credentials,
            node_id=cfg.node_id,
            health=self.health,
            send_events=lambda stream_id, body: publish_json(streams, stream_id, body),
            trace=self._trace,
            restart=lambda: self.request_stop(restart=True),
            shutdown=lambda: self.request_stop(restart=False),
            max_json_depth=cfg.http.max_json_depth,
            snapshots=snapshot_requests,
            query=OnDemandQueries(self.plans),
            spark=self.plans.spark_status if self.plans.spark is not None else None,
            blueprints=(bp, snapshots, ops),
        )
        app = create_app(cfg, services)
        try:
            self.web = WebServer(
                app,
                cfg.console.host,
                cfg.console_port,
                http_limits(cfg),
                lockout=address_lockout(self.credentials),
            )
        except OSError as exc:
            msg = (
                f"http cannot listen on {cfg.console.host}:{cfg.console_port} ({exc.strerror}); "
                "stop whatever uses the port or change console.port (or the port offset)"
            )
            raise NodeError(msg) from None
        self.web.start()
        log.info(
            "http listening on %s:%d (the console at /, its API under /api/v1/, /health, /metrics, "
            "/livez, /readyz, POST /events/<stream>:<version>)",
            cfg.console.host,
            self.web.port,
        )

    def _set_thrift(self, wanted: bool) -> None:
        if wanted and self.thrift is None:
            cfg = self.config
            settings = ServerSettings(
                host=cfg.thrift.host,
                port=cfg.thrift_port,
                tls_port=cfg.thrift_tls_port,
                cert_file=cfg.thrift.cert_file,
                key_file=cfg.thrift.key_file,
                tls_min_version=cfg.thrift.tls_min_version,
                session_timeout_minutes=cfg.thrift.session_timeout_minutes,
                data_dir=str(cfg.data_dir),
                max_connections=cfg.thrift.max_connections,
                max_tls_connections=cfg.thrift.max_tls_connections,
                max_connections_per_address=cfg.thrift.max_connections_per_address,
                max_message_bytes=cfg.thrift.max_message_bytes,
                max_login_message_bytes=cfg.thrift.max_login_message_bytes,
                max_inflight_bytes=cfg.thrift.max_inflight_bytes,
                handshake_timeout_seconds=cfg.thrift.handshake_timeout_seconds,
                login_timeout_seconds=cfg.thrift.login_timeout_seconds,
                message_timeout_seconds=cfg.thrift.message_timeout_seconds,
                idle_timeout_seconds=cfg.thrift.idle_timeout_seconds,
            )
            server = DataBridgeServer(settings, RegistryHandler(self.catalog, self.ingress, self.credentials))
            server.start()  # logs one line per listener
            self.thrift = server
        elif not wanted and self.thrift is not None:
            self.thrift.stop()
            self.thrift = None
            log.info("thrift receiver stopped (disabled in the registry)")

    def _set_http(self, wanted: bool) -> None:
        if wanted != self._http_open:
            self._http_open = wanted
            log.info("http event receiver %s", "open" if wanted else "closed (disabled)")

    # ---- the registry ----------------------------------------------------------------------------

    def reconcile(self) -> None:
        """Bring streams, adapters, formatters, plans and receivers in line with the registry."""
        with self._reconcile_lock:
            revision = self.registry.revision()
            with self.registry.reading() as store:  # one consistent view of the registry
                streams = store.list_streams()
                adapters = store.list_adapters()
                formatters = store.list_formatters()
                datasources = store.list_datasources()
                plans = store.list_plans()
                receivers = store.list_receivers()
            self.catalog.replace(streams)
            self.outputs.configure(adapters, formatters, datasources, self._attributes)
            self.plans.apply(plans)
            if self._started and not self._stopping.is_set():
                listeners = wanted_listeners(receivers, self.config)
                self._set_thrift(listeners["thrift"])
                self._set_http(listeners["http"])
            self._seen_revision = revision

    def _attributes(self, stream_id: str) -> Any:
        known = self.catalog.get(stream_id)
        return None if known is None else known.attributes

    def _watch(self) -> None:
        poll = self.config.registry.poll_seconds
        while not self._stopping.wait(poll):
            try:
                current = self.registry.revision()
                if current != self._seen_revision:
                    changes = self.registry.changes_since(self._seen_revision)
                    log.info("registry revision %d: %s", current, _describe(changes))
                    if any(c.kind == "user" for c in changes):
                        self.credentials.forget()
                    self.reconcile()
                self._registry_reachable = True
            except Exception as exc:  # the registry may be down for a while: keep running what we have
                self._registry_reachable = False
                allowed, held = self._watch_errors.allow()
                if allowed:
                    log.warning(
                        "cannot read the registry (%s); running plans carry on%s",
                        exc,
                        f" ({held} more failures)" if held else "",
                    )

    # ---- health ---------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        stats = self.ingress.stats()
        plans = {name: {"state": s.state, "message": s.message} for name, s in self.plans.status().items()}
        adapters = {
            name: {
                "written": s.written,
                "pending": s.pending,
                "dropped": s.dropped,
                "errors": s.errors,
                "skipped": s.skipped,
                "fenced": s.fenced,
            }
            for name, s in self.outputs.stats().items()
        }
        return {
            "status": "stopping" if self._stopping.is_set() else "ok",
            "node": self.config.node_id,
            "registry_revision": self._seen_revision,
            "received": stats.received,  # events per stream since start
            "pushed_back": stats.pushed_back,  # events refused: an output adapter they feed was full
            "emitted": self._emitted_per_stream(),  # events the plans exported, per stream
            "plans": plans,
            "adapters": adapters,
            "input_log_bytes": {} if self.journals is None else self.journals.sizes(),
            # per plan whose input log the disk does not take now (full, failing, a flush stalled)
            "input_log_faults": {} if self.journals is None else self.journals.faults(),
            "cluster": None if self.cluster is None else self.cluster.status(),
            "spark": self.plans.spark_status(),  # per plan driven here on Spark: its queries
        }

    def ops_numbers(self) -> Numbers:
        """What `/metrics` shows, read now."""
        stats = self.ingress.stats()
        restoring = self.plans.restoring()
        states = {name: s.state for name, s in self.plans.status().items()}
        states.update(dict.fromkeys(restoring, "restoring"))
        return Numbers(
            received=stats.received,
            unrouted=stats.unrouted,
            failed=stats.failed,
            pushed_back=stats.pushed_back,
            emitted=self.plans.emitted(),
            latency=stats.latency,
            plans=states,
            notifier={} if self.cluster is None else self.cluster.roles(),
            adapters=self.outputs.stats(),
            registry_reachable=self._registry_reachable,
        )

    def readiness(self) -> Readiness:
        """What `/readyz` decides on."""
        return Readiness(
            starting=not self._serving,
            stopping=self._stopping.is_set(),
            registry_reachable=self._registry_reachable,
            restoring=self.plans.restoring(),
        )

    # ---- stop -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop receivers, then plans, then deliver every adapter's buffer. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        log.info("node %s stopping", self.config.node_id)
        if self._watcher is not None:
            self._watcher.join(10)
        self._http_open = False
        if self.thrift is not None:
            self.thrift.stop()
            self.thrift = None
            log.info("thrift receiver stopped")
        if self.web is not None:
            self.web.stop()
            self.web = None
            log.info("http stopped")
        if self._serving:
            self.snapshots.stop()
            self.plans.quiesce()  # no event, timer or export between plans changes the state now
        if self.cluster is not None:
            started = time.monotonic()
            self.cluster.stop()  # the standbys take over now; the final snapshot can wait
            log.info("cluster left (%.0f ms)", (time.monotonic() - started) * 1000)
        if self._serving:
            self.snapshots.take_all()
        self.links.stop()
        self.plans.stop()
        if self.journals is not None:
            self.journals.close()
        log.info("plans stopped")
        started = time.monotonic()
        self.outputs.stop()
        log.info("output adapters stopped (%.1f s)", time.monotonic() - started)
        self.registry.close()
        log.info("node %s stopped", self.config.node_id)

    def _emitted_per_stream(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (_, stream_id), n in self.plans.emitted().items():
            out[stream_id] = out.get(stream_id, 0) + n
        return out

    def request_stop(self, *, restart: bool) -> None:
        """Ask the main thread (in `run_until_signalled`) for a graceful stop, and a restart
        after it if `restart`; returns at once (the caller may be serving a request)."""
        self.restart_requested = restart
        self._stop_requested.set()

    def _trace(self, stream_id: str, limit: int) -> list[dict[str, Any]]:
        known = self.catalog.get(stream_id)
        if known is None:
            msg = f"stream {stream_id} is not defined"
            raise LookupError(msg)
        names = [name for name, _ in known.attributes]
        return [
            {"timestamp": ts, "data": dict(zip(names, row, strict=False))}
            for ts, row in self.ingress.tracer.last(stream_id, limit)
        ]

    def run_until_signalled(self) -> None:
        """Start, serve until SIGTERM or SIGINT (or `request_stop`), then stop gracefully. The objects alive once the
        node has started, and again after each registry change, are frozen out of the garbage
        collector's full passes (`heap.settle`)."""
        done = self._stop_requested

        def on_signal(signum: int, _frame: Any) -> None:
            log.info("received %s", signal.Signals(signum).name)
            done.set()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.start()
            settled = self._seen_revision
            heap.settle()
            while not done.wait(1.0):
                if self._seen_revision != settled:
                    settled = self._seen_revision
                    heap.settle()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            self.stop()


def _describe(changes: Sequence[Change]) -> str:
    if not changes:
        return "no visible changes"
    shown = [f"{c.kind} {c.name} {'deleted' if c.deleted else 'changed'}" for c in changes[:10]]
    more = f" and {len(changes) - 10} more" if len(changes) > 10 else ""
    return ", ".join(shown) + more

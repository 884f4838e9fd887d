"""`OutputHub`: the registry's output adapters and formatters, running, and the routes between them.

A route takes events of one registered stream (`name:version`), formats them with one
formatter and hands the records to that formatter's adapter. `configure` brings the running
set in line with the registry: an adapter whose settings (or data source) changed is replaced
by a new one started first, and the old one is stopped after a flush, so nothing accepted is
dropped by a reconfiguration. A component that cannot be built is logged with the reason and
left out; the rest keep running. `${VAR}` references in adapter configs and data source URLs
are expanded here, in memory, from the node's environment (the registry keeps them as written).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.output import AdapterStats, AdapterStopped, OutputAdapter, build_adapter
from adapters.output.base import MAX_SOURCE, Fence, Origin
from adapters.throttle import Throttle
from adapters.wording import counted
from app.config import Adapters as AdapterDefaults
from app.registry import DataSource, Formatter
from app.registry import OutputAdapter as AdapterEntry
from engine.errors import CEPError
from engine.events import Event
from formatters import WSO2EventFormatter, build_formatter
from formatters.base import Formatter as FormatterImpl

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=4096)  # called per bundle and route
def origin_source(plan: str, stream_id: str, formatter: str) -> str:
    """The `Origin.source` of one plan's records on one route: at most `MAX_SOURCE` characters."""
    source = f"{plan}/{stream_id}/{formatter}"
    if len(source) <= MAX_SOURCE:
        return source
    return (
        source[: MAX_SOURCE - 65] + "#" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    )


_BATCHED = ("buffer_events", "batch_events", "linger_ms", "retry_initial_ms", "retry_max_ms", "on_full")
_BUFFERED = {
    "rdbms": _BATCHED,
    "mysql": _BATCHED,
    "http": _BATCHED,
    "wso2event": ("buffer_events", "retry_initial_ms", "retry_max_ms", "on_full"),
}


def with_defaults(entry: AdapterEntry, defaults: AdapterDefaults) -> dict[str, Any]:
    """The adapter's config with the node's `[adapters]` values for keys it leaves out."""
    config = dict(entry.config)
    for key in _BUFFERED.get(entry.type, ()):
        config.setdefault(key, getattr(defaults, key))
    return config


@dataclass(frozen=True)
class Route:
    formatter: str
    format: Callable[[Sequence[Event]], list[Any]]
    adapter: OutputAdapter


@dataclass
class _Running:
    fingerprint: str
    adapter: OutputAdapter


@dataclass(frozen=True)
class OutputProblem:
    """A component left out of the running set, and why."""

    kind: str  # "adapter" or "formatter"
    name: str
    message: str


class OutputHub:
    def __init__(
        self, defaults: AdapterDefaults, stop_timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> None:
        self._defaults = defaults
        self._env = os.environ if env is None else env
        self._stop_timeout = stop_timeout
        self._lock = threading.Lock()  # configure/stop against each other; emit takes no lock
        self._adapters: dict[str, _Running] = {}
        self._routes: Mapping[str, tuple[Route, ...]] = {}
        self._error_log = Throttle(10.0)
        self.problems: list[OutputProblem] = []

    # ---- configuration ------------------------------------------------------------------

    def configure(
        self,
        adapters: Sequence[AdapterEntry],
        formatters: Sequence[Formatter],
        datasources: Sequence[DataSource],
        attributes: Callable[[str], Sequence[tuple[str, Any]] | None],
    ) -> list[OutputProblem]:
        """Run exactly these adapters and formatters; `attributes(stream_id)` gives a stream's schema."""
        problems: list[OutputProblem] = []
        urls: dict[str, str] = {}
        unresolved: dict[str, str] = {}
        for datasource in datasources:
            try:
                urls[datasource.name] = datasource.resolved(self._env).url
            except CEPError as exc:
                unresolved[datasource.name] = str(exc)
        with self._lock:
            retired: list[OutputAdapter] = []
            running: dict[str, _Running] = {}
            for stored in adapters:
                current = self._adapters.get(stored.name)
                entry, why = self._resolved(stored, unresolved)
                if entry is None:
                    problems.append(OutputProblem("adapter", stored.name, why))
                    if current is not None:
                        retired.append(current.adapter)
                    continue
                config = with_defaults(entry, self._defaults)
                source = entry.datasource
                fingerprint = json.dumps(
                    [entry.type, config, urls.get(source) if source else None], sort_keys=True, default=str
                )
                if current is not None and current.fingerprint == fingerprint:
                    running[entry.name] = current
                    continue
                try:
                    adapter = build_adapter(entry.type, entry.name, config, urls)
                except CEPError as exc:
                    problems.append(OutputProblem("adapter", entry.name, str(exc)))
                    if current is not None:
                        retired.append(current.adapter)
                    continue
                running[entry.name] = _Running(fingerprint, adapter)
                if current is not None:
                    retired.append(current.adapter)
            for name, old in self._adapters.items():
                if name not in running and old.adapter not in retired:
                    retired.append(old.adapter)

            routes: dict[str, list[Route]] = {}
            fresh = {name: r for name, r in running.items() if self._adapters.get(name) is not r}
            for entry_f in formatters:
                route = self._route(entry_f, running, attributes, problems)
                if route is not None:
                    routes.setdefault(entry_f.stream, []).append(route)
            self._adapters = running
            self._routes = {stream: tuple(rs) for stream, rs in routes.items()}
        # the adapters replaced deliver what they hold before their successors write anything:
        # two writers of one source at once could let a later record's mark skip an earlier one
        for adapter in retired:
            self._retire(adapter)
        for name, r in fresh.items():
            r.adapter.start()  # what was published to it meanwhile waited in its buffer
            log.info("output adapter %s (%s) started", name, r.adapter.kind)
        for problem in problems:
            log.error("%s %s not started: %s", problem.kind, problem.name, problem.message)
        self.problems = problems
        return problems

    def _resolved(
        self, stored: AdapterEntry, unresolved: Mapping[str, str]
    ) -> tuple[AdapterEntry | None, str]:
        """The adapter with its `${VAR}` references expanded, or None and why it cannot be."""
        source = stored.datasource
        if source is not None and source in unresolved:
            return None, unresolved[source]
        try:
            return stored.resolved(self._env), ""
        except CEPError as exc:
            return None, str(exc)

    def _route(
        self,
        entry: Formatter,
        running: Mapping[str, _Running],
        attributes: Callable[[str], Sequence[tuple[str, Any]] | None],
        problems: list[OutputProblem],
    ) -> Route | None:
        target = running.get(entry.adapter)
        if target is None:
            problems.append(
                OutputProblem("formatter", entry.name, f"its adapter {entry.adapter!r} is not running")
            )
            return None
        schema = attributes(entry.stream)
        if schema is None:
            problems.append(OutputProblem("formatter", entry.name, f"stream {entry.stream} is not defined"))
            return None
        try:
            formatter: FormatterImpl[Any] = build_formatter(
                entry.type, list(schema), entry.config, stream=entry.stream
            )
            register = getattr(target.adapter, "register_stream", None)
            if isinstance(formatter, WSO2EventFormatter) and register is not None:
                register(formatter.definition)
        except CEPError as exc:
            problems.append(OutputProblem("formatter", entry.name, str(exc)))
            return None
        return Route(entry.name, formatter.format, target.adapter)

    def _retire(self, adapter: OutputAdapter) -> None:
        done = adapter.stop(self._stop_timeout)
        stats = adapter.stats
        if done:
            log.info("output adapter %s stopped (%d written)", adapter.name, stats.written)
        else:
            log.warning(
                "output adapter %s stopped with %s undelivered (target unreachable)",
                adapter.name,
                counted(stats.abandoned or stats.pending, "record"),
            )

    # ---- events --------------------------------------------------------------------------

    def room(self, streams: frozenset[str], timeout: float) -> str | None:
        """Wait up to `timeout` s until every adapter fed by `streams` is below its bound (see
        `OutputAdapter.room`); None when they all are, else the name of one still full."""
        deadline = time.monotonic() + timeout
        routes = self._routes
        asked: set[int] = set()
        for stream_id in streams:
            for route in routes.get(stream_id, ()):
                adapter = route.adapter
                if id(adapter) in asked:
                    continue
                asked.add(id(adapter))
                if not adapter.room(max(0.0, deadline - time.monotonic())):
                    return adapter.name
        return None

    def has_routes(self, stream_id: str) -> bool:
        return stream_id in self._routes

    def emit(
        self,
        stream_id: str,
        events: list[Event],
        origin: Origin | None = None,
        fence: Fence | None = None,
    ) -> None:
        """Format and enqueue `events` for every route of `stream_id` (non-blocking).
        `origin` — the first event's, its source the plan: the records get origins, one source
        per plan, stream and formatter, so an adapter can skip what it delivered before a replay
        (one `Origin` for them all, the first record's: they are a run).
        `fence` — a notifier's: every write of these records checks it (`OutputAdapter.publish`)."""
        for route in self._routes.get(stream_id, ()):
            try:
                self._deliver(route, stream_id, events, origin, fence)
            except AdapterStopped:
                # reconfigured while these events were on their way: the new adapter takes them
                replacement = self._current(stream_id, route.formatter)
                if replacement is not None:
                    self._deliver(replacement, stream_id, events, origin, fence)
            except CEPError as exc:
                allowed, held = self._error_log.allow()
                if allowed:
                    log.error(
                        "formatter %s dropped %s of %s: %s%s",
                        route.formatter,
                        counted(len(events), "event"),
                        stream_id,
                        exc,
                        f" ({held} similar errors not shown)" if held else "",
                    )

    def _deliver(
        self,
        route: Route,
        stream_id: str,
        events: list[Event],
        origin: Origin | None,
        fence: Fence | None = None,
    ) -> None:
        records = route.format(events)
        if origin is None or len(records) != len(events):
            route.adapter.publish(records, fence)
            return
        route.adapter.publish(
            records, fence, origin.routed(origin_source(origin.source, stream_id, route.formatter))
        )

    def _current(self, stream_id: str, formatter: str) -> Route | None:
        for route in self._routes.get(stream_id, ()):
            if route.formatter == formatter:
                return route
        return None

    # ---- lifecycle ---------------------------------------------------------------------------

    def adapters(self) -> dict[str, OutputAdapter]:
        return {name: r.adapter for name, r in self._adapters.items()}

    def stats(self) -> dict[str, AdapterStats]:
        return {name: r.adapter.stats for name, r in self._adapters.items()}

    def flush_stream(self, stream_id: str, timeout: float) -> bool:
        """Wait until what was emitted on `stream_id` before the call is written by each of its
        adapters; False when one of them still holds some after `timeout`."""
        return all(route.adapter.flush(timeout) for route in self._routes.get(stream_id, ()))

    def flush(self, timeout: float) -> bool:
        return all(r.adapter.flush(timeout) for r in list(self._adapters.values()))

    def adapters_of(self, streams: Sequence[str]) -> list[OutputAdapter]:
        """The adapters the routes of `streams` feed, each once."""
        found: dict[int, OutputAdapter] = {}
        routes = self._routes
        for stream_id in streams:
            for route in routes.get(stream_id, ()):
                found.setdefault(id(route.adapter), route.adapter)
        return list(found.values())

    def stop(self) -> None:
        """Flush and stop every adapter (waits up to the stop timeout for each)."""
        with self._lock:
            running, self._adapters, self._routes = self._adapters, {}, {}
        for r in running.values():
            self._retire(r.adapter)

"""The node's operations endpoints: `GET /metrics`, `GET /livez` and `GET /readyz`.

`/metrics` is the Prometheus text format (OpenMetrics when the scraper asks for it). Its
numbers are read from the node when scraped, by `NodeCollector` in a `CollectorRegistry` of
each blueprint's own (never prometheus_client's global one, so two nodes in one process do
not clash); nothing here counts. The series (counters end in `_total`):

    cepheus_events_received_total{stream}          events received per registered stream
    cepheus_events_unrouted_total{stream}          ... of them no deployed plan imports
    cepheus_events_failed_total                    events a plan raised on
    cepheus_events_pushed_back_total               events refused (retryable) because an output
                                                   adapter they would feed was full
    cepheus_events_emitted_total{plan,stream}      events a plan emitted on an exported stream
    cepheus_plan_send_duration_seconds{plan}       histogram: a received bundle in the plan's send
    cepheus_plan_state{plan,state}                 1 for the plan's state, 0 for the others
    cepheus_plan_notifier{plan}                    redundant plans: 1 notifier, 0 standby
    cepheus_adapter_pending{adapter}               records in the adapter's buffer
    cepheus_adapter_<outcome>_total{adapter}       published, written, rejected, fenced, skipped,
                                                   abandoned, overflow, write_errors, in_doubt
    cepheus_registry_reachable                     1 while the registry can be read

`/livez` answers 200 while the process serves HTTP. `/readyz` answers 200, or 503 with the
reasons (`Readiness.reasons`); neither needs a login, and neither names a plan. `/metrics`
calls `authorize` first when given one (the node passes its basic-auth check unless
`console.metrics_public`).

What the endpoints read comes in as plain callables (`Numbers`, `Readiness`), so this module
imports nothing of `app.node` (an import contract says so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flask import Blueprint, Response, jsonify, request
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder

from adapters.output import AdapterStats
from adapters.wording import counted

PLAN_STATES = ("running", "restoring", "failed", "disabled", "elsewhere", "starting", "spark")
ADAPTER_COUNTERS = (  # (the metric's outcome, the `AdapterStats` field, its help)
    ("published", "published", "records the adapter accepted"),
    ("written", "written", "records delivered to the target"),
    ("rejected", "rejected", "records the target refused for good (bad data)"),
    ("fenced", "fenced", "records discarded because this node may no longer write (HA fence)"),
    ("skipped", "skipped", "records not written because the target already had them (a replay)"),
    ("abandoned", "abandoned", "records still pending when the adapter stopped"),
    ("overflow", "overflow", "records refused because the buffer was full"),
    ("write_errors", "errors", "failed write attempts (each retry counts)"),
    ("in_doubt", "in_doubt", "records of writes whose commit was interrupted, so retried"),
)


class Histogram(Protocol):
    """Durations in buckets: `counts[i]` above `bounds[i - 1]` and at most `bounds[i]`, one
    count more than there are bounds (those above every bound); `seconds`, their sum."""

    @property
    def bounds(self) -> Sequence[float]: ...

    @property
    def counts(self) -> Sequence[int]: ...

    @property
    def seconds(self) -> float: ...


@dataclass(frozen=True)
class Numbers:
    """The node's numbers at one moment; counts only grow while the process lives."""

    received: Mapping[str, int] = field(default_factory=dict)  # per registered stream id
    unrouted: Mapping[str, int] = field(default_factory=dict)
    failed: int = 0
    pushed_back: int = 0  # events refused because an output adapter they feed was full
    emitted: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (plan, stream id)
    latency: Mapping[str, Histogram] = field(default_factory=dict)  # per plan
    plans: Mapping[str, str] = field(default_factory=dict)  # plan → one of PLAN_STATES
    notifier: Mapping[str, bool] = field(default_factory=dict)  # redundant plan → notifier here?
    adapters: Mapping[str, AdapterStats] = field(default_factory=dict)
    registry_reachable: bool = True


@dataclass(frozen=True)
class Readiness:
    """What decides whether the node should get traffic."""

    starting: bool = False
    stopping: bool = False
    registry_reachable: bool = True
    restoring: Mapping[str, str] = field(default_factory=dict)  # plan → "restoring a snapshot", ...

    def reasons(self) -> list[str]:
        """Why the node is not ready; empty when it is. Plans are counted, not named (no login)."""
        reasons = []
        if self.stopping:
            reasons.append("the node is stopping")
        elif self.starting:
            reasons.append("the node is starting")
        if not self.registry_reachable:
            reasons.append("the registry cannot be read")
        doing: dict[str, int] = {}
        for what in self.restoring.values():
            doing[what] = doing.get(what, 0) + 1
        reasons += [f"{counted(n, 'plan')} {what}" for what, n in sorted(doing.items())]
        return reasons


class NodeCollector:
    """A prometheus_client collector reading `numbers()` at every scrape."""

    def __init__(self, numbers: Callable[[], Numbers]) -> None:
        self._numbers = numbers

    def describe(self) -> list[Metric]:
        return []  # registering must not read the node; the names are ours alone in the registry

    def collect(self) -> Iterator[Metric]:
        n = self._numbers()
        yield _per_key(
            CounterMetricFamily, "cepheus_events_received", "events received", ["stream"], n.received
        )
        yield _per_key(
            CounterMetricFamily,
            "cepheus_events_unrouted",
            "events received on a stream no deployed plan imports",
            ["stream"],
            n.unrouted,
        )
        yield CounterMetricFamily("cepheus_events_failed", "events a plan raised on", value=n.failed)
        yield CounterMetricFamily(
            "cepheus_events_pushed_back",
            "events refused (retryable) because an output adapter they feed was full",
            value=n.pushed_back,
        )
        emitted = CounterMetricFamily(
            "cepheus_events_emitted", "events a plan emitted on an exported stream", labels=["plan", "stream"]
        )
        for (plan, stream), count in sorted(n.emitted.items()):
            emitted.add_metric([plan, stream], count)
        yield emitted
        latency = HistogramMetricFamily(
            "cepheus_plan_send_duration_seconds",
            "time a bundle of events from a receiver spent in the plan",
            labels=["plan"],
        )
        for plan, histogram in sorted(n.latency.items()):
            latency.add_metric([plan], _buckets(histogram), histogram.seconds)
        yield latency
        states = GaugeMetricFamily(
            "cepheus_plan_state", "1 for the plan's state, 0 for the others", labels=["plan", "state"]
        )
        for plan, state in sorted(n.plans.items()):
            for known in PLAN_STATES:
                states.add_metric([plan, known], 1.0 if state == known else 0.0)
        yield states
        yield _per_key(
            GaugeMetricFamily,
            "cepheus_plan_notifier",
            "1 while this node is the notifier of the redundant plan, 0 while a standby",
            ["plan"],
            {plan: int(leading) for plan, leading in n.notifier.items()},
        )
        yield _per_key(
            GaugeMetricFamily,
            "cepheus_adapter_pending",
            "records in the output adapter's buffer",
            ["adapter"],
            {name: s.pending for name, s in n.adapters.items()},
        )
        for metric, attribute, help_text in ADAPTER_COUNTERS:
            yield _per_key(
                CounterMetricFamily,
                f"cepheus_adapter_{metric}",
                help_text,
                ["adapter"],
                {name: getattr(s, attribute) for name, s in n.adapters.items()},
            )
        yield GaugeMetricFamily(
            "cepheus_registry_reachable",
            "1 while the registry can be read, 0 since a read failed",
            value=1.0 if n.registry_reachable else 0.0,
        )


def _per_key(
    kind: Callable[..., Any], name: str, help_text: str, labels: list[str], values: Mapping[str, int]
) -> Metric:
    family: CounterMetricFamily | GaugeMetricFamily = kind(name, help_text, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


def _buckets(histogram: Histogram) -> list[tuple[str, float]]:
    """Prometheus buckets: cumulative counts per upper bound, `+Inf` last."""
    out: list[tuple[str, float]] = []
    total = 0
    for bound, count in zip(histogram.bounds, histogram.counts, strict=False):
        total += count
        out.append((repr(float(bound)), total))  # as prometheus_client writes `le`
    out.append(("+Inf", sum(histogram.counts)))
    return out


def ops_blueprint(
    numbers: Callable[[], Numbers],
    readiness: Callable[[], Readiness],
    authorize: Callable[[], Response | None] | None = None,
) -> Blueprint:
    """`/metrics`, `/livez` and `/readyz`. `authorize` gives None to let a `/metrics` request
    through, else the reply that refuses it; without it `/metrics` is public."""
    bp = Blueprint("ops", __name__)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(numbers))

    @bp.get("/metrics")
    def metrics() -> Any:
        if authorize is not None:
            refusal = authorize()
            if refusal is not None:
                return refusal
        encode, content_type = choose_encoder(request.headers.get("Accept", ""))
        return Response(encode(registry), content_type=content_type)

    @bp.get("/livez")
    def livez() -> Any:
        return jsonify(status="live")

    @bp.get("/readyz")
    def readyz() -> Any:
        reasons = readiness().reasons()
        if reasons:
            return jsonify(status="not ready", reasons=reasons), 503
        return jsonify(status="ready")

    return bp

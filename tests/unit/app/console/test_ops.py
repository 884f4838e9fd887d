"""The operations endpoints over Flask's test client: `/metrics` read at scrape time from plain
callables, `/livez`, and `/readyz` with its reasons."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from adapters.output import AdapterStats
from app.auth import Credentials
from app.console.ops import Numbers, Readiness, ops_blueprint
from app.http.basic_auth import login_refusal
from app.http.web import create_web_app
from app.node.latency import LatencyHistogram

NUMBERS = Numbers(
    received={"temps:1.0.0": 7, "doors:1.0.0": 2},
    unrouted={"doors:1.0.0": 2},
    failed=1,
    pushed_back=16,
    emitted={("hot", "alerts:1.0.0"): 4},
    plans={"hot": "running", "cold": "failed"},
    notifier={"hot": True, "cold": False},
    adapters={
        "alertTable": AdapterStats(
            published=9,
            written=4,
            rejected=1,
            fenced=2,
            skipped=1,
            abandoned=0,
            overflow=3,
            errors=5,
            pending=1,
        )
    },
)


def app_for(numbers: Any = lambda: NUMBERS, readiness: Any = Readiness, authorize: Any = None) -> FlaskClient:
    app = Flask("test")
    app.register_blueprint(ops_blueprint(numbers, readiness, authorize))
    return app.test_client()


def scrape(client: FlaskClient, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of `/metrics`: (name, sorted labels) → value."""
    reply = client.get("/metrics", headers=headers)
    assert reply.status_code == 200, reply.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
    }


def test_metrics_show_events_per_stream_and_plan_and_each_adapter_outcome() -> None:
    samples = scrape(app_for())
    assert samples[("cepheus_events_received_total", (("stream", "temps:1.0.0"),))] == 7
    assert samples[("cepheus_events_received_total", (("stream", "doors:1.0.0"),))] == 2
    assert samples[("cepheus_events_unrouted_total", (("stream", "doors:1.0.0"),))] == 2
    assert samples[("cepheus_events_failed_total", ())] == 1
    assert samples[("cepheus_events_pushed_back_total", ())] == 16
    assert samples[("cepheus_events_emitted_total", (("plan", "hot"), ("stream", "alerts:1.0.0")))] == 4
    adapter = (("adapter", "alertTable"),)
    outcomes = {
        name.removeprefix("cepheus_adapter_"): value
        for (name, labels), value in samples.items()
        if name.startswith("cepheus_adapter_") and labels == adapter
    }
    assert outcomes == {
        "pending": 1,
        "published_total": 9,
        "written_total": 4,
        "rejected_total": 1,
        "fenced_total": 2,
        "skipped_total": 1,
        "abandoned_total": 0,
        "overflow_total": 3,
        "write_errors_total": 5,
        "in_doubt_total": 0,
    }


def test_plan_state_is_one_hot_and_the_notifier_gauge_tells_the_role() -> None:
    samples = scrape(app_for())
    states = {
        dict(labels)["state"]: value
        for (name, labels), value in samples.items()
        if name == "cepheus_plan_state" and dict(labels)["plan"] == "cold"
    }
    assert states == {
        "running": 0,
        "restoring": 0,
        "failed": 1,
        "disabled": 0,
        "elsewhere": 0,
        "starting": 0,
        "spark": 0,
    }
    assert samples[("cepheus_plan_notifier", (("plan", "hot"),))] == 1
    assert samples[("cepheus_plan_notifier", (("plan", "cold"),))] == 0
    assert samples[("cepheus_registry_reachable", ())] == 1


def test_the_latency_histogram_has_cumulative_buckets_sum_and_count() -> None:
    histogram = LatencyHistogram()
    for seconds in (0.0002, 0.0004, 0.003, 20.0):
        histogram.observe(seconds)
    samples = scrape(app_for(lambda: Numbers(latency={"hot": histogram.copy()})))

    def bucket(le: str) -> float:
        return samples[("cepheus_plan_send_duration_seconds_bucket", (("le", le), ("plan", "hot")))]

    assert [bucket(le) for le in ("0.0001", "0.00025", "0.0005", "0.0025", "0.005", "10.0", "+Inf")] == [
        0,
        1,
        2,
        2,
        3,
        3,
        4,
    ]
    assert samples[("cepheus_plan_send_duration_seconds_count", (("plan", "hot"),))] == 4
    assert samples[("cepheus_plan_send_duration_seconds_sum", (("plan", "hot"),))] == pytest.approx(20.0036)


def test_numbers_are_read_at_every_scrape() -> None:
    received = {"temps:1.0.0": 1}
    client = app_for(lambda: Numbers(received=dict(received), registry_reachable=len(received) == 1))
    key = ("cepheus_events_received_total", (("stream", "temps:1.0.0"),))
    assert scrape(client)[key] == 1
    received["temps:1.0.0"] = 41
    received["doors:1.0.0"] = 0
    samples = scrape(client)
    assert samples[key] == 41
    assert samples[("cepheus_registry_reachable", ())] == 0


def test_two_apps_in_one_process_each_show_their_own_numbers() -> None:
    first = app_for(lambda: Numbers(received={"a:1.0.0": 1}))
    second = app_for(lambda: Numbers(received={"b:1.0.0": 2}))
    streams = [
        {dict(labels)["stream"] for name, labels in scrape(c) if name == "cepheus_events_received_total"}
        for c in (first, second)
    ]
    assert streams == [{"a:1.0.0"}, {"b:1.0.0"}]


def test_metrics_speak_the_text_format_or_openmetrics_when_asked() -> None:
    client = app_for()
    plain = client.get("/metrics")
    assert plain.content_type.startswith("text/plain; version=")
    assert "# TYPE cepheus_events_received_total counter" in plain.text
    open_metrics = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert open_metrics.content_type.startswith("application/openmetrics-text")
    assert open_metrics.text.endswith("# EOF\n")


def test_livez_answers_live() -> None:
    reply = app_for(readiness=lambda: Readiness(stopping=True, registry_reachable=False)).get("/livez")
    assert (reply.status_code, reply.json) == (200, {"status": "live"})


def test_readyz_answers_ready_when_nothing_stands_in_the_way() -> None:
    reply = app_for().get("/readyz")
    assert (reply.status_code, reply.json) == (200, {"status": "ready"})


@pytest.mark.parametrize(
    ("readiness", "reasons"),
    [
        (Readiness(registry_reachable=False), ["the registry cannot be read"]),
        (Readiness(starting=True), ["the node is starting"]),
        (Readiness(starting=True, stopping=True), ["the node is stopping"]),
        (
            Readiness(
                registry_reachable=False,
                restoring={
                    "alpha": "replaying the input log",
                    "beta": "restoring a snapshot",
                    "gamma": "replaying the input log",
                },
            ),
            ["the registry cannot be read", "2 plans replaying the input log", "1 plan restoring a snapshot"],
        ),
    ],
)
def test_readyz_is_503_with_every_reason(readiness: Readiness, reasons: list[str]) -> None:
    reply = app_for(readiness=lambda: readiness).get("/readyz")
    assert (reply.status_code, reply.json) == (503, {"status": "not ready", "reasons": reasons})
    assert not [name for name in ("alpha", "beta", "gamma") if name in reply.text]  # counted, not named


def test_metrics_behind_the_nodes_login_refuse_a_scrape_without_credentials() -> None:
    credentials = Credentials(lambda user, password: (user, password) == ("prometheus", "pw"))
    ops = ops_blueprint(lambda: NUMBERS, Readiness, lambda: login_refusal(credentials))
    client = create_web_app([ops], lambda: {"status": "ok"}, credentials).test_client()
    refused = client.get("/metrics")
    assert refused.status_code == 401 and "WWW-Authenticate" in refused.headers
    assert client.get("/readyz").status_code == 200  # the probes stay open
    token = base64.b64encode(b"prometheus:pw").decode()
    samples = scrape(client, Authorization=f"Basic {token}")
    assert samples[("cepheus_events_received_total", (("stream", "temps:1.0.0"),))] == 7

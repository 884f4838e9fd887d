"""The logger adapter: one INFO line per record, configurable logger, prefix and level."""

from __future__ import annotations

import logging

import pytest

from adapters.output import AdapterConfigError, AdapterStopped, build_adapter


def test_each_record_is_logged_at_info_with_the_prefix(caplog: pytest.LogCaptureFixture) -> None:
    out = build_adapter("logger", "pizzaLog", {"logger": "cepheus.output.pizza", "prefix": "delivered: "})
    out.start()
    with caplog.at_level(logging.INFO, logger="cepheus.output.pizza"):
        assert out.publish(['{"n":1}', {"sum_order_id": 2, "customer_name": "Tom"}]) == 2
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("cepheus.output.pizza", logging.INFO, 'delivered: {"n":1}'),
        ("cepheus.output.pizza", logging.INFO, 'delivered: {"sum_order_id": 2, "customer_name": "Tom"}'),
    ]
    assert out.flush(1) and out.stop(1)
    s = out.stats
    assert (s.published, s.written, s.pending) == (2, 2, 0)


def test_default_logger_is_named_after_the_adapter(caplog: pytest.LogCaptureFixture) -> None:
    out = build_adapter("logger", "alerts", {"level": "warning"})
    with caplog.at_level(logging.INFO):
        out.publish(["x"])
    assert [(r.name, r.levelno) for r in caplog.records] == [
        ("adapters.output.logger.alerts", logging.WARNING)
    ]


def test_a_raising_fence_logs_nothing_and_counts_fenced(caplog: pytest.LogCaptureFixture) -> None:
    out = build_adapter("logger", "alerts", {"logger": "t.fenced"})

    def fence(_: object) -> None:
        raise RuntimeError("not the notifier")

    with caplog.at_level(logging.INFO, logger="t.fenced"):
        out.publish(["x", "y"], fence=fence)
    assert not [r for r in caplog.records if r.name == "t.fenced"]
    assert out.stats.fenced == 2 and out.stats.written == 0


def test_publish_after_stop_is_refused() -> None:
    out = build_adapter("logger", "alerts", {})
    out.stop()
    with pytest.raises(AdapterStopped):
        out.publish(["x"])


@pytest.mark.parametrize(
    ("config", "key"),
    [({"level": "LOUD"}, "level"), ({"prefix": 3}, "prefix"), ({"colour": "red"}, "colour")],
)
def test_config_errors_name_the_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(AdapterConfigError) as info:
        build_adapter("logger", "alerts", config)
    assert info.value.key == key

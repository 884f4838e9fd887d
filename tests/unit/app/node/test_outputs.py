"""`OutputHub`: registry adapters and formatters running, reconfigured without losing events."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from adapters.output import AdapterStopped
from app.config import Adapters
from app.node.outputs import OutputHub, OutputProblem, with_defaults
from app.registry import DataSource, Formatter, OutputAdapter
from engine.events import Event
from engine.types import AttrType

STREAM = "s:1.0.0"
SCHEMAS: dict[str, list[tuple[str, AttrType]]] = {STREAM: [("a", AttrType.LONG)]}
TABLE = {
    "datasource": "db",
    "table": "t",
    "mode": "insert",
    "create_table": True,
    "columns": [{"name": "a", "type": "BIGINT"}],
}


def attributes(stream_id: str) -> Sequence[tuple[str, Any]] | None:
    return SCHEMAS.get(stream_id)


def rows(db: Path, table: str = "t") -> list[int]:
    with closing(sqlite3.connect(db)) as conn:
        return [a for (a,) in conn.execute(f"SELECT a FROM {table} ORDER BY rowid")]


def events(*values: int) -> list[Event]:
    return [Event(1000 + i, (v,)) for i, v in enumerate(values)]


@pytest.fixture
def hub() -> Iterator[OutputHub]:
    hub = OutputHub(Adapters(), stop_timeout=5.0)
    yield hub
    hub.stop()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "out.db"


def table_adapter(name: str = "out", **extra: Any) -> OutputAdapter:
    return OutputAdapter(name, "rdbms", {**TABLE, **extra})


def map_formatter(name: str = "f", adapter: str = "out", stream: str = STREAM) -> Formatter:
    return Formatter(name, stream, adapter, "map", {})


def test_emitted_events_land_in_the_table(hub: OutputHub, db: Path) -> None:
    problems = hub.configure(
        [table_adapter()], [map_formatter()], [DataSource("db", f"sqlite:///{db}")], attributes
    )
    assert problems == []
    assert hub.has_routes(STREAM) and not hub.has_routes("other:1.0.0")
    hub.emit(STREAM, events(5, 6))
    hub.emit("other:1.0.0", events(99))  # no route: ignored
    assert hub.flush(5.0) is True
    assert rows(db) == [5, 6]
    assert hub.stats()["out"].written == 2


def test_two_formatters_on_one_stream_both_deliver(hub: OutputHub, tmp_path: Path) -> None:
    sources = [
        DataSource("db", f"sqlite:///{tmp_path / 'one.db'}"),
        DataSource("db2", f"sqlite:///{tmp_path / 'two.db'}"),
    ]
    adapters = [table_adapter(), table_adapter("out2", datasource="db2")]
    formatters = [map_formatter(), map_formatter("f2", "out2")]
    assert hub.configure(adapters, formatters, sources, attributes) == []
    hub.emit(STREAM, events(1, 2))
    assert hub.flush(5.0)
    assert rows(tmp_path / "one.db") == [1, 2]
    assert rows(tmp_path / "two.db") == [1, 2]


def test_an_unchanged_adapter_keeps_running_as_the_same_object(hub: OutputHub, db: Path) -> None:
    sources = [DataSource("db", f"sqlite:///{db}")]
    hub.configure([table_adapter()], [map_formatter()], sources, attributes)
    before = hub.adapters()["out"]
    hub.emit(STREAM, events(1))
    assert hub.configure([table_adapter()], [map_formatter()], sources, attributes) == []
    assert hub.adapters()["out"] is before
    hub.emit(STREAM, events(2))
    assert hub.flush(5.0)
    assert rows(db) == [1, 2]
    assert before.stats.published == 2


def test_a_changed_adapter_is_replaced_and_the_old_one_stopped_with_nothing_lost(
    hub: OutputHub, db: Path
) -> None:
    sources = [DataSource("db", f"sqlite:///{db}")]
    hub.configure([table_adapter()], [map_formatter()], sources, attributes)
    old = hub.adapters()["out"]
    burst = list(range(3000))
    for start in range(0, len(burst), 100):
        hub.emit(STREAM, events(*burst[start : start + 100]))

    assert hub.configure([table_adapter(batch_events=50)], [map_formatter()], sources, attributes) == []

    new = hub.adapters()["out"]
    assert new is not old
    assert (old.stats.published, old.stats.written, old.stats.pending) == (3000, 3000, 0)
    with pytest.raises(AdapterStopped):
        old.publish([{"a": 1}])
    hub.emit(STREAM, events(3000, 3001))
    assert hub.flush(5.0)
    assert rows(db) == [*burst, 3000, 3001]
    assert new.stats.written == 2


def test_a_changed_data_source_url_replaces_the_adapter(hub: OutputHub, tmp_path: Path) -> None:
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    hub.configure([table_adapter()], [map_formatter()], [DataSource("db", f"sqlite:///{first}")], attributes)
    old = hub.adapters()["out"]
    hub.emit(STREAM, events(1))
    hub.configure([table_adapter()], [map_formatter()], [DataSource("db", f"sqlite:///{second}")], attributes)
    assert hub.adapters()["out"] is not old
    hub.emit(STREAM, events(2))
    assert hub.flush(5.0)
    assert rows(first) == [1]
    assert rows(second) == [2]


def test_problems_are_reported_and_the_rest_keep_working(hub: OutputHub, db: Path) -> None:
    adapters = [table_adapter(), OutputAdapter("broken", "rdbms", {**TABLE, "datasource": "nowhere"})]
    formatters = [
        map_formatter(),
        map_formatter("toBroken", "broken"),
        map_formatter("toMissing", "absent"),
        map_formatter("unknownStream", stream="ghost:1.0.0"),
        Formatter("badConfig", STREAM, "out", "map", {"colour": "red"}),
    ]
    problems = hub.configure(adapters, formatters, [DataSource("db", f"sqlite:///{db}")], attributes)
    assert [(p.kind, p.name) for p in problems] == [
        ("adapter", "broken"),
        ("formatter", "toBroken"),
        ("formatter", "toMissing"),
        ("formatter", "unknownStream"),
        ("formatter", "badConfig"),
    ]
    assert problems[0].message == (
        "output adapter 'broken' (rdbms): datasource: unknown data source 'nowhere' (known: db)"
    )
    assert problems[1] == OutputProblem("formatter", "toBroken", "its adapter 'broken' is not running")
    assert problems[2] == OutputProblem("formatter", "toMissing", "its adapter 'absent' is not running")
    assert problems[3] == OutputProblem("formatter", "unknownStream", "stream ghost:1.0.0 is not defined")
    assert "colour" in problems[4].message
    assert hub.problems == problems
    assert sorted(hub.adapters()) == ["out"]

    hub.emit(STREAM, events(7))
    assert hub.flush(5.0)
    assert rows(db) == [7]


def test_fixing_a_problem_clears_it(hub: OutputHub, db: Path) -> None:
    sources = [DataSource("db", f"sqlite:///{db}")]
    assert len(hub.configure([], [map_formatter()], sources, attributes)) == 1
    assert hub.configure([table_adapter()], [map_formatter()], sources, attributes) == []
    assert hub.problems == []
    hub.emit(STREAM, events(3))
    assert hub.flush(5.0)
    assert rows(db) == [3]


def test_a_removed_adapter_is_stopped(hub: OutputHub, db: Path) -> None:
    sources = [DataSource("db", f"sqlite:///{db}")]
    hub.configure([table_adapter()], [map_formatter()], sources, attributes)
    old = hub.adapters()["out"]
    hub.emit(STREAM, events(4))
    assert hub.configure([], [], sources, attributes) == []
    assert hub.adapters() == {} and not hub.has_routes(STREAM)
    assert old.stats.written == 1
    with pytest.raises(AdapterStopped):
        old.publish([{"a": 1}])
    assert rows(db) == [4]


def test_a_config_that_breaks_a_running_adapter_stops_it(hub: OutputHub, db: Path) -> None:
    sources = [DataSource("db", f"sqlite:///{db}")]
    hub.configure([table_adapter()], [map_formatter()], sources, attributes)
    old = hub.adapters()["out"]
    hub.emit(STREAM, events(8))
    problems = hub.configure([table_adapter(mode="sideways")], [map_formatter()], sources, attributes)
    assert [(p.kind, p.name) for p in problems] == [("adapter", "out"), ("formatter", "f")]
    assert "mode" in problems[0].message
    assert hub.adapters() == {}
    assert old.stats.written == 1
    assert rows(db) == [8]


def test_an_event_the_formatter_cannot_format_is_logged_not_raised(
    hub: OutputHub, db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    formatter = Formatter(
        "f", STREAM, "out", "map", {"mappings": [{"column": "a", "attribute": "a", "type": "BIGINT"}]}
    )
    hub.configure([table_adapter()], [formatter], [DataSource("db", f"sqlite:///{db}")], attributes)
    with caplog.at_level(logging.ERROR, logger="app.node.outputs"):
        hub.emit(STREAM, [Event(1, (2.5,))])
    (record,) = caplog.records
    assert record.getMessage().startswith(
        f"formatter f dropped 1 event of {STREAM}: map formatter: event 0: "
    )
    hub.emit(STREAM, events(9))
    assert hub.flush(5.0)
    assert rows(db) == [9]


def test_stop_flushes_and_stops_every_adapter(db: Path) -> None:
    hub = OutputHub(Adapters(), stop_timeout=5.0)
    hub.configure([table_adapter()], [map_formatter()], [DataSource("db", f"sqlite:///{db}")], attributes)
    adapter = hub.adapters()["out"]
    hub.emit(STREAM, events(*range(500)))
    hub.stop()
    assert rows(db) == list(range(500))
    assert hub.adapters() == {} and not hub.has_routes(STREAM)
    hub.emit(STREAM, events(1))  # nothing routes anywhere any more
    assert adapter.stats.published == 500


# ---- with_defaults ----------------------------------------------------------------------------------

DEFAULTS = Adapters(
    buffer_events=11, batch_events=22, linger_ms=2.5, retry_initial_ms=33, retry_max_ms=44, on_full="drop"
)


def test_with_defaults_fills_buffered_adapters_keys_left_out() -> None:
    entry = OutputAdapter("out", "rdbms", {"datasource": "db", "table": "t", "batch_events": 5})
    assert with_defaults(entry, DEFAULTS) == {
        "datasource": "db",
        "table": "t",
        "batch_events": 5,
        "buffer_events": 11,
        "linger_ms": 2.5,
        "retry_initial_ms": 33,
        "retry_max_ms": 44,
        "on_full": "drop",
    }
    assert entry.config == {"datasource": "db", "table": "t", "batch_events": 5}  # not modified


def test_with_defaults_http_and_wso2event() -> None:
    http = with_defaults(OutputAdapter("h", "http", {"url": "http://127.0.0.1:1/x"}), DEFAULTS)
    assert http == {
        "url": "http://127.0.0.1:1/x",
        "buffer_events": 11,
        "batch_events": 22,
        "linger_ms": 2.5,
        "retry_initial_ms": 33,
        "retry_max_ms": 44,
        "on_full": "drop",
    }
    wso2 = with_defaults(OutputAdapter("w", "wso2event", {}), DEFAULTS)
    # no batches there
    assert wso2 == {"buffer_events": 11, "retry_initial_ms": 33, "retry_max_ms": 44, "on_full": "drop"}


def test_with_defaults_leaves_unbuffered_adapters_alone() -> None:
    assert with_defaults(OutputAdapter("l", "logger", {"prefix": "x: "}), DEFAULTS) == {"prefix": "x: "}


def test_the_defaults_reach_the_built_adapter(db: Path) -> None:
    hub = OutputHub(DEFAULTS, stop_timeout=5.0)
    try:
        hub.configure([table_adapter()], [], [DataSource("db", f"sqlite:///{db}")], attributes)
        buffering = hub.adapters()["out"].buffering  # type: ignore[attr-defined]
        assert (buffering.buffer_events, buffering.batch_events, buffering.linger_ms) == (11, 22, 2.5)
        assert (buffering.retry_initial_ms, buffering.retry_max_ms) == (33, 44)
    finally:
        hub.stop()


def test_references_in_data_source_urls_are_expanded_from_the_node_environment(tmp_path: Path) -> None:
    hub = OutputHub(Adapters(), stop_timeout=5.0, env={"OUT_DIR": str(tmp_path)})
    try:
        sources = [DataSource("db", "sqlite:///${OUT_DIR}/out.db")]
        assert hub.configure([table_adapter()], [map_formatter()], sources, attributes) == []
        hub.emit(STREAM, events(7))
        assert hub.flush(5.0)
        assert rows(tmp_path / "out.db") == [7]
    finally:
        hub.stop()


def test_an_unset_reference_leaves_the_adapter_out_naming_the_entry_and_variable(hub: OutputHub) -> None:
    sources = [DataSource("db", "mysql+pymysql://cep:${CEPHEUS_TEST_UNSET}@db/cep")]
    adapters = [table_adapter(), OutputAdapter("log", "logger", {"prefix": "${CEPHEUS_TEST_UNSET_TOO}"})]
    problems = hub.configure(adapters, [map_formatter()], sources, attributes)
    assert [(p.kind, p.name) for p in problems] == [
        ("adapter", "out"),
        ("adapter", "log"),
        ("formatter", "f"),
    ]
    assert problems[0].message.startswith(
        "data source 'db': url: environment variable CEPHEUS_TEST_UNSET is not set"
    )
    assert problems[1].message.startswith(
        "output adapter 'log': config.prefix: environment variable CEPHEUS_TEST_UNSET_TOO is not set"
    )


def test_a_replaced_adapter_delivers_what_it_holds_before_its_successor_writes(
    hub: OutputHub, db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Both write the same sources: a successor writing first could move a mark past the
    records its predecessor still holds, which would then be skipped."""
    sources = [DataSource("db", f"sqlite:///{db}")]
    hub.configure([table_adapter()], [map_formatter()], sources, attributes)
    with caplog.at_level(logging.INFO, logger="app.node.outputs"):
        assert hub.configure([table_adapter(batch_events=50)], [map_formatter()], sources, attributes) == []
    lines = [r.getMessage() for r in caplog.records]
    stopped = next(i for i, line in enumerate(lines) if line.startswith("output adapter out stopped"))
    started = next(i for i, line in enumerate(lines) if line.startswith("output adapter out (rdbms) started"))
    assert stopped < started

"""`cepheus apply` / `cepheus export`: round trips, idempotence, atomicity, positions, references."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import sqlalchemy
import yaml
from click.testing import CliRunner

from app.commands.registry import COMMANDS
from app.declarative import Applied, DeclarativeError, apply_file, dump_document, export_document, export_file
from app.registry import Outcome, Registry
from app.registry.toml_writer import TomlWriteError, dumps

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "pizza"
GOOD_PLAN = "define stream S (x int);\nfrom S[x > 1] select x insert into Out;\n"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    registry.migrate()
    yield registry
    registry.close()


@pytest.fixture
def pizza(tmp_path: Path) -> Path:
    """A copy of the pizza sample to edit."""
    target = tmp_path / "pizza"
    shutil.copytree(SAMPLE, target)
    return target / "cepheus.toml"


def outcomes(results: list[Applied]) -> set[Outcome]:
    return {r.outcome for r in results}


def test_the_pizza_sample_applies_and_a_second_apply_changes_nothing(registry: Registry) -> None:
    first = apply_file(registry, SAMPLE / "cepheus.toml")
    assert [str(r) for r in first] == [
        "stream orderStream:1.0.0: created",
        "stream deliveryStream:1.0.0: created",
        "stream deliveredOrders:1.0.0: created",
        "datasource pizzaDB: created",
        "adapter deliveredOrdersTable: created",
        "receiver databridge: created",
        "plan pizzaOrderProcessingPlan: created",
        "formatter deliveredOrdersToTable: created",
    ]
    revision = registry.revision()
    assert outcomes(apply_file(registry, SAMPLE / "cepheus.toml")) == {Outcome.UNCHANGED}
    assert registry.revision() == revision
    plan = registry.get_plan("pizzaOrderProcessingPlan")
    assert plan is not None and plan.text == (SAMPLE / "plan.siddhi").read_text()
    assert (plan.distributed_mode, plan.ha_mode) == ("redundant", "failover")
    delivery = registry.get_stream("deliveryStream:1.0.0")
    assert delivery is not None and delivery.siddhi_attributes()[:2] == [
        ("meta_deliveryNo", "string"),
        ("orderNo", "string"),
    ]
    adapter = registry.get_adapter("deliveredOrdersTable")
    assert adapter is not None and adapter.config["key_columns"] == ["customer_name"]
    formatter = registry.get_formatter("deliveredOrdersToTable")
    assert formatter is not None
    assert formatter.mappings == {"sum_order_id": "sumOrderId", "customer_name": "customerName"}


@pytest.mark.parametrize("suffix", ["toml", "yaml"])
def test_export_round_trips(registry: Registry, tmp_path: Path, suffix: str) -> None:
    apply_file(registry, SAMPLE / "cepheus.toml")
    exported = tmp_path / f"export.{suffix}"
    export_file(registry, exported)
    assert outcomes(apply_file(registry, exported)) == {Outcome.UNCHANGED}
    other = Registry(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        other.migrate()
        assert outcomes(apply_file(other, exported)) == {Outcome.CREATED}
        assert export_document(other) == export_document(registry)
    finally:
        other.close()


def test_export_can_write_plans_as_files(registry: Registry, tmp_path: Path) -> None:
    apply_file(registry, SAMPLE / "cepheus.toml")
    export_file(registry, tmp_path / "out" / "all.toml", plan_dir=tmp_path / "out" / "plans")
    doc = tomllib.loads((tmp_path / "out" / "all.toml").read_text())
    assert doc["plans"][0]["file"] == "plans/pizzaOrderProcessingPlan.siddhi"
    assert outcomes(apply_file(registry, tmp_path / "out" / "all.toml")) == {Outcome.UNCHANGED}


def test_a_changed_entry_is_the_only_update(registry: Registry, pizza: Path) -> None:
    apply_file(registry, pizza)
    pizza.write_text(pizza.read_text().replace('ha_mode = "failover"', 'ha_mode = "full-active-active"'))
    changed = [str(r) for r in apply_file(registry, pizza) if r.outcome is not Outcome.UNCHANGED]
    assert changed == ["plan pizzaOrderProcessingPlan: updated"]
    assert [(c.kind, c.name) for c in registry.changes_since(1)] == [("plan", "pizzaOrderProcessingPlan")]


def test_a_bad_plan_is_shown_at_its_position_and_nothing_is_written(registry: Registry, pizza: Path) -> None:
    plan = pizza.parent / "plan.siddhi"
    plan.write_text(plan.read_text().replace("select time,", "select time"))
    with pytest.raises(DeclarativeError) as info:
        apply_file(registry, pizza)
    assert str(info.value).startswith(f"{plan}:9:")
    assert registry.revision() == 0 and registry.list_streams() == []


def test_a_plan_that_does_not_match_its_stream_rolls_everything_back(registry: Registry, pizza: Path) -> None:
    pizza.write_text(pizza.read_text().replace('{ name = "orderInfo", type = "STRING" },\n', ""))
    with pytest.raises(DeclarativeError, match="does not match the definition of orderStream:1.0.0") as info:
        apply_file(registry, pizza)
    assert str(info.value).startswith(f"{pizza.parent / 'plan.siddhi'}:2:1: ")
    assert registry.revision() == 0 and registry.list_streams() == [] and registry.list_plans() == []


def test_a_formatter_may_refer_to_what_the_registry_already_has(
    registry: Registry, pizza: Path, tmp_path: Path
) -> None:
    apply_file(registry, pizza)
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        "formatters:\n"
        "  - {name: asJson, stream: 'deliveredOrders:1.0.0', adapter: deliveredOrdersTable, type: json}\n"
    )
    assert [str(r) for r in apply_file(registry, extra)] == ["formatter asJson: created"]


def test_unknown_references_are_errors_and_write_nothing(registry: Registry, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "[[streams]]\nname = 'S'\npayload = { x = 'int' }\n\n"
        "[[formatters]]\nname = 'f'\nstream = 'S:1.0.0'\nadapter = 'missing'\ntype = 'json'\n"
    )
    with pytest.raises(DeclarativeError, match="formatter 'f': output adapter 'missing' does not exist"):
        apply_file(registry, bad)
    bad.write_text("[[adapters]]\nname = 'a'\ntype = 'rdbms'\ndatasource = 'nowhere'\n")
    with pytest.raises(DeclarativeError, match="data source 'nowhere' does not exist"):
        apply_file(registry, bad)
    assert registry.revision() == 0


def test_entry_errors_name_the_entry_and_key_all_at_once(registry: Registry, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "colour = 1\n"
        "[[streams]]\nname = 'S'\nversoin = '1.0.0'\n"
        "[[plans]]\nname = 'p'\ntext = 'define stream S (x int);'\nha_mode = 'failover'\n"
        "[[receivers]]\nname = 'r'\ntype = 'kafka'\n"
    )
    with pytest.raises(DeclarativeError) as info:
        apply_file(registry, bad)
    assert info.value.problems == [
        f"{bad}: unknown section 'colour' (known: streams, plans, receivers, datasources, adapters, formatters)",
        f"{bad}: streams[0]: unknown key 'versoin' (known: name, version, description, meta, correlation, payload)",
        f"{bad}: plans[0]: plan 'p': ha_mode applies only to distributed_mode = 'redundant' (this plan is 'none')",
        f"{bad}: receivers[0]: receiver 'r': type must be one of thrift, http (got 'kafka')",
    ]


def test_inline_plans_take_their_name_from_the_text_and_errors_point_into_the_file(
    registry: Registry, tmp_path: Path
) -> None:
    doc = tmp_path / "inline.yaml"
    doc.write_text(yaml.safe_dump({"plans": [{"text": "@Plan:name('tiny')\n" + GOOD_PLAN}]}))
    assert [str(r) for r in apply_file(registry, doc)] == ["plan tiny: created"]
    doc.write_text(
        yaml.safe_dump(
            {
                "plans": [
                    {"name": "broken", "text": "define stream S (x int);\nfrom T select x insert into O;\n"}
                ]
            }
        )
    )
    with pytest.raises(DeclarativeError) as info:
        apply_file(registry, doc)
    assert str(info.value).startswith(f"{doc}:plans[0].text:2:6: ")
    doc.write_text(yaml.safe_dump({"plans": [{"text": "define stream S (x int;\n"}]}))
    with pytest.raises(DeclarativeError) as info:
        apply_file(registry, doc)
    assert str(info.value).startswith(f"{doc}:plans[0].text:1:")


def test_dry_run_reports_and_writes_nothing(registry: Registry) -> None:
    results = apply_file(registry, SAMPLE / "cepheus.toml", dry_run=True)
    assert outcomes(results) == {Outcome.CREATED}
    assert registry.revision() == 0 and registry.list_plans() == []


def test_toml_writer_keeps_plan_text_readable_and_exact() -> None:
    doc = {"plans": [{"name": "p", "text": "@info(name='q')\nfrom S select \"a\\b\"\n", "n": None}]}
    with pytest.raises(TomlWriteError, match=r"plans.n: TOML has no null"):
        dumps(doc)
    del doc["plans"][0]["n"]
    text = dumps(doc)
    assert "text = '''\n@info(name='q')\n" in text
    assert tomllib.loads(text) == doc
    for tricky in ["ends with '", "has ''' inside\n", "control \x01\n", "crlf\r\n"]:
        assert tomllib.loads(dumps({"plans": [{"text": tricky}]})) == {"plans": [{"text": tricky}]}


def test_cli_applies_and_exports_with_the_configured_registry(tmp_path: Path) -> None:
    conf = tmp_path / "cepheus.toml"
    conf.write_text(f"[registry]\nurl = 'sqlite:///{tmp_path / 'cli.db'}'\n")
    runner = CliRunner()
    group = _group()

    result = runner.invoke(group, ["apply", str(SAMPLE / "cepheus.toml"), "--config", str(conf)])
    assert result.exit_code == 1 and "run `cepheus db upgrade`" in result.stderr

    assert runner.invoke(group, ["db", "upgrade", "--config", str(conf)]).exit_code == 0
    result = runner.invoke(group, ["apply", str(SAMPLE / "cepheus.toml"), "--config", str(conf)])
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("8 created, 0 updated, 0 unchanged; registry revision 1\n")
    result = runner.invoke(group, ["apply", str(SAMPLE / "cepheus.toml"), "--config", str(conf)])
    assert "0 created, 0 updated, 8 unchanged" in result.stdout

    result = runner.invoke(group, ["export", "--format", "yaml", "--config", str(conf)])
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["formatters"][0]["name"] == "deliveredOrdersToTable"

    broken = tmp_path / "broken.toml"
    broken.write_text(
        "[[plans]]\nname = 'p'\ntext = \"define stream S (x int);\\nfrom S selec x insert into O;\"\n"
    )
    result = runner.invoke(group, ["apply", str(broken), "--config", str(conf)])
    assert result.exit_code == 1 and result.stderr.startswith(f"{broken}:plans[0].text:2:")


def test_dump_document_rejects_unknown_formats() -> None:
    with pytest.raises(DeclarativeError, match="unknown format 'json'"):
        dump_document({}, "json")


def _group() -> click.Group:
    @click.group()
    def cli() -> None:
        pass

    for command in COMMANDS:
        cli.add_command(command)
    return cli


SECRET_FILE = """
[[datasources]]
name = "db"
url = "mysql+pymysql://cep:${DB_PASSWORD}@db/cep"
pool_size = 5

[[adapters]]
name = "fwd"
type = "wso2event"
receiverURL = "tcp://${PEER:-127.0.0.1}:7611"
username = "admin"
password = "${FWD_PASSWORD}"

[[receivers]]
name = "${RECEIVER_NAME:-databridge}"
type = "thrift"
"""


def test_references_in_connection_settings_are_stored_as_written(registry: Registry, tmp_path: Path) -> None:
    path = tmp_path / "secrets.toml"
    path.write_text(SECRET_FILE)
    apply_file(registry, path, env={"DB_PASSWORD": "s3cret", "FWD_PASSWORD": "hunter2"})

    with registry.engine.connect() as conn:
        stored = "\n".join(
            str(row)
            for table in ("cep_datasources", "cep_adapters")
            for row in conn.execute(sqlalchemy.text(f"SELECT * FROM {table}"))
        )
    assert "s3cret" not in stored and "hunter2" not in stored
    assert "${DB_PASSWORD}" in stored and "${FWD_PASSWORD}" in stored
    assert registry.get_receiver("databridge") is not None  # names are expanded on reading

    doc = export_document(registry)
    assert doc["datasources"] == [
        {"name": "db", "url": "mysql+pymysql://cep:${DB_PASSWORD}@db/cep", "pool_size": 5}
    ]
    assert doc["adapters"][0]["receiverURL"] == "tcp://${PEER:-127.0.0.1}:7611"
    exported = tmp_path / "exported.toml"
    export_file(registry, exported)
    assert outcomes(apply_file(registry, exported, env={})) == {Outcome.UNCHANGED}


def test_a_reference_unset_at_apply_is_stored_and_a_url_is_checked_once_expanded(
    registry: Registry, tmp_path: Path
) -> None:
    path = tmp_path / "url.toml"
    path.write_text('[[datasources]]\nname = "db"\nurl = "${DB_URL}"\n')
    assert outcomes(apply_file(registry, path, env={})) == {Outcome.CREATED}
    with pytest.raises(
        DeclarativeError, match=r"data source 'db': url '\$\{DB_URL\}' \(once expanded\) is not"
    ):
        apply_file(registry, path, env={"DB_URL": "not a url"})
    path.write_text('[[datasources]]\nname = "db"\nurl = "sqlite:///${OPEN"\n')
    with pytest.raises(DeclarativeError, match="is not a variable reference"):
        apply_file(registry, path, env={})

"""`cepheus snapshot list|discard` on an SQLite registry: the table, JSON, what is removed, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli import main
from app.registry import Registry
from app.registry.snapshots import RegistrySnapshots
from tests.support.snapshots import meta_of


@dataclass
class Setup:
    conf: Path
    store: RegistrySnapshots

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(main, ["snapshot", *args, "--config", str(self.conf)])


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    conf = tmp_path / "cepheus.toml"
    conf.write_text(f"[registry]\nurl = 'sqlite:///{tmp_path / 'cepheus.db'}'\n", encoding="utf-8")
    with Registry(f"sqlite:///{tmp_path / 'cepheus.db'}") as registry:
        registry.migrate()
        yield Setup(conf, RegistrySnapshots(registry))


def test_list_shows_a_table_newest_first(setup: Setup) -> None:
    setup.store.save(meta_of(b"x" * 1536, "pizza", position=None), b"x" * 1536)
    setup.store.save(meta_of(b"y" * 100, "pizza", position=42), b"y" * 100)
    setup.store.save(meta_of(b"z", "fraud"), b"z")
    result = setup.run("list", "pizza")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "ID  PLAN   CREATED (UTC)        NODE         SIZE     INPUT POSITION  STATE FORMAT",
        "2   pizza  2026-11-23 22:30:15  node-1:9763  100 B    42              1",
        "1   pizza  2026-11-23 22:30:15  node-1:9763  1.5 KiB  -               1",
    ]
    assert [line.split()[:2] for line in setup.run("list").stdout.splitlines()[1:]] == [
        ["3", "fraud"],
        ["2", "pizza"],
        ["1", "pizza"],
    ]


def test_list_as_json(setup: Setup) -> None:
    meta = meta_of(b"state")
    setup.store.save(meta, b"state")
    result = setup.run("list", "--json")
    assert json.loads(result.stdout) == [
        {
            "id": 1,
            "plan": "pizza",
            "created_at": "2026-11-23T22:30:15.123456+00:00",
            "node": "node-1:9763",
            "size": 5,
            "input_log": None,
            "input_position": 7,
            "state_format": 1,
            "text_sha256": meta.text_sha256,
            "checksum": meta.checksum,
        }
    ]


def test_list_without_snapshots_says_so(setup: Setup) -> None:
    assert setup.run("list", "pizza").stdout == "plan 'pizza' has no snapshots\n"


def test_discard_one_prints_what_it_removed(setup: Setup) -> None:
    first = setup.store.save(meta_of(b"one"), b"one")
    second = setup.store.save(meta_of(b"two"), b"two")
    result = setup.run("discard", "pizza", "--id", str(first))
    assert result.exit_code == 0
    assert (
        result.stdout == f"discarded snapshot {first} of plan 'pizza' (taken 2026-11-23 22:30:15 UTC, 3 B)\n"
    )
    assert [m.id for m in setup.store.list("pizza")] == [second]


def test_discard_all_of_a_plan(setup: Setup) -> None:
    ids = [setup.store.save(meta_of(b"s%d" % n), b"s%d" % n) for n in range(2)]
    other = setup.store.save(meta_of(b"x", "fraud"), b"x")
    result = setup.run("discard", "pizza", "--all")
    assert result.stdout.splitlines() == [
        f"discarded snapshot {ids[1]} of plan 'pizza' (taken 2026-11-23 22:30:15 UTC, 2 B)",
        f"discarded snapshot {ids[0]} of plan 'pizza' (taken 2026-11-23 22:30:15 UTC, 2 B)",
        "plan 'pizza': 2 snapshots discarded",
    ]
    assert [m.id for m in setup.store.list_all()] == [other]


def test_discarding_a_snapshot_the_plan_does_not_have_is_an_error(setup: Setup) -> None:
    other = setup.store.save(meta_of(b"x", "fraud"), b"x")
    result = setup.run("discard", "pizza", "--id", str(other))
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: plan 'pizza' has no snapshot {other} (see `cepheus snapshot list pizza`)\n"
    )
    assert len(setup.store.list("fraud")) == 1


@pytest.mark.parametrize("args", [[], ["--id", "1", "--all"]], ids=["neither", "both"])
def test_discard_needs_either_id_or_all(setup: Setup, args: list[str]) -> None:
    result = setup.run("discard", "pizza", *args)
    assert result.exit_code == 2
    assert result.stderr.endswith("error: give either --id N or --all\n")


def test_a_registry_without_schema_is_an_error(tmp_path: Path) -> None:
    conf = tmp_path / "cepheus.toml"
    conf.write_text(f"[registry]\nurl = 'sqlite:///{tmp_path / 'empty.db'}'\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["snapshot", "list", "--config", str(conf)])
    assert result.exit_code == 1
    assert (
        result.stderr.startswith("error: the registry at sqlite:///")
        and "run `cepheus db upgrade`" in result.stderr
    )

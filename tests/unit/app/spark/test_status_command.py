"""`cepheus spark status`: what a Spark deployment last wrote into its checkpoint directory."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from app.cli import main
from app.spark.streaming import STATUS_FILE


def _query(name: str, active: bool, error: str | None = None) -> dict:
    return {
        "name": name,
        "id": "q-1",
        "active": active,
        "error": error,
        "batch": 7,
        "input_rows_per_second": 120.5,
        "processed_rows_per_second": 900.0,
        "batch_duration_ms": 140,
        "state_rows": 5,
        "state_bytes": 4096,
    }


def _write(tmp_path: Path, *queries: dict) -> None:
    status = {
        "plan": "rooms",
        "updated_ms": 0,
        "application": {"id": "local-1", "name": "cepheus", "master": "local[2]"},
        "inflow": "/var/handoff",
        "outflow": ["Hot", "Rise"],
        "queries": list(queries),
    }
    (tmp_path / STATUS_FILE).write_text(json.dumps(status))


def test_status_shows_the_application_and_each_query(tmp_path: Path) -> None:
    _write(tmp_path, _query("cepheus_rooms_main", True), _query("cepheus_rooms_partition1", True))
    result = CliRunner().invoke(main, ["spark", "status", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Spark application local-1 (cepheus) on local[2]" in result.output
    assert "outflow: Hot, Rise" in result.output
    line = next(x for x in result.output.splitlines() if x.startswith("cepheus_rooms_partition1"))
    assert line.split()[1:] == ["active", "7", "120.5", "900.0", "140", "5", "4096"]


def test_a_failed_query_is_named_with_its_reason_and_the_exit_code_says_so(tmp_path: Path) -> None:
    _write(tmp_path, _query("cepheus_rooms_main", False, "ValueError: bad row"))
    result = CliRunner().invoke(main, ["spark", "status", str(tmp_path)])
    assert result.exit_code == 3
    assert "failed" in result.output and "ValueError: bad row" in result.output


def test_a_directory_without_status_says_what_it_expected(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["spark", "status", str(tmp_path)])
    assert result.exit_code == 1
    assert "is it the checkpoint directory of a plan deployed on Spark?" in result.output


def test_status_of_a_plan_a_node_drives_found_under_its_spark_dir(tmp_path: Path) -> None:
    config = tmp_path / "cepheus.toml"
    config.write_text(f'[spark]\ndir = "{tmp_path / "spark"}"\n')
    checkpoints = tmp_path / "spark" / "rooms" / "0123456789ab" / "checkpoints"
    checkpoints.mkdir(parents=True)
    _write(checkpoints, _query("cepheus_rooms_main", True))
    result = CliRunner().invoke(main, ["spark", "status", "--plan", "rooms", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert "plan rooms: Spark application local-1" in result.output
    missing = CliRunner().invoke(main, ["spark", "status", "--plan", "other", "--config", str(config)])
    assert missing.exit_code == 1
    assert f"error: no Spark status of plan other under {tmp_path / 'spark' / 'other'}: " in missing.output
    neither = CliRunner().invoke(main, ["spark", "status"])
    assert neither.exit_code == 2 and "give either CHECKPOINT_DIR or --plan NAME" in neither.output

"""`cepheus validate` and `cepheus run`: positions, exit codes, atomic output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main

PLAN = "define stream S (sym string, price double);\nfrom S[price > 10] select sym, price insert into Out;\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "plan.siddhi").write_text(PLAN)
    return tmp_path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_validate_accepts_a_good_plan(files: Path) -> None:
    code, out, _ = invoke("validate", str(files / "plan.siddhi"))
    assert code == 0 and "ok" in out


def test_validate_prints_file_line_col_and_a_caret(tmp_path: Path) -> None:
    plan = tmp_path / "bad.siddhi"
    plan.write_text("define stream S (a int);\nfrom S[b > 1] select a insert into T;\n")
    code, _, err = invoke("validate", str(plan))
    assert code == 1
    assert err.splitlines() == [
        f"{plan}:2:8: unknown attribute 'b'",
        "    from S[b > 1] select a insert into T;",
        "           ^",
    ]


def test_validate_accepts_long_chains_and_locates_absurd_nesting(tmp_path: Path) -> None:
    whitelist = " or ".join(f"sym == 'S{i}'" for i in range(1000))
    total = " + ".join(["price"] * 1000)
    long = tmp_path / "long.siddhi"
    long.write_text(
        f"define stream S (sym string, price double);\nfrom S[{whitelist}] select {total} as t insert into Out;\n"
    )
    assert invoke("validate", str(long)) == (0, f"{long}: ok\n", "")
    deep = tmp_path / "deep.siddhi"
    deep.write_text(
        "define stream S (sym string, price double);\nfrom S["
        + "(" * 10_000
        + "price > 1"
        + ")" * 10_000
        + "] select sym insert into Out;\n"
    )
    code, _, err = invoke("validate", str(deep))
    assert code == 1
    assert err.startswith(f"{deep}:2:108: expression nested too deeply")


def test_run_writes_results_as_json_lines(files: Path) -> None:
    (files / "in.jsonl").write_text(
        '{"stream": "S", "timestamp": 1000, "data": ["a", 5.0]}\n{"stream": "S", "timestamp": 1001, "data": ["b", 15]}\n'
    )
    code, out, _ = invoke("run", str(files / "plan.siddhi"), "--input", str(files / "in.jsonl"))
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == [
        {"stream": "Out", "timestamp": 1001, "type": "current", "data": ["b", 15.0]}
    ]


def test_run_sends_into_a_stream_only_a_query_defines(tmp_path: Path) -> None:
    # as Siddhi's getInputHandler("Mid") does: Mid exists only through `insert into Mid`
    plan = tmp_path / "plan.siddhi"
    plan.write_text(
        "define stream S (sym string, price double);\n"
        "from S select sym, price insert into Mid;\n"
        "from Mid[price > 10] select sym insert into Out;\n"
    )
    (tmp_path / "in.jsonl").write_text('{"stream": "Mid", "timestamp": 1000, "data": ["c", 50.0]}\n')
    code, out, err = invoke("run", str(plan), "--input", str(tmp_path / "in.jsonl"))
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["stream"], r["data"]) for r in records] == [("Mid", ["c", 50.0]), ("Out", ["c"])]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "in.jsonl:2: not valid JSON"),
        ('{"stream": "Nope", "data": []}', "in.jsonl:2: unknown stream 'Nope'"),
        (
            '{"stream": "S", "data": ["a"]}',
            "in.jsonl:2: stream 'S' has 2 attributes, got 1 value",
        ),
        (
            '{"stream": "S", "data": ["a", "x"]}',
            "in.jsonl:2: stream 'S': attribute 'price': expected double, got string 'x'",
        ),
        (
            '{"stream": "S", "timestamp": "soon", "data": ["a", 1]}',
            "in.jsonl:2: 'timestamp' must be an integer",
        ),
    ],
)
def test_a_bad_input_line_stops_the_run_and_writes_nothing(files: Path, line: str, message: str) -> None:
    (files / "in.jsonl").write_text('{"stream": "S", "timestamp": 1000, "data": ["a", 50.0]}\n' + line + "\n")
    out = files / "out.jsonl"
    out.write_text("previous results\n")
    code, _, err = invoke(
        "run", str(files / "plan.siddhi"), "--input", str(files / "in.jsonl"), "--output", str(out)
    )
    assert code == 1
    assert message in err
    assert "Traceback" not in err
    assert out.read_text() == "previous results\n"  # untouched: results go to a temporary file first
    assert [p.name for p in files.iterdir() if p.name.startswith(".cepheus-run-")] == []


def test_run_output_file_is_replaced_on_success(files: Path) -> None:
    (files / "in.jsonl").write_text('{"stream": "S", "timestamp": 1000, "data": ["a", 50.0]}\n')
    out = files / "out.jsonl"
    code, _, err = invoke(
        "run", str(files / "plan.siddhi"), "--input", str(files / "in.jsonl"), "--output", str(out)
    )
    assert code == 0 and "1 event written" in err
    assert json.loads(out.read_text())["data"] == ["a", 50.0]


def test_run_rejects_an_invalid_plan_with_its_position(files: Path) -> None:
    (files / "plan.siddhi").write_text("define stream S (a int);\nfrom S select a insert T;\n")
    (files / "in.jsonl").write_text("")
    code, _, err = invoke("run", str(files / "plan.siddhi"), "--input", str(files / "in.jsonl"))
    assert code == 1 and ":2:24: expected 'into'" in err


def test_the_installed_command_never_shows_a_traceback(tmp_path: Path) -> None:
    cepheus = Path(sys.executable).parent / "cepheus"
    result = subprocess.run(
        [str(cepheus), "run", str(tmp_path / "missing.siddhi"), "--input", "x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "cannot read plan" in result.stderr and "Traceback" not in result.stderr


def cli_error_cases(tmp: Path) -> list[tuple[list[str], int, str]]:
    """(arguments, exit code, the last line of stderr) for error paths of every command."""
    missing = tmp / "missing"
    events = tmp / "e.jsonl"
    events.write_text("[1]\n")
    bad_config = tmp / "bad.toml"
    bad_config.write_text("[nonsense]\nx = 1\n")
    publish = ["publish", "--url", "tcp://127.0.0.1:1", "--stream", "s:1.0.0"]
    return [
        (["nope"], 2, "error: no such command 'nope'"),
        (["run"], 2, "error: missing argument 'PLAN'"),
        (["validate", str(tmp)], 2, f"error: invalid value for 'PLAN': File '{tmp}' is a directory"),
        (
            ["validate", f"{missing}.siddhi"],
            1,
            f"error: cannot read plan {missing}.siddhi: No such file or directory",
        ),
        ([*publish, str(events)], 2, "error: give the password with --password or CEPHEUS_PASSWORD"),
        (
            [*publish, "--password", "pw", "--definition", f"{missing}.json", str(events)],
            1,
            f"error: cannot read --definition {missing}.json: No such file or directory",
        ),
        (
            [*publish, "--password", "pw", "--insecure", "--ca-file", "c.pem", str(events)],
            2,
            "error: --insecure and --ca-file exclude each other",
        ),
        (["export", "--plan-dir", str(tmp)], 2, "error: --plan-dir needs --output"),
        (["db", "current", "--config", str(bad_config)], 1, "error: "),
        (["server", "--config", str(bad_config)], 1, "error: "),
    ]


def test_every_cli_error_without_a_position_starts_with_lower_case_error(tmp_path: Path) -> None:
    for args, code, last_line in cli_error_cases(tmp_path):
        result = CliRunner().invoke(main, args, env={"CEPHEUS_PASSWORD": None})
        assert result.exit_code == code, (args, result.stderr)
        assert "Error" not in result.stderr, args
        assert result.stderr.splitlines()[-1].startswith(last_line), (args, result.stderr)

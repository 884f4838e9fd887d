"""The `cepheus` command line. Errors are messages with a position, never tracebacks.

One convention for every command, as compilers have it: an error with a position starts with
it (`plan.siddhi:3:14: ...`, `events.jsonl:7: ...`); any other starts with `error: `, lower
case, click's own usage errors included (`_Cli` prints them so).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import click

import engine
from adapters.wording import counted
from app.commands.cluster import cluster
from app.commands.publish import publish
from app.commands.query import query
from app.commands.registry import COMMANDS
from app.commands.server import server
from app.commands.snapshot import snapshot
from app.commands.spark import spark
from app.replay import ReplayError, first_timestamp, replay
from app.spark.runner import run_on_spark


def _read_plan(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        msg = f"cannot read plan {path}: {exc.strerror}"
        raise click.ClickException(msg) from None
    except UnicodeDecodeError:
        msg = f"{path} is not UTF-8 text"
        raise click.ClickException(msg) from None


def _print_query_error(exc: engine.QueryError, path: str) -> None:
    click.echo(exc.format(path, with_source=True), err=True)


def _show(exc: click.ClickException) -> None:
    """Print a click error as `error: ...` (click itself writes `Error: ...`)."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        exc.show()  # the help text, not an error
        return
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        ctx = exc.ctx
        hint = ""
        if ctx.command.get_help_option(ctx) is not None:
            hint = f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.\n"
        click.echo(f"{ctx.get_usage()}\n{hint}", err=True, color=ctx.color)
    click.echo(f"error: {_lower(exc.format_message())}", err=True)


def _lower(message: str) -> str:
    """Click's sentences (`Missing argument 'PLAN'.`) in the style of ours (`missing argument 'PLAN'`)."""
    if message[1:2].islower():
        message = message[0].lower() + message[1:]
    return message[:-1] if message.endswith(".") and not message.endswith("..") else message


class _Cli(click.Group):
    """The `cepheus` group: click's standalone mode, with errors printed by `_show`."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as exc:
            _show(exc)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cepheus")
def main() -> None:
    """Cepheus: a high-availability complex event processor speaking SiddhiQL."""


@main.command()
@click.argument("plan", type=click.Path(dir_okay=False))
def validate(plan: str) -> None:
    """Check a SiddhiQL execution plan: exit 0 if valid, else print every error and exit 1."""
    text = _read_plan(plan)
    try:
        engine.validate(text)
    except engine.QueryError as exc:
        _print_query_error(exc, plan)
        sys.exit(1)
    click.echo(f"{plan}: ok")


@main.command()
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option(
    "--input",
    "input_path",
    required=True,
    help="events: JSON Lines (with --engine spark also CSV or Parquet; a file, a directory or a glob)",
)
@click.option(
    "--output", "output_path", type=click.Path(dir_okay=False), help="write results here (default: stdout)"
)
@click.option(
    "--engine", "engine_name", type=click.Choice(["local", "spark"]), default="local", show_default=True
)
@click.option("--master", default=None, help="with --engine spark: the Spark master URL (default local[*])")
@click.option(
    "--stream",
    "streams",
    multiple=True,
    help="write only this stream (repeatable; default: the plan's @Export streams, else every stream a query inserts into)",
)
@click.option(
    "--start-time",
    type=int,
    default=None,
    help="playback start in ms (default: 1000 for relative timelines, else the first timestamp)",
)
def run(
    plan: str,
    input_path: str,
    output_path: str | None,
    engine_name: str,
    master: str | None,
    streams: tuple[str, ...],
    start_time: int | None,
) -> None:
    """Replay INPUT through PLAN in playback time and print every event the plan emits."""
    text = _read_plan(plan)
    try:
        engine.validate(text)
    except engine.QueryError as exc:
        _print_query_error(exc, plan)
        sys.exit(1)
    if master is not None and engine_name != "spark":
        msg = "--master is for --engine spark"
        raise click.UsageError(msg)
    if engine_name == "spark":
        _run_spark(text, input_path, output_path, master, list(streams), start_time)
        return
    if os.path.isdir(input_path):
        msg = f"{input_path} is a directory: the local engine reads one JSON Lines file (--engine spark reads directories)"
        raise click.ClickException(msg)
    try:
        size = os.path.getsize(input_path)
        handle = open(input_path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        msg = f"cannot read {input_path}: {exc.strerror}"
        raise click.ClickException(msg) from None

    show_progress = sys.stderr.isatty()
    bar = click.progressbar(length=size, label="replaying", file=sys.stderr) if show_progress else None

    def lines() -> Iterator[tuple[int, str]]:
        for n, line in enumerate(handle, 1):
            if bar is not None:
                bar.update(len(line.encode("utf-8")))
            yield n, line

    tmp_path = None
    try:
        if output_path is None:
            out = sys.stdout
        else:
            directory = os.path.dirname(os.path.abspath(output_path))
            fd, tmp_path = tempfile.mkstemp(prefix=".cepheus-run-", dir=directory)
            out = os.fdopen(fd, "w", encoding="utf-8")
        try:
            if bar is not None:
                bar.__enter__()
            count = replay(
                text,
                lines(),
                out,
                filename=input_path,
                start_time=start_time,
                first_time=lambda: first_timestamp(input_path),
                streams=list(streams) or None,
            )
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
            handle.close()
            if out is not sys.stdout:
                out.close()
        if tmp_path is not None:
            os.replace(tmp_path, output_path)  # type: ignore[arg-type]
            tmp_path = None
            click.echo(f"{counted(count, 'event')} written to {output_path}", err=True)
    except ReplayError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except engine.CEPError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except UnicodeDecodeError:
        click.echo(f"{input_path}: not UTF-8 text", err=True)
        sys.exit(1)
    finally:
        if tmp_path is not None and os.path.exists(tmp_path):
            os.unlink(tmp_path)


def _run_spark(
    text: str,
    input_path: str,
    output_path: str | None,
    master: str | None,
    streams: list[str],
    start_time: int | None,
) -> None:
    """`cepheus run --engine spark`: same output, written the same way (a temporary file
    renamed into place)."""
    tmp_path = None
    try:
        if output_path is None:
            report = run_on_spark(
                text, input_path, sys.stdout, master=master, start_time=start_time, streams=streams
            )
        else:
            directory = os.path.dirname(os.path.abspath(output_path))
            fd, tmp_path = tempfile.mkstemp(prefix=".cepheus-run-", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                report = run_on_spark(
                    text, input_path, out, master=master, start_time=start_time, streams=streams
                )
            os.replace(tmp_path, output_path)
            tmp_path = None
            click.echo(f"{counted(report.written, 'event')} written to {output_path}", err=True)
    except ReplayError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except engine.CEPError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    finally:
        if tmp_path is not None and os.path.exists(tmp_path):
            os.unlink(tmp_path)


def _register_commands() -> None:
    for command in (*COMMANDS, server, publish, snapshot, cluster, query, spark):
        main.add_command(command)


_register_commands()


def entry() -> None:
    """Console entry point: never shows a traceback to the user."""
    try:
        main(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)
    except engine.CEPError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug: say so plainly, without a traceback
        click.echo(f"internal error: {type(exc).__name__}: {exc} (please report this)", err=True)
        sys.exit(2)


if __name__ == "__main__":
    entry()

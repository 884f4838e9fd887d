"""`cepheus publish`: send events from a JSON Lines or CSV file to nodes over the Data Bridge protocol.

`--url` takes WSO2's receiver URL syntax (`adapters.thrift.endpoints`): `tcp://a|tcp://b` fails
over, `tcp://a,tcp://b` load-balances, `{tcp://a},{tcp://b}` sends every event to each group.
Every event must reach at least one group (then the exit status is 0); a group that is down is
retried in the background, reported, and waited for at the end (`--wait`). The login (and an
`ssl://` receiver) goes over TLS with the server's certificate verified: against the system's
CAs, or `--ca-file` (e.g. the node's `var/tls/cert.pem`); `--insecure` skips verification,
with a warning.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import islice

import click

from adapters.thrift import (
    ForwarderSettings,
    NotDelivered,
    Publisher,
    ReceiverGroups,
    Report,
    UntrustedCertificate,
    WireEvent,
)
from adapters.wording import counted
from app.commands.registry import config_option, registry_from_config
from app.node.catalog import KnownStream, known
from app.persistence.journal import wall_ms
from app.publishing import FORMATS, PublishInputError, read_events, stream_from_definition
from engine.errors import CEPError, ConfigError

_UNTRUSTED_HINT = "trust it with --ca-file FILE (for a Cepheus node: its var/tls/cert.pem) or skip the check with --insecure"


def _stream(stream_id: str, definition: str | None, config_path: str | None) -> KnownStream:
    if definition is not None:
        try:
            with open(definition, encoding="utf-8") as f:
                found = stream_from_definition(f.read())
        except OSError as exc:
            msg = f"cannot read --definition {definition}: {exc.strerror}"
            raise click.ClickException(msg) from None
        except PublishInputError as exc:
            msg = f"--definition {definition}: {exc}"
            raise click.ClickException(msg) from None
        if found.id != stream_id:
            msg = f"--definition {definition} defines {found.id}, not {stream_id}"
            raise click.ClickException(msg)
        return found
    with registry_from_config(config_path) as registry:
        registered = registry.get_stream(stream_id)
    if registered is None:
        msg = f"stream {stream_id} is not in the registry; give its definition with --definition FILE"
        raise click.ClickException(msg)
    return known(registered)


def _batches(events: Iterable[tuple[int, WireEvent]], size: int) -> Iterator[list[tuple[int, WireEvent]]]:
    it = iter(events)
    while batch := list(islice(it, size)):
        yield batch


@click.command("publish")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--url",
    required=True,
    help="receivers, e.g. tcp://127.0.0.1:7611 (ssl:// for TLS); tcp://a|tcp://b fails over, "
    "tcp://a,tcp://b load-balances, {tcp://a},{tcp://b} sends every event to each group",
)
@click.option(
    "--auth-url",
    default=None,
    help="authenticators, grouped as --url (default: ssl://<host>:<port+100> for tcp://)",
)
@click.option(
    "--stream", "stream_id", required=True, help="name:version of the stream, e.g. orderStream:1.0.0"
)
@click.option(
    "--definition",
    type=click.Path(dir_okay=False),
    default=None,
    help="the stream's definition (Data Bridge JSON); it is defined on every receiver first. "
    "Default: read it from the registry of --config",
)
@config_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="default: by extension (.csv, else jsonl)",
)
@click.option("--username", default="admin", show_default=True)
@click.option("--password", envvar="CEPHEUS_PASSWORD", default=None, help="default: $CEPHEUS_PASSWORD")
@click.option(
    "--ca-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="trust this certificate or CA, e.g. the node's var/tls/cert.pem (default: the system's CAs)",
)
@click.option("--insecure", is_flag=True, help="do not verify the server's TLS certificate")
@click.option("--bundle-size", type=click.IntRange(1, 100_000), default=100, show_default=True)
@click.option(
    "--rate", type=click.FloatRange(min=0, min_open=True), default=None, help="at most N events per second"
)
@click.option(
    "--file-timestamps",
    is_flag=True,
    help="send the file's timestamps (epoch ms) instead of the time of sending",
)
@click.option(
    "--buffer",
    "buffer_events",
    type=click.IntRange(1, None),
    default=100_000,
    show_default=True,
    help="events kept per group for a group that is behind (beyond, they are dropped and counted)",
)
@click.option(
    "--timeout",
    "timeout_seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="seconds to wait for a receiver's answer before it counts as failed (and the next takes over)",
)
@click.option(
    "--wait",
    "wait_seconds",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="at the end, how long to wait for groups that are behind (down or retrying)",
)
def publish(
    file: str,
    url: str,
    auth_url: str | None,
    stream_id: str,
    definition: str | None,
    config_path: str | None,
    fmt: str | None,
    username: str,
    password: str | None,
    ca_file: str | None,
    insecure: bool,
    bundle_size: int,
    rate: float | None,
    file_timestamps: bool,
    buffer_events: int,
    timeout_seconds: float,
    wait_seconds: float,
) -> None:
    """Send the events in FILE (JSON Lines or CSV; - for stdin) to Cepheus or WSO2 receivers."""
    if password is None:
        msg = "give the password with --password or CEPHEUS_PASSWORD"
        raise click.UsageError(msg)
    if ":" not in stream_id:
        stream_id += ":1.0.0"
    if insecure and ca_file is not None:
        msg = "--insecure and --ca-file exclude each other"
        raise click.UsageError(msg)
    if buffer_events < bundle_size:
        msg = f"--buffer {buffer_events} must hold at least one bundle (--bundle-size {bundle_size})"
        raise click.UsageError(msg)
    try:
        ReceiverGroups.parse(url, auth_url)
    except ConfigError as exc:
        hint = "'--auth-url'" if str(exc).startswith("authenticatorURL") else "'--url'"
        raise click.BadParameter(str(exc), param_hint=hint) from None
    stream = _stream(stream_id, definition, config_path)
    stdin = file == "-"
    total = 0
    if not stdin:  # check the whole file before sending anything
        try:
            total = sum(1 for _ in read_events(file, stream, fmt, now=wall_ms))
        except OSError as exc:
            msg = f"cannot read {file}: {exc.strerror}"
            raise click.ClickException(msg) from None
        except PublishInputError as exc:
            raise click.ClickException(str(exc)) from None
    started = time.monotonic()
    show = sys.stderr.isatty() and not stdin
    bar = click.progressbar(length=total, label="publishing", file=sys.stderr) if show else None
    if insecure:
        click.echo("warning: not verifying the server's TLS certificate (--insecure)", err=True)
    settings = ForwarderSettings(
        url,
        username,
        password,
        authenticator_url=auth_url,
        buffer_events=buffer_events,
        bundle_size=bundle_size,
        retry_max_ms=2_000,
        ca_file=ca_file,
        insecure=insecure,
        timeout_seconds=timeout_seconds,
    )
    publisher = Publisher(settings, stream.wire, define_stream=definition is not None)
    failure: str | None = None
    with _receiver_warnings():
        publisher.start()
        try:
            handle = sys.stdin if stdin else None
            events = read_events(
                file, stream, fmt, now=wall_ms, use_file_timestamps=file_timestamps, handle=handle
            )
            step = bundle_size if rate is None else max(1, min(bundle_size, int(rate // 10) or 1))
            sent = 0
            for batch in _batches(events, step):
                publisher.publish([e for _, e in batch])
                sent += len(batch)
                if bar is not None:
                    bar.update(len(batch))
                if rate is not None:
                    ahead = started + sent / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
        except NotDelivered as exc:
            untrusted = any(isinstance(e, UntrustedCertificate) for _, e in exc.errors)
            failure = f"{exc}; {_UNTRUSTED_HINT}" if untrusted else str(exc)
            wait_seconds = 0.0  # every group is down: nothing to wait for
        except PublishInputError as exc:
            failure = f"{exc}; the events before it were sent"
        except CEPError as exc:
            failure = f"{url}: {exc}"
        finally:
            if bar is not None:
                bar.render_finish()
            report = publisher.close(wait_seconds)
    elapsed = max(time.monotonic() - started, 1e-9)
    name = "stdin" if stdin else os.path.basename(file)
    reached = report.reached
    if reached or failure is None:
        click.echo(
            f"published {counted(reached, 'event')} of {stream.id} from {name} to {url} in {elapsed:.2f} s ({reached / elapsed:,.0f}/s)",
            err=True,
        )
    if _worth_detailing(report, failure is not None):
        for i, group in enumerate(report.groups, 1):
            click.echo(f"  group {i} {group.describe()}", err=True)
    if failure is not None:
        _fail(f"{failure}; {counted(reached, 'event')} {'was' if reached == 1 else 'were'} sent")
    if report.lost:
        _fail(f"{counted(report.lost, 'event')} reached no receiver group")


def _worth_detailing(report: Report, failed: bool) -> bool:
    """Whether the summary needs a line per group: several receivers, or one with trouble that
    the error message does not already tell."""
    groups = report.groups
    if len(groups) > 1 or len(groups[0].receivers) > 1:
        return True
    group = groups[0]
    return not failed and bool(group.pending or group.dropped or group.rejected or report.lost)


class _Warnings(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


@contextmanager
def _receiver_warnings() -> Iterator[None]:
    """Show the publisher's warnings (a receiver down, a buffer full) on stderr while it runs."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Warnings())
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("adapters.thrift")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)

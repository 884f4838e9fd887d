"""`cepheus publish`: send events from a JSON Lines or CSV file to a node over the Data Bridge protocol.

The login (and an `ssl://` receiver) goes over TLS with the server's certificate verified:
against the system's CAs, or `--ca-file` (e.g. the node's `var/tls/cert.pem`); `--insecure`
skips verification, with a warning.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from itertools import islice

import click

from adapters.thrift import DataBridgeClient, UntrustedCertificate, WireEvent
from adapters.wording import counted
from app.commands.registry import config_option, registry_from_config
from app.node.catalog import KnownStream, known
from app.node.journal import wall_ms
from app.publishing import FORMATS, PublishInputError, read_events, stream_from_definition
from engine.errors import CEPError


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
@click.option("--url", required=True, help="receiver, e.g. tcp://127.0.0.1:7611 (or ssl://host:7711)")
@click.option("--auth-url", default=None, help="authenticator (default: ssl://<host>:<port+100> for tcp://)")
@click.option(
    "--stream", "stream_id", required=True, help="name:version of the stream, e.g. orderStream:1.0.0"
)
@click.option(
    "--definition",
    type=click.Path(dir_okay=False),
    default=None,
    help="the stream's definition (Data Bridge JSON); it is defined on the node first. "
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
) -> None:
    """Send the events in FILE (JSON Lines or CSV; - for stdin) to a Cepheus or WSO2 receiver."""
    if password is None:
        msg = "give the password with --password or CEPHEUS_PASSWORD"
        raise click.UsageError(msg)
    if ":" not in stream_id:
        stream_id += ":1.0.0"
    if insecure and ca_file is not None:
        msg = "--insecure and --ca-file exclude each other"
        raise click.UsageError(msg)
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
    sent = 0
    started = time.monotonic()
    show = sys.stderr.isatty() and not stdin
    bar = click.progressbar(length=total, label="publishing", file=sys.stderr) if show else None
    if insecure:
        click.echo("warning: not verifying the server's TLS certificate (--insecure)", err=True)
    try:
        with DataBridgeClient(
            url,
            auth_url,
            username=username,
            password=password,
            bundle_size=bundle_size,
            ca_file=ca_file,
            insecure=insecure,
        ) as client:
            if definition is not None:
                client.define_stream(stream.wire)
            else:
                client.add_definition(stream.wire)
            handle = sys.stdin if stdin else None
            events = read_events(
                file, stream, fmt, now=wall_ms, use_file_timestamps=file_timestamps, handle=handle
            )
            step = bundle_size if rate is None else max(1, min(bundle_size, int(rate // 10) or 1))
            for batch in _batches(events, step):
                client.publish([e for _, e in batch])
                sent += len(batch)
                if bar is not None:
                    bar.update(len(batch))
                if rate is not None:
                    ahead = started + sent / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
    except UntrustedCertificate as exc:
        _fail(
            f"{exc}; trust it with --ca-file FILE (for a Cepheus node: its var/tls/cert.pem) or skip the check with --insecure"
        )
    except PublishInputError as exc:
        _fail(f"{exc}; {counted(sent, 'event')} before it {'was' if sent == 1 else 'were'} sent")
    except CEPError as exc:
        _fail(f"{url}: {exc}; {counted(sent, 'event')} {'was' if sent == 1 else 'were'} sent")
    finally:
        if bar is not None:
            bar.render_finish()
    elapsed = max(time.monotonic() - started, 1e-9)
    name = "stdin" if stdin else os.path.basename(file)
    click.echo(
        f"published {counted(sent, 'event')} of {stream.id} from {name} to {url} in {elapsed:.2f} s ({sent / elapsed:,.0f}/s)",
        err=True,
    )


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)

"""The pizza-shop publisher of WSO2 CEP 3.x (PROTOCOL-databridge.md §11.1), in Python.

Logs in over TLS (`connect` on port + 100), looks the stream up with `findStreamId`, defines
it with the sample's single-quoted JSON when the node does not know it, and publishes on the
plain port: five orders, then (with a new login) five deliveries. Events are sent on the
timeline of `samples/pizza/events.jsonl` (orders a second apart, deliveries 10 to 55 s after
the first order), so the plan's 30-second window gives `[1, Tom]`, `[2, John]`, `[3, Ratha]`.
The node's TLS certificate is verified: pass the node's `var/tls/cert.pem` as `--ca-file`.

`--url` takes WSO2's receiver URL syntax instead of `--host`/`--port`: `tcp://a|tcp://b` fails
over, `tcp://a,tcp://b` load-balances, `{tcp://a},{tcp://b}` sends every event to each group
(`--auth-url` groups the same way). Every receiver looks the stream up (and defines it) before
its first event; a group that is down is retried and reported, and is not fatal while another
group takes the events.

    python scripts/pizza_shop_publisher.py --port 7611 --ca-file var/tls/cert.pem --password "$CEPHEUS_ADMIN_PASSWORD"
    python scripts/pizza_shop_publisher.py --url '{tcp://n1:7611|tcp://n2:7611},{tcp://n3:7611}' ...
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from adapters.thrift import (
    DataBridgeClient,
    ForwarderSettings,
    NotDelivered,
    Publisher,
    ReceiverGroups,
    UntrustedCertificate,
    WireEvent,
    parse_definition,
)
from adapters.wording import counted
from engine.errors import CEPError, ConfigError

TIMELINE = Path(__file__).resolve().parent.parent / "samples" / "pizza" / "events.jsonl"

ORDER_DEFINITION = (
    "{ 'name':'orderStream', 'version':'1.0.0', 'nickName': 'Analytics Statistics Information',"
    " 'description': 'Details of Analytics Statistics', 'payloadData':["
    " {'name':'orderNo','type':'STRING'}, {'name':'customerName','type':'STRING'},"
    " {'name':'telephoneNo','type':'STRING'}, {'name':'orderInfo','type':'STRING'},"
    " {'name':'orderedTime','type':'STRING'} ] }"
)
DELIVERY_DEFINITION = (
    "{ 'name':'deliveryStream', 'version':'1.0.0', 'nickName': 'Analytics Statistics Information',"
    " 'description': 'Details of Analytics Statistics', 'metaData':[ {'name':'deliveryNo','type':'STRING'} ],"
    " 'payloadData':[ {'name':'orderNo','type':'STRING'}, {'name':'areaName','type':'STRING'},"
    " {'name':'time','type':'LONG'}, {'name':'totalBill','type':'DOUBLE'},"
    " {'name':'deliveredBy','type':'STRING'} ] }"
)


def load_timeline(path: Path) -> list[tuple[str, int, list[Any]]]:
    """(stream, offset ms from the first event, values) for every event of the seed."""
    events = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            if "stream" in item:
                events.append((item["stream"], item["timestamp"], item["data"]))
    first = events[0][1]
    return [(stream, ts - first, data) for stream, ts, data in events]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def wait_until(start: float, offset_ms: int) -> None:
    delay = start + offset_ms / 1000 - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def publish_stream(
    args: argparse.Namespace, definition: str, events: list[tuple[int, list[Any]]], start: float
) -> bool:
    """Publish one stream's events on the timeline; False when some reached no receiver group."""
    wire = parse_definition(definition)

    def look_up_or_define(client: DataBridgeClient) -> None:  # on every receiver, before its first event
        if client.find_stream_id(wire.name, wire.version) is None:
            client.define_stream(definition)
            print(f"defined {wire.stream_id} at {client.endpoint.receiver}", flush=True)

    settings = ForwarderSettings(
        args.url,
        args.username,
        args.password,
        authenticator_url=args.auth_url,
        retry_max_ms=2_000,
        ca_file=args.ca_file,
        insecure=args.insecure,
    )
    publisher = Publisher(settings, wire, prepare=look_up_or_define)
    publisher.start()
    failure = None
    try:
        meta_count = len(wire.meta)
        for offset, values in events:
            wait_until(start, offset)
            meta = tuple(values[:meta_count]) or None
            publisher.publish([WireEvent(wire.stream_id, now_ms(), meta, None, tuple(values[meta_count:]))])
            print(f"{time.monotonic() - start:6.1f} s  {wire.name} {values}", flush=True)
    except NotDelivered as exc:
        failure = exc
    finally:
        # `disconnect` over TLS, as the sample's stop(); groups that are behind get `--wait` s
        report = publisher.close(0.0 if failure else args.wait)
    if len(report.groups) > 1 or len(report.groups[0].receivers) > 1 or report.lost:
        for i, group in enumerate(report.groups, 1):
            print(f"  {wire.name} group {i} {group.describe()}", flush=True)
    if failure is not None:
        hint = any(isinstance(e, UntrustedCertificate) for _, e in failure.errors)
        print(
            f"error: {failure}" + ("; pass the node's certificate with --ca-file" if hint else ""),
            file=sys.stderr,
        )
        return False
    return report.lost == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port", type=int, default=7611, help="the node's plain Thrift port (TLS is port + 100)"
    )
    parser.add_argument(
        "--url",
        default=None,
        help="receivers in WSO2's syntax instead of --host/--port: tcp://a|tcp://b fails over, "
        "tcp://a,tcp://b load-balances, {tcp://a},{tcp://b} sends every event to each group",
    )
    parser.add_argument(
        "--auth-url", default=None, help="authenticators, grouped as --url (default: port + 100, ssl://)"
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=10.0,
        help="after each stream, how long to wait for groups that are behind (default 10 s)",
    )
    parser.add_argument("--username", default="admin")
    parser.add_argument(
        "--password",
        default=os.environ.get("CEPHEUS_PASSWORD") or os.environ.get("CEPHEUS_ADMIN_PASSWORD"),
        help="default: $CEPHEUS_PASSWORD or $CEPHEUS_ADMIN_PASSWORD",
    )
    parser.add_argument(
        "--ca-file",
        default=None,
        help="trust this certificate, e.g. the node's var/tls/cert.pem (default: the system's CAs)",
    )
    parser.add_argument("--insecure", action="store_true", help="do not verify the node's TLS certificate")
    parser.add_argument(
        "--timeline", type=Path, default=TIMELINE, help="events and their offsets (replay format)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # a receiver down, a buffer full
    args.url = args.url or f"tcp://{args.host}:{args.port}"
    try:
        ReceiverGroups.parse(args.url, args.auth_url)
    except ConfigError as exc:
        parser.error(str(exc))
    if not args.password:
        parser.error("give --password (or set CEPHEUS_PASSWORD)")
    if args.insecure and args.ca_file:
        parser.error("--insecure and --ca-file exclude each other")
    if args.insecure:
        print("warning: not verifying the node's TLS certificate (--insecure)", file=sys.stderr)
    timeline = load_timeline(args.timeline)
    start = time.monotonic()
    orders = [(t, d) for s, t, d in timeline if s == "orderStream"]
    deliveries = [(t, d) for s, t, d in timeline if s == "deliveryStream"]
    try:
        if not (
            publish_stream(args, ORDER_DEFINITION, orders, start)
            and publish_stream(args, DELIVERY_DEFINITION, deliveries, start)
        ):
            return 1
    except CEPError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"done: {counted(len(timeline), 'event')} in {time.monotonic() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

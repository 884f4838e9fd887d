"""The pizza-shop publisher of WSO2 CEP 3.x (PROTOCOL-databridge.md §11.1), in Python.

Logs in over TLS (`connect` on port + 100), looks the stream up with `findStreamId`, defines
it with the sample's single-quoted JSON when the node does not know it, and publishes on the
plain port: five orders, then (with a new login) five deliveries. Events are sent on the
timeline of `samples/pizza/events.jsonl` (orders a second apart, deliveries 10 to 55 s after
the first order), so the plan's 30-second window gives `[1, Tom]`, `[2, John]`, `[3, Ratha]`.
The node's TLS certificate is verified: pass the node's `var/tls/cert.pem` as `--ca-file`.

    python scripts/pizza_shop_publisher.py --port 7611 --ca-file var/tls/cert.pem --password "$CEPHEUS_ADMIN_PASSWORD"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from adapters.thrift import DataBridgeClient, UntrustedCertificate, WireEvent, parse_definition
from adapters.wording import counted
from engine.errors import CEPError

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
    args: argparse.Namespace, name: str, definition: str, events: list[tuple[int, list[Any]]], start: float
) -> None:
    url = f"tcp://{args.host}:{args.port}"
    client = DataBridgeClient(
        url, username=args.username, password=args.password, ca_file=args.ca_file, insecure=args.insecure
    )
    client.connect()
    try:
        stream_id = client.find_stream_id(name, "1.0.0")
        if stream_id is None:
            stream_id = client.define_stream(definition)
            print(f"defined {stream_id}", flush=True)
        else:
            client.add_definition(parse_definition(definition))
        meta_count = 1 if name == "deliveryStream" else 0
        for offset, values in events:
            wait_until(start, offset)
            meta = tuple(values[:meta_count]) or None
            client.publish([WireEvent(stream_id, now_ms(), meta, None, tuple(values[meta_count:]))])
            print(f"{time.monotonic() - start:6.1f} s  {name} {values}", flush=True)
    finally:
        client.close()  # `disconnect` over TLS, as the sample's stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--port", type=int, default=7611, help="the node's plain Thrift port (TLS is port + 100)"
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
    args = parser.parse_args()
    if not args.password:
        parser.error("give --password (or set CEPHEUS_PASSWORD)")
    if args.insecure and args.ca_file:
        parser.error("--insecure and --ca-file exclude each other")
    if args.insecure:
        print("warning: not verifying the node's TLS certificate (--insecure)", file=sys.stderr)
    timeline = load_timeline(args.timeline)
    start = time.monotonic()
    try:
        orders = [(t, d) for s, t, d in timeline if s == "orderStream"]
        deliveries = [(t, d) for s, t, d in timeline if s == "deliveryStream"]
        publish_stream(args, "orderStream", ORDER_DEFINITION, orders, start)
        publish_stream(args, "deliveryStream", DELIVERY_DEFINITION, deliveries, start)
    except UntrustedCertificate as exc:
        print(f"error: {exc}; pass the node's certificate with --ca-file (var/tls/cert.pem)", file=sys.stderr)
        return 1
    except CEPError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"done: {counted(len(timeline), 'event')} in {time.monotonic() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

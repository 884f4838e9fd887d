"""The node's typed configuration.

Loaded once at start-up in this order: defaults, then `conf/cepheus.toml` (or `--config`),
then `CEPHEUS__SECTION__KEY` environment variables (values parsed as TOML literals, else
taken as strings), then explicit overrides. Unknown sections or keys and badly typed
values are errors naming the key. Ports follow WSO2: each base port plus `node.port_offset`.
Nothing below `app/` reads the environment; components receive their own section.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ConfigError


@dataclass(frozen=True)
class Node:
    id: str = ""  # default: the host name
    port_offset: int = 0
    data_dir: str = "var"
    log_level: str = "INFO"


@dataclass(frozen=True)
class Registry:
    url: str = "sqlite:///var/cepheus.db"
    poll_seconds: float = 2.0  # how often a node looks for changes made by other nodes


@dataclass(frozen=True)
class Console:
    host: str = "0.0.0.0"
    port: int = 9763
    secret_key: str = ""  # signs console sessions; default: a random key kept in the registry (shared)
    secure_cookies: bool = False  # mark session cookies Secure (turn on when the console is served over TLS)
    session_minutes: int = 480  # a console session lasts this long
    metrics_public: bool = True  # GET /metrics without a login (Prometheus); false: basic auth


@dataclass(frozen=True)
class Thrift:
    enabled: bool = True  # when the registry has no thrift receiver entry
    host: str = "0.0.0.0"
    port: int = 7611
    tls_port: int = 7711
    cert_file: str = ""  # default: a self-signed certificate generated in data_dir/tls
    key_file: str = ""
    tls_min_version: str = "TLSv1.2"
    session_timeout_minutes: int = 30
    # what a client may cost the node (adapters/thrift/server.py)
    max_connections: int = 1024  # open on the plain port
    max_tls_connections: int = 128  # open on the TLS (login) port
    max_connections_per_address: int = 256  # from one client address, both ports together
    max_message_bytes: int = 64 * 1024 * 1024  # one call of a logged-in connection
    max_login_message_bytes: int = 64 * 1024  # one call before the connection has logged in
    max_inflight_bytes: int = 256 * 1024 * 1024  # unfinished messages of all connections together
    handshake_timeout_seconds: float = 10.0
    login_timeout_seconds: float = 10.0  # to log in (or show a valid session) after connecting
    message_timeout_seconds: float = 60.0  # to send a whole message once its first byte arrived
    idle_timeout_seconds: float = 300.0  # between messages of a logged-in connection (0: no limit)


@dataclass(frozen=True)
class Http:
    """The HTTP port (the console port): event receiver, `/health`; limits of `app.http.server`."""

    enabled: bool = True  # POST /events/<stream>:<version>, when the registry has no http receiver entry
    max_request_bytes: int = 16 * 1024 * 1024
    max_inflight_bytes: int = 64 * 1024 * 1024  # request bodies held at once, node-wide; past it 503
    max_header_bytes: int = 64 * 1024  # request line and headers
    max_json_depth: int = 64  # nesting of arrays and objects in a JSON body
    threads: int = 8  # requests served at once; the others wait their turn
    max_connections: int = 1000  # open connections; past this, one waiting for its request makes room
    max_connections_per_address: int = 50  # past this, a client address's new connections are refused
    header_timeout_seconds: float = 10.0  # from connecting (later: a request's first byte) to its last header
    body_timeout_seconds: float = 60.0  # from the end of the headers to the last byte of the body
    idle_timeout_seconds: float = 30.0  # a keep-alive connection with no request in that time is closed


@dataclass(frozen=True)
class Login:
    """Throttling of password checks (Thrift connect, HTTP basic): see `app.auth`."""

    max_failures: int = 5  # failed logins per address (and per user) within the window before a lockout
    window_seconds: float = 60.0
    lockout_seconds: float = 1.0  # the first lockout; doubled by every further failure
    max_lockout_seconds: float = 60.0
    max_concurrent_checks: int = 1  # password hashes (scrypt) computed at once on this node
    check_wait_seconds: float = 0.5  # how long a login may wait for a free check; then 503 / refused


@dataclass(frozen=True)
class Adapters:
    buffer_events: int = 100_000  # events an output adapter holds while its target is down
    batch_events: int = 500
    linger_ms: float = 5.0  # under a steady stream, how long a writer waits for a full batch
    retry_initial_ms: int = 100
    retry_max_ms: int = 10_000
    stop_timeout_seconds: float = 30.0  # how long stopping waits for an adapter to deliver its buffer
    # a full buffer: "block" stops acknowledging input until there is room again (nothing is
    # lost), "drop" refuses the outputs that do not fit (counted as overflow)
    on_full: str = "block"
    full_wait_ms: int = 2000  # how long a bundle waits for room before its client is refused (retryable)


@dataclass(frozen=True)
class Cluster:
    """Membership of redundant-node clusters (`app.cluster.member`): on when `wka` lists members."""

    host: str = "0.0.0.0"
    port: int = 4000
    wka: tuple[str, ...] = ()  # well-known addresses, "host:port"; empty: no cluster
    advertise: str = ""  # where the other members reach this one; default 127.0.0.1:<port> or host:<port>
    secret: str = ""  # shared by every member; required with wka (better: CEPHEUS__CLUSTER__SECRET)
    heartbeat_ms: int = 200
    suspect_ms: int = 600  # a member not heard from this long is suspected
    dead_ms: int = 1500  # ... and this long, dead (a closed connection: dead at once)
    # mutual TLS between the members, on when cert_file is set (then key_file and ca_file too)
    cert_file: str = ""  # this member's certificate (PEM), signed by the cluster CA
    key_file: str = ""  # its private key (PEM)
    ca_file: str = ""  # the cluster CA's certificate (PEM): a member's peers must show one it signed


@dataclass(frozen=True)
class HA:
    """The notifier lease of redundant plans (`ha.lease`)."""

    lease_ms: int = 2000  # how long a lease lasts in the registry
    renew_ms: int = 250
    margin_ms: int = 750  # a notifier stops this long before its lease can run out
    failback_ms: int = 5000  # a member that came back gets its plans after this long alive (0: at once)


FSYNC_POLICIES = ("always", "interval", "off")
ON_FULL = ("block", "drop")  # what a full output adapter does (adapters.output.buffered.ON_FULL)


@dataclass(frozen=True)
class Persistence:
    """Snapshots of persistence-mode plans (`app.registry.snapshots`) and their input log."""

    keep_snapshots: int = 3  # per plan, the newest kept in the registry; older ones are pruned
    input_log: bool = True  # log every acknowledged event of a persistence-mode plan (data_dir)
    fsync: str = "interval"  # when the input log reaches the disk: "always" | "interval" | "off"
    fsync_interval_ms: int = 50  # with fsync = "interval"
    max_log_bytes: int = 1024 * 1024 * 1024  # the input log of one plan at most
    max_snapshot_bytes: int = 256 * 1024 * 1024  # a larger snapshot is not stored (and logged)


@dataclass(frozen=True)
class Spark:
    """Plans with `distributed_mode = "spark"` driven from this node (`app.spark.driver`)."""

    enabled: bool = False  # off: such plans are left to the nodes that have it on ("elsewhere")
    master: str = "local[*]"  # or spark://head:7077
    dir: str = ""  # per plan <plan>/<text id>/in (hand-off) and .../checkpoints; default <data_dir>/spark
    trigger_seconds: float = 1.0  # how often each streaming query takes what the hand-off holds
    watermark_delay_ms: int = 0  # how late an event may arrive (by event time) and still count
    state_partitions: int = 0  # keyed state partitions, fixed at a plan's first start; 0: Spark's default
    drain_seconds: float = 30.0  # on a redeploy, how long the old text may take to finish its hand-off
    # dir is shared by the nodes: one drives each plan (a registry lease), all feed it (in/<node>/)
    shared: bool = False


@dataclass(frozen=True)
class Config:
    node: Node = field(default_factory=Node)
    registry: Registry = field(default_factory=Registry)
    console: Console = field(default_factory=Console)
    thrift: Thrift = field(default_factory=Thrift)
    http: Http = field(default_factory=Http)
    login: Login = field(default_factory=Login)
    adapters: Adapters = field(default_factory=Adapters)
    cluster: Cluster = field(default_factory=Cluster)
    ha: HA = field(default_factory=HA)
    persistence: Persistence = field(default_factory=Persistence)
    spark: Spark = field(default_factory=Spark)

    # ---- effective values ---------------------------------------------------------------

    def port(self, base: int) -> int:
        return base + self.node.port_offset

    @property
    def console_port(self) -> int:
        return self.port(self.console.port)

    @property
    def thrift_port(self) -> int:
        return self.port(self.thrift.port)

    @property
    def thrift_tls_port(self) -> int:
        return self.port(self.thrift.tls_port)

    @property
    def cluster_port(self) -> int:
        return self.port(self.cluster.port)

    @property
    def cluster_address(self) -> str:
        """Where the other members reach this one's cluster port."""
        if self.cluster.advertise:
            return self.cluster.advertise
        host = self.cluster.host
        return f"{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{self.cluster_port}"

    @property
    def data_dir(self) -> Path:
        return Path(self.node.data_dir)

    @property
    def spark_dir(self) -> Path:
        """Where the node keeps its Spark plans' hand-offs and checkpoints."""
        return Path(self.spark.dir) if self.spark.dir else self.data_dir / "spark"

    @property
    def node_id(self) -> str:
        if self.node.id:
            return self.node.id
        return f"{socket.gethostname()}:{self.console_port}"


ENV_PREFIX = "CEPHEUS__"


def _check_value(section: str, key: str, kind: Any, value: Any) -> Any:
    where = f"{section}.{key}"
    origin = typing.get_origin(kind)
    if origin is tuple or kind is tuple:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            msg = f"{where} must be a list of strings, got {value!r}"
            raise ConfigError(msg)
        return tuple(value)
    if isinstance(kind, types.UnionType):
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    msg = f"{where} must be {getattr(kind, '__name__', kind)}, got {type(value).__name__} {value!r}"
    raise ConfigError(msg)


def _merge(base: Config, data: Mapping[str, Any], origin: str) -> Config:
    sections = {f.name: f for f in dataclasses.fields(Config)}
    changes: dict[str, Any] = {}
    for section, values in data.items():
        if section not in sections:
            msg = f"{origin}: unknown section [{section}] (known: {', '.join(sections)})"
            raise ConfigError(msg)
        if not isinstance(values, Mapping):
            msg = f"{origin}: [{section}] must be a table of keys"
            raise ConfigError(msg)
        current = changes.get(section, getattr(base, section))
        hints = typing.get_type_hints(type(current))
        updates = {}
        for key, value in values.items():
            if key not in hints:
                msg = f"{origin}: unknown key {section}.{key} (known: {', '.join(hints)})"
                raise ConfigError(msg)
            updates[key] = _check_value(section, key, hints[key], value)
        changes[section] = dataclasses.replace(current, **updates)
    return dataclasses.replace(base, **changes)


def _parse_literal(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _from_env(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        if len(parts) != 2 or not all(parts):
            msg = f"environment variable {name}: expected {ENV_PREFIX}SECTION__KEY"
            raise ConfigError(msg)
        data.setdefault(parts[0], {})[parts[1]] = _parse_literal(raw)
    return data


def _validate(cfg: Config) -> None:
    if not 0 <= cfg.node.port_offset < 10_000:
        msg = "node.port_offset must be between 0 and 9999"
        raise ConfigError(msg)
    for name, port in (
        ("console.port", cfg.console_port),
        ("thrift.port", cfg.thrift_port),
        ("thrift.tls_port", cfg.thrift_tls_port),
        ("cluster.port", cfg.cluster_port),
    ):
        if not 0 < port < 65536:
            msg = f"{name} plus the port offset gives {port}, outside 1..65535"
            raise ConfigError(msg)
    if cfg.node.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        msg = "node.log_level must be DEBUG, INFO, WARNING or ERROR"
        raise ConfigError(msg)
    if not 0 < cfg.ha.renew_ms < cfg.ha.margin_ms < cfg.ha.lease_ms:
        msg = "ha needs 0 < renew_ms < margin_ms < lease_ms"
        raise ConfigError(msg)
    if cfg.ha.failback_ms < 0:
        msg = "ha.failback_ms must be 0 or more"
        raise ConfigError(msg)
    c = cfg.cluster
    if not 0 < c.heartbeat_ms < c.suspect_ms < c.dead_ms:
        msg = "cluster needs 0 < heartbeat_ms < suspect_ms < dead_ms"
        raise ConfigError(msg)
    loopback = ("127.", "localhost", "::1", "[::1]")
    if c.wka and not c.advertise and not all(a.startswith(loopback) for a in c.wka):
        msg = (
            "cluster.advertise must say where the other members reach this one (host:port) when "
            "cluster.wka lists members on other hosts"
        )
        raise ConfigError(msg)
    if c.wka and len(c.secret) < 16:
        msg = (
            "cluster.secret must be set (16 characters or more, the same on every member) when "
            "cluster.wka lists members; e.g. CEPHEUS__CLUSTER__SECRET=$(openssl rand -hex 24)"
        )
        raise ConfigError(msg)
    _validate_cluster_tls(c)
    for key in (
        "max_request_bytes",
        "max_header_bytes",
        "max_json_depth",
        "threads",
        "max_connections",
        "max_connections_per_address",
        "header_timeout_seconds",
        "body_timeout_seconds",
        "idle_timeout_seconds",
    ):
        if getattr(cfg.http, key) <= 0:
            msg = f"http.{key} must be positive"
            raise ConfigError(msg)
    if cfg.http.max_inflight_bytes < cfg.http.max_request_bytes:
        msg = (
            f"http.max_inflight_bytes ({cfg.http.max_inflight_bytes}) must be at least "
            f"http.max_request_bytes ({cfg.http.max_request_bytes}), or no body of that size is ever read"
        )
        raise ConfigError(msg)
    if not 1 <= cfg.console.session_minutes <= 60 * 24 * 30:
        msg = "console.session_minutes must be from 1 to 43200 (30 days)"
        raise ConfigError(msg)
    if cfg.login.check_wait_seconds <= 0:
        msg = "login.check_wait_seconds must be positive"
        raise ConfigError(msg)
    if cfg.login.max_failures < 1 or cfg.login.max_concurrent_checks < 1:
        msg = "login.max_failures and login.max_concurrent_checks must be at least 1"
        raise ConfigError(msg)
    if not 0 < cfg.login.lockout_seconds <= cfg.login.max_lockout_seconds:
        msg = "login.lockout_seconds must be positive and at most login.max_lockout_seconds"
        raise ConfigError(msg)
    if cfg.adapters.stop_timeout_seconds < 0:
        msg = "adapters.stop_timeout_seconds must be 0 or more"
        raise ConfigError(msg)
    if cfg.adapters.buffer_events <= 0 or cfg.adapters.batch_events <= 0:
        msg = "adapters.buffer_events and adapters.batch_events must be positive"
        raise ConfigError(msg)
    if not 0 <= cfg.adapters.linger_ms <= 1000:
        msg = "adapters.linger_ms must be from 0 to 1000"
        raise ConfigError(msg)
    t = cfg.thrift
    for key in ("max_connections", "max_tls_connections", "max_connections_per_address"):
        if getattr(t, key) < 1:
            msg = f"thrift.{key} must be at least 1"
            raise ConfigError(msg)
    if not 1024 <= t.max_login_message_bytes <= t.max_message_bytes <= t.max_inflight_bytes:
        msg = (
            "thrift: need 1024 <= max_login_message_bytes <= max_message_bytes <= max_inflight_bytes "
            f"(got {t.max_login_message_bytes}, {t.max_message_bytes}, {t.max_inflight_bytes})"
        )
        raise ConfigError(msg)
    for key in ("handshake_timeout_seconds", "login_timeout_seconds", "message_timeout_seconds"):
        if getattr(t, key) <= 0:
            msg = f"thrift.{key} must be positive"
            raise ConfigError(msg)
    if t.idle_timeout_seconds < 0:
        msg = "thrift.idle_timeout_seconds must be 0 (no limit) or positive"
        raise ConfigError(msg)
    if cfg.thrift.tls_min_version not in ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"):
        msg = "thrift.tls_min_version must be TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3"
        raise ConfigError(msg)
    a = cfg.adapters
    if a.on_full not in ON_FULL:
        msg = f"adapters.on_full must be one of {', '.join(ON_FULL)}, got {a.on_full!r}"
        raise ConfigError(msg)
    if a.full_wait_ms < 0:
        msg = f"adapters.full_wait_ms must be 0 or positive, got {a.full_wait_ms}"
        raise ConfigError(msg)
    p = cfg.persistence
    if p.keep_snapshots < 1:
        msg = f"persistence.keep_snapshots must be at least 1, got {p.keep_snapshots}"
        raise ConfigError(msg)
    if p.fsync not in FSYNC_POLICIES:
        msg = f"persistence.fsync must be one of {', '.join(FSYNC_POLICIES)}, got {p.fsync!r}"
        raise ConfigError(msg)
    if p.fsync_interval_ms < 1:
        msg = f"persistence.fsync_interval_ms must be positive, got {p.fsync_interval_ms}"
        raise ConfigError(msg)
    if p.max_snapshot_bytes < 1024 * 1024:
        msg = f"persistence.max_snapshot_bytes must be at least 1048576 (1 MiB), got {p.max_snapshot_bytes}"
        raise ConfigError(msg)
    if p.max_log_bytes < 1024 * 1024:
        msg = f"persistence.max_log_bytes must be at least 1048576 (1 MiB), got {p.max_log_bytes}"
        raise ConfigError(msg)
    _validate_spark(cfg.spark)
    for address in (*cfg.cluster.wka, *([cfg.cluster.advertise] if cfg.cluster.advertise else [])):
        host, _, port_text = address.rpartition(":")
        if not host or not port_text.isdigit():
            msg = f"cluster address {address!r} (wka or advertise) must be host:port"
            raise ConfigError(msg)


def _validate_cluster_tls(c: Cluster) -> None:
    """TLS on the cluster channel is all three files or none: a half-set section must not leave
    the members talking in clear."""
    if c.cert_file:
        for key, what in (("key_file", "its private key"), ("ca_file", "the cluster CA's certificate")):
            if not getattr(c, key):
                msg = (
                    f"cluster.{key} must be set when cluster.cert_file is ([cluster] runs over mutual "
                    f"TLS then): {what}, a PEM file"
                )
                raise ConfigError(msg)
    elif c.key_file or c.ca_file:
        given = " and ".join(f"cluster.{k}" for k in ("key_file", "ca_file") if getattr(c, k))
        msg = (
            f"cluster.cert_file must be set when {given} is: TLS on the cluster channel needs "
            "this member's certificate (PEM), its key and the cluster CA"
        )
        raise ConfigError(msg)


def _validate_spark(s: Spark) -> None:
    if s.shared and not s.dir:
        msg = (
            "spark.shared needs spark.dir: the directory every node mounts at the same path "
            "(the default, under each node's data_dir, is not shared)"
        )
        raise ConfigError(msg)
    if not s.master.strip():
        msg = 'spark.master must name a Spark master, e.g. "local[*]" or "spark://head:7077"'
        raise ConfigError(msg)
    if s.trigger_seconds <= 0:
        msg = f"spark.trigger_seconds must be positive, got {s.trigger_seconds}"
        raise ConfigError(msg)
    if s.watermark_delay_ms < 0:
        msg = f"spark.watermark_delay_ms must be 0 or more, got {s.watermark_delay_ms}"
        raise ConfigError(msg)
    if s.state_partitions < 0:
        msg = f"spark.state_partitions must be 0 (Spark's default parallelism) or more, got {s.state_partitions}"
        raise ConfigError(msg)
    if s.drain_seconds < 0:
        msg = f"spark.drain_seconds must be 0 or more, got {s.drain_seconds}"
        raise ConfigError(msg)


def load(
    path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Config:
    """Defaults, then the file (if it exists or was named), then the environment, then overrides."""
    cfg = Config()
    if path is not None:
        p = Path(path)
        try:
            with p.open("rb") as f:
                cfg = _merge(cfg, tomllib.load(f), str(p))
        except FileNotFoundError:
            msg = f"configuration file {p} does not exist"
            raise ConfigError(msg) from None
        except tomllib.TOMLDecodeError as exc:
            msg = f"{p}: {exc}"
            raise ConfigError(msg) from None
    cfg = _merge(cfg, _from_env(os.environ if env is None else env), "environment")
    if overrides:
        cfg = _merge(cfg, overrides, "overrides")
    _validate(cfg)
    return cfg

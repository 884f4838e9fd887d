"""`ServerSettings`: what a `DataBridgeServer` is configured with.

Field names follow the `[thrift]` section of the node configuration (`app.config.Thrift`)
plus the node's data directory, so the node builds it with one call. Imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSettings:
    """Listener addresses, TLS material and limits of the Data Bridge receiver.

    Port 0 binds a free port (see `DataBridgeServer.port` / `.tls_port`); a `tls_port` of
    None serves the plain port only. Without `cert_file`/`key_file` a self-signed
    certificate is generated once into `<data_dir>/tls/` and reused afterwards.
    """

    host: str = "0.0.0.0"
    port: int = 7611
    tls_port: int | None = 7711
    cert_file: str = ""
    key_file: str = ""
    tls_min_version: str = "TLSv1.2"
    session_timeout_minutes: float = 30
    max_message_bytes: int = 64 * 1024 * 1024
    max_connections: int = 512
    data_dir: str = "var"
    handshake_timeout_seconds: float = 10.0
    idle_timeout_seconds: float | None = None

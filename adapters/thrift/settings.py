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
    data_dir: str = "var"
    # what a client may cost the node (see `admission`, `budget` and the server's docstring)
    max_connections: int = 1024  # open on the plain port
    max_tls_connections: int = 128  # open on the TLS (login) port
    max_connections_per_address: int = 256  # open from one client address, both ports together
    max_message_bytes: int = 64 * 1024 * 1024  # one call, once the connection has logged in
    max_login_message_bytes: int = 64 * 1024  # one call before that (connect, a bundle's first bytes)
    max_inflight_bytes: int = 256 * 1024 * 1024  # unfinished messages of all connections together
    handshake_timeout_seconds: float = 10.0
    login_timeout_seconds: float = 10.0  # to log in, or show a valid session, after connecting
    message_timeout_seconds: float = 60.0  # to send a whole message once its first byte came
    idle_timeout_seconds: float = 300.0  # between messages on a logged-in connection (0: no limit)

"""TLS material: a generated self-signed certificate is made once and reused (§9)."""

from __future__ import annotations

import os
import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest

from adapters.thrift.settings import ServerSettings
from adapters.thrift.tls import client_context, self_signed, server_context
from engine.errors import ConfigError


def test_self_signed_certificate_is_generated_once_and_reused(tls_dir: Path) -> None:
    cert, key = self_signed(tls_dir)
    first = cert.read_bytes()
    assert self_signed(tls_dir) == (cert, key)
    assert cert.read_bytes() == first
    assert key.stat().st_mode & 0o077 == 0


def test_generated_certificate_and_key_are_private(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        cert, key = self_signed(tmp_path / "tls")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "tls").stat().st_mode) == 0o700
    assert stat.S_IMODE(cert.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_server_context_uses_the_generated_certificate(tls_dir: Path) -> None:
    settings = ServerSettings(data_dir=str(tls_dir.parent))
    context, cert = server_context(settings)
    assert cert == tls_dir / "cert.pem"
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_unknown_tls_version_names_the_key(tls_dir: Path) -> None:
    with pytest.raises(ConfigError, match="thrift.tls_min_version"):
        server_context(ServerSettings(data_dir=str(tls_dir.parent), tls_min_version="SSLv3"))


def test_missing_certificate_file_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="thrift.cert_file"):
        server_context(ServerSettings(cert_file=str(tmp_path / "none.pem")))


def handshake(client: ssl.SSLContext, tls_dir: Path, host: str) -> tuple[bytes, list[BaseException]]:
    """A TLS handshake over a socket pair with the node's server context, then one byte from the
    client: what the server read and what it raised. Raises what the client raises."""
    server, _cert = server_context(ServerSettings(data_dir=str(tls_dir.parent)))
    near, far = socket.socketpair()
    received: list[bytes] = []
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            with server.wrap_socket(far, server_side=True) as tls:
                received.append(tls.recv(1))
        except (OSError, ssl.SSLError) as exc:
            failure.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client.wrap_socket(near, server_hostname=host) as tls:
            tls.sendall(b"x")
    finally:
        near.close()
        thread.join(10)
        far.close()
    assert not thread.is_alive(), "the server side of the handshake never finished"
    return b"".join(received), failure


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_the_generated_certificate_is_a_trust_anchor_for_the_local_host(tls_dir: Path, host: str) -> None:
    context = client_context(str(tls_dir / "cert.pem"))
    context.verify_flags |= ssl.VERIFY_X509_STRICT  # as Python 3.13 does by default
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert handshake(context, tls_dir, host) == (b"x", [])


def test_by_default_an_unknown_certificate_is_refused(tls_dir: Path) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="self-signed certificate"):
        handshake(client_context(), tls_dir, "127.0.0.1")


def test_the_certificate_must_be_valid_for_the_host_name(tls_dir: Path) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        handshake(client_context(str(tls_dir / "cert.pem")), tls_dir, "example.org")


def test_insecure_accepts_any_certificate(tls_dir: Path) -> None:
    context = client_context(insecure=True)
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_NONE, False)
    # a certificate for neither the host name nor a trusted issuer: the handshake completes and
    # the server reads the byte sent over it, raising nothing
    assert handshake(context, tls_dir, "example.org") == (b"x", [])


def test_an_unreadable_ca_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"CA file .*none.pem: cannot load trusted certificates"):
        client_context(str(tmp_path / "none.pem"))

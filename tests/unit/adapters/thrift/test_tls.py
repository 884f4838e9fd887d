"""TLS material: a generated self-signed certificate is made once and reused (§9)."""

from __future__ import annotations

import os
import ssl
import stat
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


def test_client_context_verifies_only_with_a_ca_file(tls_dir: Path) -> None:
    assert client_context().verify_mode == ssl.CERT_NONE
    cert, _key = self_signed(tls_dir)
    assert client_context(str(cert)).verify_mode == ssl.CERT_REQUIRED

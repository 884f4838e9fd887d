"""TLS for the secure Data Bridge port and for clients (PROTOCOL §1, §9).

Owns the server's SSL context (certificate from the settings, or a self-signed one made
with `cryptography` on first start into `<data_dir>/tls/` and reused afterwards, valid for
`localhost`, the host name, 127.0.0.1 and ::1 so clients can trust it as it is), the minimum
protocol version, and the client context: the server's certificate and host name are
verified, against the system's trusted CAs or a given CA file (such as the node's
`cert.pem`); only an explicit `insecure` turns verification off.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import ssl
import warnings
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from adapters.thrift.settings import ServerSettings
from engine.errors import ConfigError

log = logging.getLogger(__name__)

TLS_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.0": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
CERT_NAME, KEY_NAME = "cert.pem", "key.pem"


def tls_version(name: str) -> ssl.TLSVersion:
    try:
        return TLS_VERSIONS[name]
    except KeyError:
        msg = f"thrift.tls_min_version {name!r} is not one of {', '.join(TLS_VERSIONS)}"
        raise ConfigError(msg) from None


def server_context(settings: ServerSettings) -> tuple[ssl.SSLContext, Path]:
    """The secure listener's context and the certificate file it serves."""
    minimum = tls_version(settings.tls_min_version)
    if settings.cert_file:
        cert = Path(settings.cert_file)
        key = Path(settings.key_file) if settings.key_file else None
    else:
        cert, key = self_signed(Path(settings.data_dir) / "tls", settings.host)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = minimum
    if minimum < ssl.TLSVersion.TLSv1_2:
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
        log.warning("thrift TLS accepts %s for legacy clients; prefer TLSv1.2", settings.tls_min_version)
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        msg = f"thrift.cert_file {cert} / thrift.key_file {key}: cannot load the certificate ({exc})"
        raise ConfigError(msg) from exc
    return context, cert


# its own CA (so clients can take it as their trust anchor) and a TLS server certificate
_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=True,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


def self_signed(directory: Path, address: str = "") -> tuple[Path, Path]:
    """`cert.pem` and `key.pem` in `directory`, generated on first use; valid for localhost,
    this machine's name and, when it is one, the IP address the listener is bound to."""
    cert, key = directory / CERT_NAME, directory / KEY_NAME
    if cert.is_file() and key.is_file():
        return cert, key
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    host = socket.gethostname()
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, host),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Cepheus"),
        ]
    )
    alt_names = x509.SubjectAlternativeName(
        [
            x509.DNSName("localhost"),
            x509.DNSName(host),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1")),
            *_bound(address),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(alt_names, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(private_key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(private_key.public_key()), critical=False
        )
        .sign(private_key, hashes.SHA256())
    )
    key_pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(key, key_pem, 0o600)
    _write(cert, certificate.public_bytes(serialization.Encoding.PEM), 0o600)
    log.info("generated self-signed certificate %s; give it to clients as their CA file", cert)
    return cert, key


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write atomically, so a crash never leaves half a key behind."""
    temporary = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(temporary, path)


def client_context(ca_file: str | None = None, *, insecure: bool = False) -> ssl.SSLContext:
    """A client context that verifies the server's certificate and host name.

    Trusted: the system's CAs, or only the certificates in `ca_file` (a CA, or a self-signed
    server certificate such as the node's `tls/cert.pem`). `insecure` verifies nothing; the
    caller says so in its log.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    if ca_file:
        try:
            context.load_verify_locations(ca_file)
        except (OSError, ssl.SSLError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            msg = f"CA file {ca_file}: cannot load trusted certificates from it ({reason})"
            raise ConfigError(msg) from None
    else:
        context.load_default_certs()
    return context


def _bound(address: str) -> list[x509.GeneralName]:
    """The bound address as a name of the certificate (none for a wildcard, a name or a loopback)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return []
    return [] if ip.is_unspecified or ip.is_loopback else [x509.IPAddress(ip)]

"""Receiver and authenticator URLs of Data Bridge clients (PROTOCOL §1.1, §10).

Owns the URL syntax of the WSO2 publishers: `tcp://host:port` or `ssl://host:port`; a
comma-separated list load-balances, a `|`-separated list fails over, and `{..},{..}` makes
several groups, each of which receives every event. `authenticatorURL` must repeat the
grouping; without it a `tcp://H:P` receiver logs in at `ssl://H:P+100` and an `ssl://`
receiver at itself (Gen-1). Imports only `engine.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from engine.errors import ConfigError

SCHEMES = ("tcp", "ssl")
_GROUP = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Url:
    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str, key: str = "receiverURL") -> Url:
        text = text.strip()
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            msg = f"{key}: {text!r} is not a URL like tcp://host:7611 ({exc})"
            raise ConfigError(msg) from exc
        if parts.scheme not in SCHEMES or not parts.hostname or port is None:
            msg = f"{key}: {text!r} is not a URL like tcp://host:7611 or ssl://host:7711"
            raise ConfigError(msg)
        return cls(parts.scheme, parts.hostname, port)

    @property
    def tls(self) -> bool:
        return self.scheme == "ssl"

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass(frozen=True)
class Endpoint:
    """Where events go (`receiver`) and where the client logs in (`auth`, always TLS)."""

    receiver: Url
    auth: Url

    @classmethod
    def of(cls, receiver: str | Url, auth: str | Url | None = None) -> Endpoint:
        url = receiver if isinstance(receiver, Url) else Url.parse(receiver)
        if auth is None:
            auth_url = Url("ssl", url.host, url.port + 100) if url.scheme == "tcp" else url
        else:
            auth_url = auth if isinstance(auth, Url) else Url.parse(auth, "authenticatorURL")
        if not auth_url.tls:
            msg = f"authenticatorURL: {auth_url} must use ssl:// (connect is served on the TLS port only)"
            raise ConfigError(msg)
        return cls(url, auth_url)


@dataclass(frozen=True)
class ReceiverGroup:
    """Endpoints that share the events: round robin, or in order when `failover`."""

    endpoints: tuple[Endpoint, ...]
    failover: bool = False


@dataclass(frozen=True)
class ReceiverGroups:
    """Every group receives every event."""

    groups: tuple[ReceiverGroup, ...]

    @classmethod
    def parse(cls, receiver_urls: str, auth_urls: str | None = None) -> ReceiverGroups:
        receivers = _split(receiver_urls, "receiverURL")
        auths = _split(auth_urls, "authenticatorURL") if auth_urls and auth_urls.strip() else None
        if auths is not None and [len(g) for g, _f in auths] != [len(g) for g, _f in receivers]:
            msg = (
                f"authenticatorURL {auth_urls!r} must list the same number and grouping of URLs "
                f"as receiverURL {receiver_urls!r}"
            )
            raise ConfigError(msg)
        groups = []
        for index, (urls, failover) in enumerate(receivers):
            auth = auths[index][0] if auths is not None else [None] * len(urls)
            endpoints = tuple(Endpoint.of(Url.parse(u), a) for u, a in zip(urls, auth, strict=True))
            groups.append(ReceiverGroup(endpoints, failover))
        return cls(tuple(groups))


def _split(text: str, key: str) -> list[tuple[list[str], bool]]:
    """`[(urls, failover), ...]` for each group of `text`."""
    text = text.strip()
    if not text:
        msg = f"{key} is empty; give at least one URL like tcp://host:7611"
        raise ConfigError(msg)
    if "{" in text or "}" in text:
        bodies = _GROUP.findall(text)
        if not bodies or _GROUP.sub("", text).replace(",", "").strip():
            msg = f"{key} {text!r}: groups must be written {{url,url}},{{url|url}}"
            raise ConfigError(msg)
    else:
        bodies = [text]
    groups = []
    for body in bodies:
        if "," in body and "|" in body:
            msg = f"{key} {text!r} mixes ',' (load balance) and '|' (fail-over) in one group; use {{..}},{{..}} groups"
            raise ConfigError(msg)
        failover = "|" in body
        urls = [u.strip() for u in body.split("|" if failover else ",")]
        if not all(urls):
            msg = f"{key} {text!r} has an empty URL"
            raise ConfigError(msg)
        groups.append((urls, failover))
    return groups

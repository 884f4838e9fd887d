"""`HttpAdapter`: batches of records POSTed to a URL (urllib only), buffered and retried.

Config:
    url = "https://example.org/hooks/orders"   http or https
    method = "POST"                  or PUT
    body = "json"                    a JSON array of the batch's records: text records must
                                     be JSON (json formatter) and are embedded as they are;
                                     dict rows and other values are encoded
           "lines"                   records as text, one per line (text, xml formatters)
    headers = {X-Token = "..."}      extra request headers
    username / password              HTTP basic authentication (sent with every request)
    timeout_s = 10                   per request
    verify_tls = true                check the server certificate (https)
    proxy = "http://proxy:3128"      optional; the environment's proxy settings are ignored
    buffer_events, batch_events, retry_initial_ms, retry_max_ms, overflow_log_seconds,
    on_full ("block": a full buffer pushes back on the input; "drop": refuses records)

A 2xx answer delivers the batch. Connection errors, timeouts, 408, 425, 429 and 5xx are
outages: the batch is retried with backoff while records wait in the bounded buffer.
Other answers (4xx, and 3xx: redirects are not followed, as a POST must not silently
become a GET) refuse the batch; it is then sent record by record to reject only the bad
ones. The fence, if any, is called with None before each request (no transaction here).

Every request names its batch: `Idempotency-Key` and `Cepheus-From` carry `position.index@route|log`
of its first record (records with an origin: a batch holds one run's records, cut the same
way on every replay, see `BufferedAdapter.align_runs`) or `0.n@adapter~id` (records without:
numbered by this adapter while it runs). The target may still get a batch twice (a reply
lost, a takeover, a restart), but always under the key of its first delivery, so a target
that remembers keys (or a Cepheus node, which reads `Cepheus-From`) takes it once.
Imports `formatters` and sibling modules only.
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import re
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from adapters.output.base import Fence, RecordError, Run
from adapters.output.buffered import BufferedAdapter, Buffering, Refused, RetryLater, check_fence
from adapters.senders import FROM_HEADER, identity
from formatters.config import Settings

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name
_RETRY_STATUS = {408, 425, 429}
_MAX_ERROR_BODY = 512


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


def _json_value(record: Any) -> Any:
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    if isinstance(record, Mapping):
        return dict(record)
    return record


class HttpAdapter(BufferedAdapter):
    """POSTs each batch as one request."""

    kind = "http"
    align_runs = True

    def __init__(self, name: str, settings: Settings) -> None:
        self.url = settings.string("url")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            settings.fail("url", f"must be an http:// or https:// URL with a host, got {self.url!r}")
        self.method = settings.string("method", "POST").upper()
        if self.method not in ("POST", "PUT"):
            settings.fail("method", f"must be POST or PUT, got {self.method!r}")
        self.body = settings.string("body", "json", choices=("json", "lines"))
        headers = settings.string_table("headers")
        for key, value in headers.items():
            if not _TOKEN.match(key):
                settings.fail(f"headers.{key}", "is not a valid header name")
            if "\r" in value or "\n" in value:
                settings.fail(f"headers.{key}", "must not contain line breaks")
        content_type = "application/json" if self.body == "json" else "text/plain; charset=utf-8"
        self.headers = {"Content-Type": content_type, "User-Agent": "cepheus"} | headers
        username, password = settings.optional_string("username"), settings.raw("password", "")
        if not isinstance(password, str):
            settings.fail("password", "must be a string")
        if password and username is None:
            settings.fail("username", "is required with a password")
        if username is not None:
            token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
            self.headers["Authorization"] = f"Basic {token}"
        self.timeout_s = settings.number("timeout_s", 10.0, minimum=0.1)
        verify = settings.boolean("verify_tls", True)
        proxy = settings.optional_string("proxy")
        super().__init__(name, Buffering.read(settings))
        context = ssl.create_default_context()
        if not verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        proxies = {"http": proxy, "https": proxy} if proxy else {}
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler(proxies), urllib.request.HTTPSHandler(context=context), _NoRedirect()
        )
        self._sender = f"{name}~{uuid.uuid4().hex[:16]}"
        self._target = f"{self.method} {parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}{parts.path}"

    def describe_target(self) -> str:
        return self._target

    def _check(self, records: Sequence[Any]) -> None:
        if self.body != "json":
            return
        for i, record in enumerate(records):
            if isinstance(record, str):
                try:
                    json.loads(record)
                except ValueError:
                    msg = f"adapter {self.name}: record {i} is text but not JSON; use the json formatter or body = 'lines'"
                    raise RecordError(msg) from None

    def encode(self, records: Sequence[Any]) -> bytes:
        """The request body for one batch."""
        if self.body == "lines":
            return "".join(f"{r}\n" for r in records).encode()
        parts = [
            r if isinstance(r, str) else json.dumps(_json_value(r), ensure_ascii=False, default=str)
            for r in records
        ]
        return ("[" + ",".join(parts) + "]").encode()

    def key(self, origins: list[Run]) -> str:
        """The name of the batch being written, in `adapters.senders`' form."""
        origin = origins[0][0] if origins else None
        if origin is None:
            return identity(self._sender, 0, self.batch_first)
        return identity(origin.sender, origin.position, origin.index)

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> None:
        check_fence(fence)
        key = self.key(origins)
        headers = {**self.headers, "Idempotency-Key": key, FROM_HEADER: key}
        request = urllib.request.Request(
            self.url, data=self.encode(records), headers=headers, method=self.method
        )
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                detail = exc.read(_MAX_ERROR_BODY).decode("utf-8", "replace").strip()
            text = f"HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else "")
            if exc.code in _RETRY_STATUS or exc.code >= 500:
                raise RetryLater(text) from exc
            if 300 <= exc.code < 400:
                text += f" (redirect to {exc.headers.get('Location')}; configure the final URL)"
            raise Refused(text) from exc
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            raise RetryLater(str(getattr(exc, "reason", exc))) from exc

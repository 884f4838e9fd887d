"""What keeps the console's pages safe in a browser: signed session cookies, CSRF tokens and
security headers.

- The session key is `[console] secret_key` if set, else a random key kept in the registry and
  shared by every member (`Registry.shared_secret`): a session opened on one node is valid on
  the others behind a load balancer, and no key is a constant in the code.
- Cookies are `HttpOnly` and `SameSite=Lax`, and `Secure` when `[console] secure_cookies` is on
  (serve the console over TLS, e.g. behind a proxy, and turn it on).
- A request that carries a session cookie and changes something (POST, PUT, PATCH, DELETE) must
  carry the session's CSRF token (a form field, or the `X-CSRFToken` header from the console's
  scripts). Requests with an `Authorization` header (bearer token, basic) carry no ambient
  credential, so they need none.
- Every reply has a Content-Security-Policy without inline script, `frame-ancestors 'none'`,
  `nosniff` and a same-origin referrer policy.
"""

from __future__ import annotations

from datetime import timedelta

from flask import Flask, Response, request
from flask_wtf.csrf import CSRFError, CSRFProtect  # type: ignore[import-untyped]

from adapters.http.replies import json_error

UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)

HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def secure(app: Flask, secret_key: str, *, secure_cookies: bool, session_minutes: int) -> CSRFProtect:
    app.config.update(
        SECRET_KEY=secret_key,
        SESSION_COOKIE_NAME="cepheus_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure_cookies,
        REMEMBER_COOKIE_HTTPONLY=True,
        REMEMBER_COOKIE_SECURE=secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(minutes=session_minutes),
        WTF_CSRF_CHECK_DEFAULT=False,  # checked below, only where a cookie is the credential
        WTF_CSRF_TIME_LIMIT=None,  # valid as long as the session
        WTF_CSRF_SSL_STRICT=secure_cookies,
    )
    csrf = CSRFProtect(app)

    @app.before_request
    def check_csrf() -> None:
        if request.method in UNSAFE and "Authorization" not in request.headers:
            if app.config["SESSION_COOKIE_NAME"] in request.cookies or request.path == "/login":
                csrf.protect()

    @app.errorhandler(CSRFError)
    def csrf_refused(exc: CSRFError) -> Response:
        return json_error(400, f"CSRF check failed: {exc.description}; reload the page and try again")

    @app.after_request
    def headers(response: Response) -> Response:
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        if request.path.startswith("/api/") or request.path == "/login":
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    return csrf

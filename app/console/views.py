"""The console's pages: server-rendered HTML forms over the same actions as the JSON API.

Every page needs a login (`/login`, a session cookie); a viewer sees everything and changes
nothing but their own password and tokens. Forms carry the session's CSRF token. Changes go
through `app.console.actions`, i.e. to the registry, from where every member redeploys them.
Scripts (`static/console.js`: live validation in the plan editor, live charts and the tracer)
call the JSON API with the session; the pages work without them except for those live parts.

This module makes the blueprint (login, logout, the dashboard, who may post what); the pages
are in `registry_pages` (streams, plans, connectors), `operation_pages` (simulator, tracer,
cluster, server) and `user_pages` (users, tokens), with what they share in `pages`.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

import flask_login  # type: ignore[import-untyped]
from flask import Blueprint, Response, flash, redirect, render_template, request, session, url_for

from app.auth import Outcome as LoginOutcome
from app.console import operation_pages, registry_pages, user_pages
from app.console.pages import Page, me
from app.console.principal import SessionUser
from app.console.services import ConsoleServices


def views_blueprint(services: ConsoleServices) -> Blueprint:
    bp = Blueprint(
        "console", __name__, template_folder="templates", static_folder="static", static_url_path="/assets"
    )
    registry = services.registry

    @bp.before_request
    def require_login() -> Page | None:
        if request.endpoint in ("console.login", "console.static", "console.favicon"):
            return None
        if not flask_login.current_user.is_authenticated:
            return redirect(url_for("console.login", next=request.full_path.rstrip("?")))
        if request.method == "POST" and not me().admin and request.endpoint not in OWN_BUSINESS:
            flash(f"user {me().name} is a viewer: only an admin may change this", "error")
            return redirect(request.referrer or url_for("console.dashboard"))
        return None

    @bp.app_context_processor
    def common() -> dict[str, Any]:
        user = flask_login.current_user
        return {"node_id": services.node_id, "user": user.user if user and user.is_authenticated else None}

    @bp.get("/favicon.ico")
    def favicon() -> Page:
        return redirect(url_for("console.static", filename="favicon.svg"), 301)

    # ---- login -----------------------------------------------------------------------------

    @bp.route("/login", methods=["GET", "POST"])
    def login() -> Page:
        if request.method == "GET":
            return render_template("login.html")
        name = request.form.get("username", "")
        password = request.form.get("password", "")
        verdict = services.credentials.check(
            name, password, request.environ.get("REMOTE_ADDR") or "", "console"
        )
        if verdict.outcome is not LoginOutcome.ACCEPTED:
            status = (
                429
                if verdict.outcome is LoginOutcome.THROTTLED
                else 503
                if verdict.outcome is LoginOutcome.BUSY
                else 401
            )
            message = "wrong user name or password" if status == 401 else verdict.message or "try again later"
            headers = {"Retry-After": str(max(1, math.ceil(verdict.retry_after)))} if status != 401 else {}
            return Response(render_template("login.html", error=message, username=name), status, headers)
        user = registry.get_user(name)
        if user is None:
            return Response(render_template("login.html", error="wrong user name or password"), 401)
        session.clear()  # nothing of the session before the login carries over (no fixation)
        flask_login.login_user(SessionUser(user))
        target = request.args.get("next", "")
        parts = urlsplit(target)
        if not target.startswith("/") or target.startswith("//") or parts.scheme or parts.netloc:
            target = url_for("console.dashboard")
        return redirect(target)

    @bp.post("/logout")
    def logout() -> Page:
        flask_login.logout_user()
        return redirect(url_for("console.login"))

    # ---- dashboard ---------------------------------------------------------------------------

    @bp.get("/")
    def dashboard() -> Page:
        report = services.health()
        cluster = report.get("cluster") or {}
        roles = {name: p.get("role") for name, p in (cluster.get("plans") or {}).items()}
        return render_template("dashboard.html", report=report, roles=roles)

    registry_pages.register(bp, services)
    operation_pages.register(bp, services)
    user_pages.register(bp, services)
    return bp


OWN_BUSINESS = {"console.logout", "console.change_password", "console.create_token", "console.revoke_token"}

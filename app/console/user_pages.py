"""The console's users page: users and their roles and passwords, API tokens."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for

from app.console.actions import ApiError
from app.console.pages import Page, attempt, me, registry_call
from app.console.services import ConsoleServices
from app.registry.users import ROLES


def register(bp: Blueprint, services: ConsoleServices) -> None:
    registry = services.registry

    # ---- users and tokens --------------------------------------------------------------------

    @bp.get("/users")
    def users() -> Page:
        who = me()
        everyone = registry.list_users() if who.admin else [who]
        tokens = registry.list_tokens(None if who.admin else who.name)
        return render_template("users.html", users=everyone, tokens=tokens, roles=ROLES)

    @bp.post("/users")
    def add_user() -> Page:
        form = request.form
        name, role = form.get("name", "").strip(), form.get("role", "viewer")

        def add() -> None:
            if registry.get_user(name) is not None:
                raise ApiError(409, f"user {name} exists already")
            registry_call(lambda: registry.put_user(name, form.get("password", ""), role))

        return attempt(add, f"user {name} added", url_for("console.users"))

    @bp.post("/users/<name>/password")
    def change_password(name: str) -> Page:
        if name != me().name and not me().admin:
            flash("you may change only your own password", "error")
            return redirect(url_for("console.users"))
        return attempt(
            lambda: registry_call(lambda: registry.put_user(name, request.form.get("password", ""))),
            f"password of {name} changed",
            url_for("console.users"),
        )

    @bp.post("/users/<name>/role")
    def change_role(name: str) -> Page:
        return attempt(
            lambda: registry_call(lambda: registry.put_user(name, None, request.form.get("role"))),
            f"role of {name} changed",
            url_for("console.users"),
        )

    @bp.post("/users/<name>/delete")
    def delete_user(name: str) -> Page:
        return attempt(
            lambda: registry_call(lambda: registry.delete_user(name)),
            f"user {name} deleted",
            url_for("console.users"),
        )

    @bp.post("/tokens")
    def create_token() -> Page:
        label = request.form.get("label", "")
        _, text = registry.create_token(me().name, label)
        who = me()
        return render_template(
            "users.html",
            users=registry.list_users() if who.admin else [who],
            tokens=registry.list_tokens(None if who.admin else who.name),
            roles=ROLES,
            new_token=text,
        )

    @bp.post("/tokens/<token_id>/revoke")
    def revoke_token(token_id: str) -> Page:
        who = me()
        mine = {t.id for t in registry.list_tokens(who.name)}

        def revoke() -> None:
            if (token_id not in mine and not who.admin) or not registry.delete_token(token_id):
                raise ApiError(404, f"no token {token_id}")

        return attempt(revoke, "token revoked", url_for("console.users"))

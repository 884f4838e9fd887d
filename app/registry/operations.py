"""The typed operations on registry entities within one transaction, and their reference checks.

`Store` adds to the generic `StoreBase` one get/list/put/delete per kind, user passwords and the
admin bootstrap, and `verify()`, which the registry runs before every commit. Deleting an entity
that another refers to fails at once with `InUseError`. Imports the registry's values and kinds.
"""

from __future__ import annotations

import sqlalchemy as sa

from app.registry import kinds, schema, tokens
from app.registry.connectors import DataSource, Formatter, OutputAdapter, Receiver
from app.registry.errors import InUseError, ValidationError
from app.registry.plans import ExecutionPlan, bound_streams, check_text
from app.registry.store import Outcome, StoreBase
from app.registry.streams import StreamDefinition, split_stream_id, stream_id
from app.registry.tokens import Token
from app.registry.users import User, check_password, hash_password, random_password
from app.registry.validation import check_name

ADMIN = "admin"


class Store(StoreBase):
    # ---- users ----------------------------------------------------------------------------

    def get_user(self, name: str) -> User | None:
        return self.get(kinds.USER, name)

    def list_users(self) -> list[User]:
        return self.list(kinds.USER)

    def put_user(self, name: str, password: str | None, role: str | None = None) -> Outcome:
        """Create a user (`password` of at least 8 characters; `role` admin by default) or change
        an existing user's password and/or role (None keeps it). The last admin stays an admin."""
        check_name("user", name)
        existing = self.get_user(name)
        if password is not None:
            password_hash = hash_password(check_password(password, f"user {name!r}: password"))
        elif existing is not None:
            password_hash = existing.password_hash
        else:
            msg = f"user {name!r}: a new user needs a password"
            raise ValidationError(msg, field="password")
        role = role or (existing.role if existing is not None else "admin")
        user = User(name, password_hash, role=role).checked()
        if existing is not None and existing.admin and not user.admin:
            self._keep_an_admin(name)
        return self.put(kinds.USER, user)

    def delete_user(self, name: str) -> bool:
        """Delete a user and revoke its API tokens; refused for the last admin."""
        user = self.get_user(name)
        if user is not None and user.admin:
            self._keep_an_admin(name)
        self.conn.execute(sa.delete(schema.tokens).where(schema.tokens.c.user_name == name))
        return self.delete(kinds.USER, name)

    def _keep_an_admin(self, leaving: str) -> None:
        if not any(u.admin and u.name != leaving for u in self.list_users()):
            msg = f"user {leaving!r} is the last admin: make another user an admin first"
            raise InUseError(msg)

    # ---- API tokens -----------------------------------------------------------------------

    def create_token(self, user: str, label: str) -> tuple[Token, str]:
        """A new bearer token for `user`: its record, and the token itself (shown once, never kept)."""
        if self.get_user(user) is None:
            msg = f"token: user {user!r} does not exist"
            raise ValidationError(msg, field="user")
        token, secret = tokens.new_token(user, label)
        self.conn.execute(sa.insert(schema.tokens).values(tokens.to_row(token, secret)))
        return token, secret

    def list_tokens(self, user: str | None = None) -> list[Token]:
        query = sa.select(schema.tokens).order_by(schema.tokens.c.created, schema.tokens.c.id)
        if user is not None:
            query = query.where(schema.tokens.c.user_name == user)
        return [tokens.from_row(r) for r in self.conn.execute(query).mappings()]

    def delete_token(self, token_id: str) -> bool:
        """Revoke a token; False if there was none."""
        deleted = self.conn.execute(sa.delete(schema.tokens).where(schema.tokens.c.id == token_id))
        return bool(deleted.rowcount)

    def token_user(self, presented: str) -> User | None:
        """The user a presented bearer token belongs to; None for an unknown or revoked token."""
        parsed = tokens.parse(presented)
        if parsed is None:
            return None
        row = (
            self.conn.execute(sa.select(schema.tokens).where(schema.tokens.c.id == parsed[0]))
            .mappings()
            .first()
        )
        if row is None or not tokens.matches(parsed[1], row["secret_sha256"]):
            return None
        return self.get_user(row["user_name"])

    def ensure_admin(self, password: str | None) -> str | None:
        """With no users yet, create `admin`: with `password` if given, else a random one, returned."""
        if self.list_users():
            return None
        generated = None if password else random_password()
        self.put_user(ADMIN, password or generated or "")
        return generated

    # ---- streams --------------------------------------------------------------------------

    def get_stream(self, id: str) -> StreamDefinition | None:  # noqa: A002 - the stream id
        return self.get(kinds.STREAM, stream_id(*split_stream_id(id)))

    def list_streams(self) -> list[StreamDefinition]:
        return self.list(kinds.STREAM)

    def put_stream(self, stream: StreamDefinition) -> Outcome:
        return self.put(kinds.STREAM, stream.checked())

    def delete_stream(self, id: str) -> bool:  # noqa: A002 - the stream id
        sid = stream_id(*split_stream_id(id))
        users = [f"formatter {f.name!r}" for f in self.list_formatters() if f.stream == sid]
        users += [f"plan {p.name!r}" for p in self.list_plans() if sid in bound_streams(p.text)]
        if users:
            msg = f"stream {sid} is used by {', '.join(users)}; change or delete those first"
            raise InUseError(msg)
        return self.delete(kinds.STREAM, sid)

    # ---- plans ----------------------------------------------------------------------------

    def get_plan(self, name: str) -> ExecutionPlan | None:
        return self.get(kinds.PLAN, name)

    def list_plans(self) -> list[ExecutionPlan]:
        return self.list(kinds.PLAN)

    def put_plan(self, plan: ExecutionPlan) -> Outcome:
        """Store a plan; its SiddhiQL is checked (against the streams) before commit."""
        return self.put(kinds.PLAN, plan.checked())

    def delete_plan(self, name: str) -> bool:
        return self.delete(kinds.PLAN, name)

    # ---- receivers ------------------------------------------------------------------------

    def get_receiver(self, name: str) -> Receiver | None:
        return self.get(kinds.RECEIVER, name)

    def list_receivers(self) -> list[Receiver]:
        return self.list(kinds.RECEIVER)

    def put_receiver(self, receiver: Receiver) -> Outcome:
        return self.put(kinds.RECEIVER, receiver.checked())

    def delete_receiver(self, name: str) -> bool:
        return self.delete(kinds.RECEIVER, name)

    # ---- data sources ---------------------------------------------------------------------

    def get_datasource(self, name: str) -> DataSource | None:
        return self.get(kinds.DATASOURCE, name)

    def list_datasources(self) -> list[DataSource]:
        return self.list(kinds.DATASOURCE)

    def put_datasource(self, datasource: DataSource) -> Outcome:
        return self.put(kinds.DATASOURCE, datasource.checked())

    def delete_datasource(self, name: str) -> bool:
        users = [f"output adapter {a.name!r}" for a in self.list_adapters() if a.datasource == name]
        if users:
            msg = f"data source {name!r} is used by {', '.join(users)}; change or delete those first"
            raise InUseError(msg)
        return self.delete(kinds.DATASOURCE, name)

    # ---- output adapters ------------------------------------------------------------------

    def get_adapter(self, name: str) -> OutputAdapter | None:
        return self.get(kinds.ADAPTER, name)

    def list_adapters(self) -> list[OutputAdapter]:
        return self.list(kinds.ADAPTER)

    def put_adapter(self, adapter: OutputAdapter) -> Outcome:
        return self.put(kinds.ADAPTER, adapter.checked())

    def delete_adapter(self, name: str) -> bool:
        users = [f"formatter {f.name!r}" for f in self.list_formatters() if f.adapter == name]
        if users:
            msg = f"output adapter {name!r} is used by {', '.join(users)}; change or delete those first"
            raise InUseError(msg)
        return self.delete(kinds.ADAPTER, name)

    # ---- formatters -----------------------------------------------------------------------

    def get_formatter(self, name: str) -> Formatter | None:
        return self.get(kinds.FORMATTER, name)

    def list_formatters(self) -> list[Formatter]:
        return self.list(kinds.FORMATTER)

    def put_formatter(self, formatter: Formatter) -> Outcome:
        """Store a formatter; its stream and adapter must exist by the end of the transaction."""
        formatter = formatter.checked()
        # the table's foreign keys need both now; say which one is missing first
        self._check_formatter(formatter)
        return self.put(kinds.FORMATTER, formatter)

    def delete_formatter(self, name: str) -> bool:
        return self.delete(kinds.FORMATTER, name)

    # ---- references -----------------------------------------------------------------------

    def verify(self) -> None:
        """Check the references of everything this transaction wrote; raise on the first problem."""
        streams = set(self.touched_keys(kinds.STREAM))
        plans = set(self.touched_keys(kinds.PLAN))
        if streams:
            plans |= {p.name for p in self.list_plans() if bound_streams(p.text) & streams}
        for name in sorted(plans):
            plan = self.get_plan(name)
            if plan is not None:
                check_text(plan, self.get_stream)
        for name in self.touched_keys(kinds.ADAPTER):
            adapter = self.get_adapter(name)
            if adapter is not None and adapter.datasource is not None:
                if self.get_datasource(adapter.datasource) is None:
                    msg = f"output adapter {name!r}: data source {adapter.datasource!r} does not exist"
                    raise ValidationError(msg, field="config.datasource")
        formatters = set(self.touched_keys(kinds.FORMATTER))
        if streams:
            formatters |= {f.name for f in self.list_formatters() if f.stream in streams}
        for name in sorted(formatters):
            formatter = self.get_formatter(name)
            if formatter is not None:
                self._check_formatter(formatter)

    def _check_formatter(self, formatter: Formatter) -> None:
        what = f"formatter {formatter.name!r}"
        check_name(what, formatter.adapter, "adapter")
        if self.get_adapter(formatter.adapter) is None:
            msg = f"{what}: output adapter {formatter.adapter!r} does not exist"
            raise ValidationError(msg, field="adapter")
        stream = self.get_stream(formatter.stream)
        if stream is None:
            msg = f"{what}: stream {formatter.stream} does not exist"
            raise ValidationError(msg, field="stream")
        attributes = [name for name, _ in stream.siddhi_attributes()]
        for column, attribute in (formatter.mappings or {}).items():
            if attribute not in attributes:
                msg = (
                    f"{what}: mappings: {column} <- {attribute!r}, but {formatter.stream} has no attribute "
                    f"{attribute!r} (it has {', '.join(attributes)})"
                )
                raise ValidationError(msg, field=f"config.mappings.{column}")

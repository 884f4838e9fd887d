"""One-call CRUD per entity for `Registry`: each opens its own transaction on a `Store`.

`get_*` returns None when absent, `list_*` sorts by key, `put_*` creates or replaces and says
which (`Outcome`), `delete_*` says whether there was anything to delete. Streams are keyed by
id (`name:version`), everything else by name. Imports the registry's store and values.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from app.registry.connectors import DataSource, Formatter, OutputAdapter, Receiver
from app.registry.operations import Store
from app.registry.plans import ExecutionPlan
from app.registry.store import Outcome
from app.registry.streams import StreamDefinition
from app.registry.tokens import Token
from app.registry.users import User


class Crud:
    def transaction(self) -> AbstractContextManager[Store]:
        raise NotImplementedError

    def reading(self) -> AbstractContextManager[Store]:
        raise NotImplementedError

    # ---- users ----------------------------------------------------------------------------

    def get_user(self, name: str) -> User | None:
        with self.reading() as s:
            return s.get_user(name)

    def list_users(self) -> list[User]:
        with self.reading() as s:
            return s.list_users()

    def put_user(self, name: str, password: str | None, role: str | None = None) -> Outcome:
        with self.transaction() as s:
            return s.put_user(name, password, role)

    def delete_user(self, name: str) -> bool:
        with self.transaction() as s:
            return s.delete_user(name)

    # ---- API tokens -----------------------------------------------------------------------

    def create_token(self, user: str, label: str) -> tuple[Token, str]:
        with self.transaction() as s:
            return s.create_token(user, label)

    def list_tokens(self, user: str | None = None) -> list[Token]:
        with self.reading() as s:
            return s.list_tokens(user)

    def delete_token(self, token_id: str) -> bool:
        with self.transaction() as s:
            return s.delete_token(token_id)

    def token_user(self, presented: str) -> User | None:
        with self.reading() as s:
            return s.token_user(presented)

    # ---- streams --------------------------------------------------------------------------

    def get_stream(self, id: str) -> StreamDefinition | None:  # noqa: A002 - the stream id
        with self.reading() as s:
            return s.get_stream(id)

    def list_streams(self) -> list[StreamDefinition]:
        with self.reading() as s:
            return s.list_streams()

    def put_stream(self, stream: StreamDefinition) -> Outcome:
        with self.transaction() as s:
            return s.put_stream(stream)

    def delete_stream(self, id: str) -> bool:  # noqa: A002 - the stream id
        with self.transaction() as s:
            return s.delete_stream(id)

    # ---- plans ----------------------------------------------------------------------------

    def get_plan(self, name: str) -> ExecutionPlan | None:
        with self.reading() as s:
            return s.get_plan(name)

    def list_plans(self) -> list[ExecutionPlan]:
        with self.reading() as s:
            return s.list_plans()

    def put_plan(self, plan: ExecutionPlan) -> Outcome:
        with self.transaction() as s:
            return s.put_plan(plan)

    def delete_plan(self, name: str) -> bool:
        with self.transaction() as s:
            return s.delete_plan(name)

    # ---- receivers ------------------------------------------------------------------------

    def get_receiver(self, name: str) -> Receiver | None:
        with self.reading() as s:
            return s.get_receiver(name)

    def list_receivers(self) -> list[Receiver]:
        with self.reading() as s:
            return s.list_receivers()

    def put_receiver(self, receiver: Receiver) -> Outcome:
        with self.transaction() as s:
            return s.put_receiver(receiver)

    def delete_receiver(self, name: str) -> bool:
        with self.transaction() as s:
            return s.delete_receiver(name)

    # ---- data sources ---------------------------------------------------------------------

    def get_datasource(self, name: str) -> DataSource | None:
        with self.reading() as s:
            return s.get_datasource(name)

    def list_datasources(self) -> list[DataSource]:
        with self.reading() as s:
            return s.list_datasources()

    def put_datasource(self, datasource: DataSource) -> Outcome:
        with self.transaction() as s:
            return s.put_datasource(datasource)

    def delete_datasource(self, name: str) -> bool:
        with self.transaction() as s:
            return s.delete_datasource(name)

    # ---- output adapters ------------------------------------------------------------------

    def get_adapter(self, name: str) -> OutputAdapter | None:
        with self.reading() as s:
            return s.get_adapter(name)

    def list_adapters(self) -> list[OutputAdapter]:
        with self.reading() as s:
            return s.list_adapters()

    def put_adapter(self, adapter: OutputAdapter) -> Outcome:
        with self.transaction() as s:
            return s.put_adapter(adapter)

    def delete_adapter(self, name: str) -> bool:
        with self.transaction() as s:
            return s.delete_adapter(name)

    # ---- formatters -----------------------------------------------------------------------

    def get_formatter(self, name: str) -> Formatter | None:
        with self.reading() as s:
            return s.get_formatter(name)

    def list_formatters(self) -> list[Formatter]:
        with self.reading() as s:
            return s.list_formatters()

    def put_formatter(self, formatter: Formatter) -> Outcome:
        with self.transaction() as s:
            return s.put_formatter(formatter)

    def delete_formatter(self, name: str) -> bool:
        with self.transaction() as s:
            return s.delete_formatter(name)

"""Receivers, data sources, output adapters and formatters: the values that connect plans to the world.

Their `config`/`options` are generic JSON objects stored as given; the adapters and formatters
interpret them (see docs/declarative.md for the keys in use). The connection settings of
receivers, data sources and adapters may hold `${VAR}` references (passwords): they are stored
as written and expanded only in memory by `resolved(env)`, when a node builds the component
(a receiver's config is not read by the node yet).
Imports only the registry's checks and SQLAlchemy's URL parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from app.registry.errors import RegistryError, ValidationError
from app.registry.streams import split_stream_id, stream_id
from app.registry.substitution import SubstitutionError, check_references, resolvable, substitute
from app.registry.validation import check_bool, check_choice, check_json_object, check_name, check_str

RECEIVER_TYPES = ("thrift", "http")
ADAPTER_TYPES = ("rdbms", "wso2event", "logger", "http")
FORMATTER_TYPES = ("map", "json", "xml", "text", "wso2event")


def _config(what: str, field: str, value: object, reserved: tuple[str, ...]) -> dict[str, Any]:
    """A JSON object whose keys do not shadow the entity's own fields (the declarative file flattens them)."""
    config = check_json_object(what, field, value)
    for key in reserved:
        if key in config:
            msg = f"{what}: {field} key {key!r} is reserved (it is a field of its own)"
            raise ValidationError(msg, field=f"{field}.{key}")
    return config


T = TypeVar("T")


def _references_checked(what: str, field: str, value: T) -> T:
    """`value` unchanged, after checking the syntax of its `${VAR}` references."""
    try:
        check_references(value, field)
    except SubstitutionError as exc:
        msg = f"{what}: {exc}"
        raise ValidationError(msg, field=field) from None
    return value


def _expanded(what: str, field: str, value: T, env: Mapping[str, str]) -> T:
    """`value` with its `${VAR}` references expanded from `env` (in memory, never stored)."""
    try:
        expanded: T = substitute(value, env, field)
    except SubstitutionError as exc:
        msg = f"{what}: {exc}"
        raise RegistryError(msg) from None
    return expanded


@dataclass(frozen=True)
class Receiver:
    """An input endpoint (Thrift Data Bridge or HTTP JSON) with its settings."""

    name: str
    type: str
    config: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    revision: int = field(default=0, compare=False)

    def checked(self) -> Receiver:
        check_name("receiver", self.name)
        what = f"receiver {self.name!r}"
        check_choice(what, "type", self.type, RECEIVER_TYPES)
        check_bool(what, "enabled", self.enabled)
        config = _config(what, "config", self.config, ("name", "type", "enabled"))
        return replace(self, config=_references_checked(what, "config", config))


@dataclass(frozen=True)
class DataSource:
    """A named database (SQLAlchemy URL) that RDBMS output adapters write to."""

    name: str
    url: str
    options: dict[str, Any] = field(default_factory=dict)
    revision: int = field(default=0, compare=False)

    def checked(self) -> DataSource:
        check_name("data source", self.name)
        what = f"data source {self.name!r}"
        check_str(what, "url", self.url)
        _references_checked(what, "url", self.url)
        self.check_url({})
        options = _config(what, "options", self.options, ("name", "url"))
        return replace(self, options=_references_checked(what, "options", options))

    def check_url(self, env: Mapping[str, str]) -> None:
        """Check that the URL, expanded from `env`, parses (skipped if it names a variable `env` lacks)."""
        url = resolvable(self.url, env)
        if url is None:
            return
        try:
            make_url(url)
        except ArgumentError:
            shown = f"{self.url!r}" + (" (once expanded)" if url != self.url else "")
            msg = f"data source {self.name!r}: url {shown} is not an SQLAlchemy URL such as sqlite:///var/x.db or mysql+pymysql://user:pw@host/db"
            raise ValidationError(msg, field="url") from None

    def resolved(self, env: Mapping[str, str]) -> DataSource:
        """The data source with `${VAR}` references in its url and options expanded from `env`."""
        what = f"data source {self.name!r}"
        return replace(
            self,
            url=_expanded(what, "url", self.url, env),
            options=_expanded(what, "options", self.options, env),
        )


@dataclass(frozen=True)
class OutputAdapter:
    """Where formatted events go: a database table, a peer (wso2event), the log, or HTTP."""

    name: str
    type: str
    config: dict[str, Any] = field(default_factory=dict)
    revision: int = field(default=0, compare=False)

    @property
    def datasource(self) -> str | None:
        """The data source an RDBMS adapter writes to (`config.datasource`)."""
        value = self.config.get("datasource")
        return value if self.type == "rdbms" and isinstance(value, str) else None

    def checked(self) -> OutputAdapter:
        check_name("output adapter", self.name)
        what = f"output adapter {self.name!r}"
        check_choice(what, "type", self.type, ADAPTER_TYPES)
        config = _config(what, "config", self.config, ("name", "type"))
        if self.type == "rdbms" and not isinstance(config.get("datasource"), str):
            msg = f"{what}: an rdbms adapter needs config.datasource, the name of a data source"
            raise ValidationError(msg, field="config.datasource")
        return replace(self, config=_references_checked(what, "config", config))

    def resolved(self, env: Mapping[str, str]) -> OutputAdapter:
        """The adapter with `${VAR}` references in its config expanded from `env`."""
        return replace(self, config=_expanded(f"output adapter {self.name!r}", "config", self.config, env))


@dataclass(frozen=True)
class Formatter:
    """Maps events of one stream (`name:version`) to the form an output adapter sends."""

    name: str
    stream: str
    adapter: str
    type: str
    config: dict[str, Any] = field(default_factory=dict)
    revision: int = field(default=0, compare=False)

    @property
    def mappings(self) -> dict[str, str] | None:
        """A map formatter's `column → attribute` mappings (`config.mappings`), if any."""
        value = self.config.get("mappings")
        return value if self.type == "map" and isinstance(value, dict) else None

    def checked(self) -> Formatter:
        check_name("formatter", self.name)
        what = f"formatter {self.name!r}"
        check_str(what, "stream", self.stream)
        name, version = split_stream_id(self.stream)
        check_name(what, name, "stream")
        check_name(what, self.adapter, "adapter")
        check_choice(what, "type", self.type, FORMATTER_TYPES)
        config = _config(what, "config", self.config, ("name", "stream", "adapter", "type"))
        mappings = config.get("mappings")
        if self.type == "map" and mappings is not None:
            if not isinstance(mappings, dict) or not all(isinstance(v, str) for v in mappings.values()):
                msg = f"{what}: mappings must be a table of column = attribute names"
                raise ValidationError(msg, field="config.mappings")
        return replace(self, stream=stream_id(name, version), config=config)

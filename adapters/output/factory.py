"""`build_adapter`: an output adapter by type name from its config dict and the node's data sources.

Owns the table of adapter types. Config errors are `AdapterConfigError`s whose message and
`.key` name the offending key. Nothing starts here: call `start()` on the result.
Imports `formatters` and sibling modules only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa

from adapters.output.base import AdapterConfigError, OutputAdapter
from adapters.output.http_post import HttpAdapter
from adapters.output.logger import LoggerAdapter
from adapters.output.rdbms import RdbmsAdapter, RdbmsSettings
from adapters.output.wso2event import Wso2EventAdapter
from formatters.config import Settings

Datasources = Mapping[str, "str | sa.URL"]


def _rdbms(name: str, settings: Settings, datasources: Datasources) -> OutputAdapter:
    return RdbmsAdapter(name, RdbmsSettings.read(settings, datasources))


_BUILDERS: dict[str, Callable[[str, Settings, Datasources], OutputAdapter]] = {
    "rdbms": _rdbms,
    "mysql": _rdbms,  # WSO2 CEP's name for it; any SQLAlchemy URL works
    "logger": lambda name, settings, _: LoggerAdapter(name, settings),
    "http": lambda name, settings, _: HttpAdapter(name, settings),
    "wso2event": lambda name, settings, _: Wso2EventAdapter(name, settings),
}

ADAPTER_TYPES = tuple(_BUILDERS)


def build_adapter(
    type: str,  # noqa: A002 - the config's own word
    name: str,
    config: Mapping[str, Any] | None = None,
    datasources: Datasources | None = None,
) -> OutputAdapter:
    """An unstarted output adapter of `type` called `name`.

    `datasources` maps data source names to SQLAlchemy URLs (the rdbms adapter's
    `datasource` key refers to them). Raises `AdapterConfigError` naming the key.
    """
    builder = _BUILDERS.get(type)
    if builder is None:
        msg = f"output adapter {name!r}: type {type!r} is unknown (known: {', '.join(ADAPTER_TYPES)})"
        raise AdapterConfigError(msg, "type")
    if not isinstance(name, str) or not name:
        msg = f"output adapter name must be a non-empty string, got {name!r}"
        raise AdapterConfigError(msg, "name")
    settings = Settings(config, where=f"output adapter {name!r} ({type})", error=AdapterConfigError)
    adapter = builder(name, settings, datasources or {})
    settings.done()
    return adapter

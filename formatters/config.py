"""Reading one component's config dict: typed getters whose errors name the key.

Owns `Settings` (used by every formatter and, through `formatters`, by the output
adapters) and `FormatterConfigError`. A config dict is what TOML or the registry gives:
strings, numbers, booleans, lists and nested tables. Unknown keys are errors, as in the
node configuration. Imports only `engine.errors`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from engine.errors import CEPError, ConfigError, FormatError

_MISSING: Any = object()


class FormatterConfigError(FormatError, ConfigError):
    """A formatter's configuration is invalid; `.key` is the offending key (e.g. `mappings[1].attribute`)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


ErrorFactory = Callable[[str, "str | None"], CEPError]


class Settings:
    """Typed, key-naming access to one config dict.

    `where` prefixes every message (e.g. `formatter 'map'`); `prefix` is the path of this
    dict inside the component's config (e.g. `mappings[0].`). Call `done()` once every
    key has been read: it rejects the keys nobody asked for.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None,
        *,
        where: str,
        error: ErrorFactory = FormatterConfigError,
        prefix: str = "",
    ) -> None:
        if config is None:
            config = {}
        self.where = where
        self._error = error
        self._prefix = prefix
        if not isinstance(config, Mapping):
            self.fail("", f"must be a table of keys, got {type(config).__name__}")
        self._config = config
        self._read: set[str] = set()

    # ---- errors ---------------------------------------------------------------------------

    def key(self, key: str) -> str:
        """The full path of `key` as the messages show it."""
        return f"{self._prefix}{key}" if key else self._prefix.rstrip(".")

    def fail(self, key: str, message: str) -> NoReturn:
        path = self.key(key)
        text = f"{self.where}: {path}: {message}" if path else f"{self.where}: {message}"
        raise self._error(text, path or None)

    # ---- raw access -----------------------------------------------------------------------

    def __contains__(self, key: str) -> bool:
        self._read.add(key)  # asking for a key makes it a known one
        return key in self._config

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        self._read.add(key)
        if key in self._config and self._config[key] is not None:
            return self._config[key]
        if default is _MISSING:
            self.fail(key, "is required")
        return default

    def done(self) -> None:
        unknown = [k for k in self._config if k not in self._read]
        if unknown:
            known = ", ".join(sorted(self._read)) or "none"
            self.fail(str(unknown[0]), f"unknown key (known keys: {known})")

    # ---- typed getters --------------------------------------------------------------------

    def string(self, key: str, default: Any = _MISSING, *, choices: tuple[str, ...] = ()) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            self.fail(key, f"must be a string, got {_kind(value)} {value!r}")
        if choices and value not in choices:
            self.fail(key, f"must be one of {', '.join(choices)}; got {value!r}")
        if not value and default is _MISSING:
            self.fail(key, "must not be empty")
        return value

    def optional_string(self, key: str) -> str | None:
        value = self.raw(key, None)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            self.fail(key, f"must be a non-empty string, got {_kind(value)} {value!r}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, got {_kind(value)} {value!r}")
        return value

    def integer(self, key: str, default: Any = _MISSING, *, minimum: int | None = None) -> int:
        value = self.raw(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(key, f"must be an integer, got {_kind(value)} {value!r}")
        if minimum is not None and value < minimum:
            self.fail(key, f"must be at least {minimum}, got {value}")
        return value

    def number(self, key: str, default: Any = _MISSING, *, minimum: float | None = None) -> float:
        value = self.raw(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.fail(key, f"must be a number, got {_kind(value)} {value!r}")
        if minimum is not None and value < minimum:
            self.fail(key, f"must be at least {minimum}, got {value}")
        return float(value)

    def strings(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        value = self.raw(key, default)
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            self.fail(key, f"must be a list of strings, got {_kind(value)} {value!r}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item:
                self.fail(f"{key}[{i}]", f"must be a non-empty string, got {_kind(item)} {item!r}")
        return tuple(value)

    def string_table(self, key: str) -> dict[str, str]:
        """A table of string → string (e.g. HTTP headers, attribute → field name)."""
        value = self.raw(key, {})
        if not isinstance(value, Mapping):
            self.fail(key, f"must be a table of strings, got {_kind(value)}")
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, str):
                self.fail(f"{key}.{k}", f"must be a string, got {_kind(v)} {v!r}")
        return dict(value)

    def tables(self, key: str, default: Any = _MISSING) -> list[Settings]:
        """A list of tables, each read through its own `Settings` (call `done()` on each)."""
        value = self.raw(key, default)
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            self.fail(key, f"must be a list of tables, got {_kind(value)}")
        items: list[Settings] = []
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                self.fail(f"{key}[{i}]", f"must be a table, got {_kind(item)} {item!r}")
            items.append(
                Settings(item, where=self.where, error=self._error, prefix=self.key(f"{key}[{i}]") + ".")
            )
        return items


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "table"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__

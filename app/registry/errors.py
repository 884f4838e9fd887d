"""Errors of the registry, all `ConfigError`s so the CLI and console show them as messages.

```
ConfigError (engine.errors)
└─ RegistryError
    ├─ ValidationError (field)        an entity with a bad value; the message names the field
    │   └─ InvalidPlan (query_error)  the SiddhiQL text does not compile or does not match streams
    ├─ InUseError                     deleting something another entity refers to
    ├─ SchemaError                    the database schema is missing, older or newer than this code
    ├─ SubstitutionError (substitution)  a malformed `${VAR}`, or an unset one without a default
    └─ TomlWriteError (toml_writer)   a value TOML cannot hold (null, a non-finite float, ...)
```

Imports nothing but `engine.errors`.
"""

from __future__ import annotations

from engine.errors import ConfigError, QueryError


class RegistryError(ConfigError):
    """Root of the registry's errors."""


class ValidationError(RegistryError):
    """An entity failed validation; `field` names the offending field (dotted for nested ones)."""

    def __init__(self, message: str, *, field: str) -> None:
        self.field = field
        super().__init__(message)


class InvalidPlan(ValidationError):
    """A plan's SiddhiQL text is wrong; `query_error` carries every problem with its position."""

    def __init__(self, plan: str, query_error: QueryError) -> None:
        self.plan = plan
        self.query_error = query_error
        msg = f"plan {plan!r}: text: " + query_error.format(f"<plan {plan}>")
        super().__init__(msg, field="text")


class InUseError(RegistryError):
    """The entity cannot be deleted (or changed that way) while others refer to it."""


class SchemaError(RegistryError):
    """The registry database schema is not the one this code expects."""

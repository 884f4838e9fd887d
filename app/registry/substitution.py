"""`${NAME}` references to environment variables (passwords, per-site URLs).

`${NAME}` is the variable's value, `${NAME:-default}` its value or `default` when it is unset
or empty, and `$$` a literal `$`. A reference to an unset variable without a default is an
error naming the variable and where it is used. `check_references` checks the syntax only
(the registry keeps references as written); `substitute` expands them. Imports only
`app.registry.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.registry.errors import RegistryError

_REFERENCE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{[^}]*\}?")


class SubstitutionError(RegistryError):
    """A malformed `${...}` reference, or one to an unset variable without a default; the
    message says where."""


class _Unresolved(Exception):
    pass


def substitute(data: Any, env: Mapping[str, str], where: str = "") -> Any:
    """`data` (plain TOML/YAML values) with every `${...}` in its strings replaced."""
    if isinstance(data, str):
        return _expand(data, env, where)
    if isinstance(data, list):
        return [substitute(v, env, f"{where}[{i}]") for i, v in enumerate(data)]
    if isinstance(data, dict):
        return {k: substitute(v, env, f"{where}.{k}" if where else str(k)) for k, v in data.items()}
    return data


def check_references(data: Any, where: str = "") -> None:
    """Raise `SubstitutionError` for a malformed reference anywhere in `data`; expand nothing."""
    substitute(data, _Anything(), where)


def resolvable(text: str, env: Mapping[str, str]) -> str | None:
    """`text` expanded with `env`, or None when it names a variable `env` lacks (no default)."""
    try:
        return _expand(text, env, "", missing=_Unresolved)
    except _Unresolved:
        return None


class _Anything(dict[str, str]):
    """An environment in which every variable is set (to check the syntax alone)."""

    def get(self, key: str, default: Any = None) -> str:
        return "x"


def _expand(text: str, env: Mapping[str, str], where: str, missing: type[Exception] | None = None) -> str:
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        if name is None:
            msg = f"{where}: {whole!r} is not a variable reference; write ${{NAME}} or ${{NAME:-default}} ($$ for a literal $)"
            raise SubstitutionError(msg)
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        if missing is not None:
            raise missing
        msg = f"{where}: environment variable {name} is not set (give it a value, or a default: ${{{name}:-...}})"
        raise SubstitutionError(msg)

    return _REFERENCE.sub(replace, text)

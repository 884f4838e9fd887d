"""Stream definitions as they travel in `defineStream` (PROTOCOL §5): parse, compare, render.

Owns the JSON form of a Data Bridge stream definition, the validation messages WSO2 sends
back in `mtd`, and the `ade` conflict rules for redefining a name. Parsing is lenient the
way Gson's is (single quotes, unquoted keys) because the CEP 3.x pizza-shop client relies on
it. Imports only this package's errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import json5

from adapters.thrift.errors import DefinitionConflict, MalformedDefinition

ATTRIBUTE_TYPES = ("INT", "LONG", "FLOAT", "DOUBLE", "BOOL", "STRING")
DEFAULT_VERSION = "1.0.0"
_VERSION = re.compile(r"\d+\.\d+\.\d+")
_SECTIONS = (
    ("metaData", "Meta", "meta"),
    ("correlationData", "Correlation", "correlation"),
    ("payloadData", "Payload", "payload"),
)

Attribute = tuple[str, str]


def _attributes(items: Iterable[Sequence[str]]) -> tuple[Attribute, ...]:
    return tuple((str(name), str(kind).upper()) for name, kind in items)


@dataclass(frozen=True)
class WireStreamDefinition:
    """A stream as Data Bridge clients see it: three attribute lists of (name, TYPE)."""

    name: str
    version: str = DEFAULT_VERSION
    meta: tuple[Attribute, ...] = ()
    correlation: tuple[Attribute, ...] = ()
    payload: tuple[Attribute, ...] = ()
    nick_name: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for section in ("meta", "correlation", "payload"):
            object.__setattr__(self, section, _attributes(getattr(self, section)))
        object.__setattr__(self, "tags", tuple(self.tags))
        for section in ("meta", "correlation", "payload"):
            for attr, kind in getattr(self, section):
                if kind not in ATTRIBUTE_TYPES:
                    msg = f"attribute {attr!r} of {section} has type {kind!r}; use one of {', '.join(ATTRIBUTE_TYPES)}"
                    raise MalformedDefinition(msg)

    @property
    def stream_id(self) -> str:
        return f"{self.name}:{self.version}"

    def to_json(self) -> str:
        """Proper (double-quoted) JSON in the §5.1 format; empty parts are left out."""
        doc: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.nick_name is not None:
            doc["nickName"] = self.nick_name
        if self.description is not None:
            doc["description"] = self.description
        if self.tags:
            doc["tags"] = list(self.tags)
        for key, _label, section in _SECTIONS:
            attrs = getattr(self, section)
            if attrs:
                doc[key] = [{"name": name, "type": kind} for name, kind in attrs]
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def same_definition(a: WireStreamDefinition, b: WireStreamDefinition) -> bool:
    """Equal as §5.3 compares: name, version and the three attribute lists, in order."""
    return (
        a.name == b.name
        and a.version == b.version
        and a.meta == b.meta
        and a.correlation == b.correlation
        and a.payload == b.payload
    )


def parse_definition(text: str) -> WireStreamDefinition:
    """Parse a `defineStream` JSON string; raise `MalformedDefinition` with WSO2's message."""
    malformed = f" Malformed stream definition {text}"
    try:
        doc = json5.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise MalformedDefinition(malformed) from exc
    if not isinstance(doc, dict):
        raise MalformedDefinition(malformed)
    name = _scalar(doc.get("name"), malformed)
    if not name:
        msg = "stream name is null"
        raise MalformedDefinition(msg)
    version = _scalar(doc.get("version"), malformed) or DEFAULT_VERSION
    if ":" in name:
        msg = f"name {name} cannot contain '-' "
        raise MalformedDefinition(msg)
    if ":" in version:
        msg = f"version {version} cannot contain '-' "
        raise MalformedDefinition(msg)
    if not _VERSION.fullmatch(version):
        msg = f"version {version} does not adhere to the format x.x.x "
        raise MalformedDefinition(msg)
    sections = [_section(doc.get(key), label, malformed) for key, label, _ in _SECTIONS]
    tags = doc.get("tags") or []
    if not isinstance(tags, list):
        raise MalformedDefinition(malformed)
    return WireStreamDefinition(
        name=name,
        version=version,
        meta=sections[0],
        correlation=sections[1],
        payload=sections[2],
        nick_name=_scalar(doc.get("nickName"), malformed),
        description=_scalar(doc.get("description"), malformed),
        tags=tuple(str(tag) for tag in tags),
    )


def _scalar(value: object, malformed: str) -> str | None:
    """Gson reads a number where a string is expected as its text; anything else is malformed."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise MalformedDefinition(malformed)


def _section(value: object, label: str, malformed: str) -> tuple[Attribute, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise MalformedDefinition(malformed)
    attrs: list[Attribute] = []
    for item in value:
        if not isinstance(item, dict):
            raise MalformedDefinition(malformed)
        name = _scalar(item.get("name"), malformed)
        kind = item.get("type")
        if not isinstance(kind, str) or kind.upper() not in ATTRIBUTE_TYPES or not name:
            msg = (
                " Malformed stream definition, Invalid type assigned to attribute name "
                f'"{name}" in {label} data attributes'
            )
            raise MalformedDefinition(msg)
        attrs.append((name, kind.upper()))
    return tuple(attrs)


def check_definition(
    new: WireStreamDefinition, stored: Iterable[WireStreamDefinition]
) -> WireStreamDefinition | None:
    """Apply the §5.3 redefinition rules against the stored definitions.

    Returns the stored definition when `new` equals one with its name and version (defining
    is idempotent), None when `new` may be stored, and raises `DefinitionConflict` with
    WSO2's message when it differs from the stored one or changes an attribute's type.
    """
    same_name = [d for d in stored if d.name == new.name]
    for old in same_name:
        if old.version == new.version:
            if same_definition(old, new):
                return old
            msg = (
                f"Similar event stream for {new.to_json()} with the same name and version "
                f"already exist: {old.to_json()}"
            )
            raise DefinitionConflict(msg)
    for old in same_name:
        for _key, _label, section in _SECTIONS:
            known = dict(getattr(old, section))
            for attr, kind in getattr(new, section):
                if attr in known and known[attr] != kind:
                    msg = (
                        f"Attribute type mismatch {section} {attr} type:{kind} was already defined "
                        f"with type:{known[attr]} in stream {old.stream_id}; keep the type or "
                        "rename the attribute"
                    )
                    raise DefinitionConflict(msg)
    return None

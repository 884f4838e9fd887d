"""Stream definitions (WSO2 style: `name:version` with meta, correlation and payload attributes).

Owns the `StreamDefinition` value, its checks, and how its attributes flatten into a Siddhi
stream (`meta_x`, `correlation_x`, then the payload). Imports only the registry's checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from app.registry.errors import ValidationError
from app.registry.validation import check_name, check_str

#: attribute types of a stream definition, as WSO2 Data Bridge names them
ATTRIBUTE_TYPES = ("STRING", "INT", "LONG", "FLOAT", "DOUBLE", "BOOL")
_ALIASES = {"BOOLEAN": "BOOL", "INTEGER": "INT"}
_VERSION = re.compile(r"\d+\.\d+\.\d+\Z")
_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SECTIONS = ("meta", "correlation", "payload")


@dataclass(frozen=True)
class Attribute:
    name: str
    type: str  # one of ATTRIBUTE_TYPES


@dataclass(frozen=True)
class StreamDefinition:
    """A stream's schema; its id is `name:version` (e.g. `orderStream:1.0.0`)."""

    name: str
    version: str = "1.0.0"
    description: str = ""
    meta: tuple[Attribute, ...] = ()
    correlation: tuple[Attribute, ...] = ()
    payload: tuple[Attribute, ...] = ()
    revision: int = field(default=0, compare=False)

    @property
    def id(self) -> str:
        return stream_id(self.name, self.version)

    def siddhi_attributes(self) -> list[tuple[str, str]]:
        """The attributes of the matching Siddhi stream, in order, with lower-case Siddhi types."""
        out = [(f"meta_{a.name}", a.type) for a in self.meta]
        out += [(f"correlation_{a.name}", a.type) for a in self.correlation]
        out += [(a.name, a.type) for a in self.payload]
        return [(name, kind.lower()) for name, kind in out]

    def checked(self) -> StreamDefinition:
        """This definition with types in canonical form; raises `ValidationError` naming the field."""
        what = f"stream {self.name}:{self.version}" if isinstance(self.name, str) else "stream"
        check_name("stream", self.name)
        check_str(what, "version", self.version)
        if not _VERSION.match(self.version):
            msg = f"{what}: version must look like 1.0.0 (got {self.version!r})"
            raise ValidationError(msg, field="version")
        check_str(what, "description", self.description)
        checked = replace(
            self,
            meta=_checked_attributes(what, "meta", self.meta),
            correlation=_checked_attributes(what, "correlation", self.correlation),
            payload=_checked_attributes(what, "payload", self.payload),
        )
        seen: set[str] = set()
        for flat, _ in checked.siddhi_attributes():
            if flat in seen:
                msg = f"{what}: attribute {flat!r} is defined twice"
                raise ValidationError(msg, field="payload")
            seen.add(flat)
        return checked


def stream_id(name: str, version: str) -> str:
    return f"{name}:{version}"


def split_stream_id(value: str) -> tuple[str, str]:
    """`orderStream:1.0.0` → (`orderStream`, `1.0.0`); a missing version means 1.0.0."""
    name, _, version = value.partition(":")
    return name, version or "1.0.0"


def attribute_type(what: str, field: str, value: object) -> str:
    """The canonical (upper-case) name of an attribute type, accepting any case."""
    if isinstance(value, str):
        upper = value.upper()
        upper = _ALIASES.get(upper, upper)
        if upper in ATTRIBUTE_TYPES:
            return upper
    msg = f"{what}: {field} must be one of {', '.join(ATTRIBUTE_TYPES)} (got {value!r})"
    raise ValidationError(msg, field=field)


def _checked_attributes(what: str, section: str, attributes: object) -> tuple[Attribute, ...]:
    if not isinstance(attributes, (tuple, list)):
        msg = f"{what}: {section} must be a list of attributes"
        raise ValidationError(msg, field=section)
    out = []
    names: set[str] = set()
    for i, attribute in enumerate(attributes):
        where = f"{section}[{i}]"
        if not isinstance(attribute, Attribute):
            msg = f"{what}: {where} must be an attribute with a name and a type"
            raise ValidationError(msg, field=where)
        if not isinstance(attribute.name, str) or not _ATTRIBUTE.match(attribute.name):
            msg = f"{what}: {where}.name must be an identifier (got {attribute.name!r})"
            raise ValidationError(msg, field=f"{where}.name")
        if attribute.name in names:
            msg = f"{what}: {section} attribute {attribute.name!r} is defined twice"
            raise ValidationError(msg, field=f"{where}.name")
        names.add(attribute.name)
        out.append(Attribute(attribute.name, attribute_type(what, f"{where}.type", attribute.type)))
    return tuple(out)

"""The declarative document: plain data (as read from TOML or YAML) ↔ registry values.

A document is a table with the lists `streams`, `plans`, `receivers`, `datasources`,
`adapters` and `formatters` (format: docs/declarative.md). Keys an entity does not define
become its `config` (receivers, adapters, formatters) or `options` (data sources). Plans come
from `file` (relative to the document) or inline `text`. Parsing collects every problem it
finds; each message names the entry and the key. Imports the registry's values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engine
from app.registry.connectors import DataSource, Formatter, OutputAdapter, Receiver
from app.registry.errors import RegistryError
from app.registry.plans import ExecutionPlan, plan_name
from app.registry.streams import SECTIONS, Attribute, StreamDefinition

SECTION_NAMES = ("streams", "plans", "receivers", "datasources", "adapters", "formatters")
PLAN_KEYS = ("name", "file", "text", "enabled", "snapshot_interval_minutes", "distributed_mode", "ha_mode")
STREAM_KEYS = ("name", "version", "description", *SECTIONS)


@dataclass(frozen=True)
class PlanSource:
    """Where a plan's text came from, for error positions: a file path or `doc:plans[i].text`."""

    filename: str
    text: str


@dataclass
class Desired:
    """Everything a document asks for, checked field by field (references are checked on apply)."""

    streams: list[StreamDefinition] = field(default_factory=list)
    plans: list[ExecutionPlan] = field(default_factory=list)
    receivers: list[Receiver] = field(default_factory=list)
    datasources: list[DataSource] = field(default_factory=list)
    adapters: list[OutputAdapter] = field(default_factory=list)
    formatters: list[Formatter] = field(default_factory=list)
    sources: dict[str, PlanSource] = field(default_factory=dict)  # plan name → source
    errors: list[str] = field(default_factory=list)


class _EntryError(Exception):
    pass


class _PlanTextError(_EntryError):
    """The plan text's own errors, already positioned (`file:line:col: ...`)."""


def parse_document(data: object, base_dir: Path, filename: str) -> Desired:
    """The values a document describes; problems go to `Desired.errors`, not exceptions."""
    desired = Desired()
    if not isinstance(data, Mapping):
        desired.errors.append(f"{filename}: expected a table with {', '.join(SECTION_NAMES)}")
        return desired
    for key in data:
        if key not in SECTION_NAMES:
            desired.errors.append(f"{filename}: unknown section {key!r} (known: {', '.join(SECTION_NAMES)})")
    readers: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
        "streams": _stream,
        "plans": lambda e, where: _plan(e, where, base_dir, filename, desired),
        "receivers": lambda e, _: Receiver(
            _req(e, "name"), _req(e, "type"), _rest(e, "name", "type", "enabled"), e.get("enabled", True)
        ),
        "datasources": lambda e, _: DataSource(_req(e, "name"), _req(e, "url"), _rest(e, "name", "url")),
        "adapters": lambda e, _: OutputAdapter(_req(e, "name"), _req(e, "type"), _rest(e, "name", "type")),
        "formatters": lambda e, _: Formatter(
            _req(e, "name"),
            _req(e, "stream"),
            _req(e, "adapter"),
            _req(e, "type"),
            _rest(e, "name", "stream", "adapter", "type"),
        ),
    }
    for section in SECTION_NAMES:
        entries = data.get(section, [])
        if not isinstance(entries, list):
            desired.errors.append(f"{filename}: {section} must be a list of tables ([[{section}]] in TOML)")
            continue
        keys: dict[str, str] = {}
        for i, entry in enumerate(entries):
            where = f"{filename}: {section}[{i}]"
            try:
                if not isinstance(entry, Mapping):
                    msg = "must be a table of keys"
                    raise _EntryError(msg)
                value = readers[section](entry, f"{section}[{i}]").checked()
            except _PlanTextError as exc:
                desired.errors.append(str(exc))
                continue
            except (_EntryError, RegistryError) as exc:
                desired.errors.append(f"{where}: {exc}")
                continue
            key = value.id if isinstance(value, StreamDefinition) else value.name
            if key in keys:
                desired.errors.append(f"{where}: {key} is already defined by {keys[key]}")
                continue
            keys[key] = f"{section}[{i}]"
            getattr(desired, section).append(value)
    return desired


def _req(entry: Mapping[str, Any], key: str) -> Any:
    if key not in entry:
        msg = f"{key} is required"
        raise _EntryError(msg)
    return entry[key]


def _rest(entry: Mapping[str, Any], *fixed: str) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in fixed}


def _check_keys(entry: Mapping[str, Any], known: tuple[str, ...]) -> None:
    for key in entry:
        if key not in known:
            msg = f"unknown key {key!r} (known: {', '.join(known)})"
            raise _EntryError(msg)


def _attributes(value: object, section: str) -> tuple[Attribute, ...]:
    """`[{name = "x", type = "STRING"}, ...]` or `{x = "STRING", ...}` (in order)."""
    if isinstance(value, Mapping):
        return tuple(Attribute(k, v) for k, v in value.items())
    if not isinstance(value, list):
        msg = f"{section} must be a list of {{name, type}} tables or a table of name = type"
        raise _EntryError(msg)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or set(item) != {"name", "type"}:
            msg = f"{section}[{i}] must be a table with exactly name and type"
            raise _EntryError(msg)
        out.append(Attribute(item["name"], item["type"]))
    return tuple(out)


def _stream(entry: Mapping[str, Any], _where: str) -> StreamDefinition:
    _check_keys(entry, STREAM_KEYS)
    return StreamDefinition(
        _req(entry, "name"),
        entry.get("version", "1.0.0"),
        entry.get("description", ""),
        meta=_attributes(entry.get("meta", []), "meta"),
        correlation=_attributes(entry.get("correlation", []), "correlation"),
        payload=_attributes(entry.get("payload", []), "payload"),
    )


def _plan(
    entry: Mapping[str, Any], where: str, base_dir: Path, filename: str, desired: Desired
) -> ExecutionPlan:
    _check_keys(entry, PLAN_KEYS)
    if ("file" in entry) == ("text" in entry):
        msg = "give the plan's SiddhiQL as either file (a path relative to this document) or text"
        raise _EntryError(msg)
    if "file" in entry:
        if not isinstance(entry["file"], str):
            msg = "file must be a path"
            raise _EntryError(msg)
        path = base_dir / entry["file"]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            msg = f"file: cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
            raise _EntryError(msg) from None
        source = str(path)
    else:
        text = entry["text"]
        source = f"{filename}:{where}.text"
    name = entry.get("name") or (plan_name(text) if isinstance(text, str) else None)
    if name is None:
        try:
            engine.parse(text)
        except engine.QueryError as exc:  # show why the name could not be read
            raise _PlanTextError(exc.format(source, with_source=True)) from None
        msg = "name is required (or an @Plan:name annotation in the plan)"
        raise _EntryError(msg)
    plan = ExecutionPlan(
        name,
        text,
        entry.get("enabled", True),
        entry.get("snapshot_interval_minutes", 0),
        entry.get("distributed_mode", "none"),
        entry.get("ha_mode"),
    )
    if isinstance(name, str):
        desired.sources[name] = PlanSource(source, text if isinstance(text, str) else "")
    return plan


def _attribute_list(attributes: tuple[Attribute, ...]) -> list[dict[str, str]]:
    return [{"name": a.name, "type": a.type} for a in attributes]


def build_document(
    streams: list[StreamDefinition],
    plans: list[ExecutionPlan],
    receivers: list[Receiver],
    datasources: list[DataSource],
    adapters: list[OutputAdapter],
    formatters: list[Formatter],
    plan_files: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The document for these values; `plan_files` maps plan names to a `file` to refer to."""
    doc: dict[str, Any] = {}
    doc["streams"] = [
        {"name": s.name, "version": s.version}
        | ({"description": s.description} if s.description else {})
        | {section: _attribute_list(getattr(s, section)) for section in SECTIONS if getattr(s, section)}
        for s in streams
    ]
    doc["plans"] = []
    for p in plans:
        entry: dict[str, Any] = {"name": p.name}
        if plan_files and p.name in plan_files:
            entry["file"] = plan_files[p.name]
        else:
            entry["text"] = p.text
        entry |= {
            "enabled": p.enabled,
            "snapshot_interval_minutes": p.snapshot_interval_minutes,
            "distributed_mode": p.distributed_mode,
        }
        if p.ha_mode is not None:
            entry["ha_mode"] = p.ha_mode
        doc["plans"].append(entry)
    doc["receivers"] = [{"name": r.name, "type": r.type, "enabled": r.enabled} | r.config for r in receivers]
    doc["datasources"] = [{"name": d.name, "url": d.url} | d.options for d in datasources]
    doc["adapters"] = [{"name": a.name, "type": a.type} | a.config for a in adapters]
    doc["formatters"] = [
        {"name": f.name, "stream": f.stream, "adapter": f.adapter, "type": f.type} | f.config
        for f in formatters
    ]
    return {key: value for key, value in doc.items() if value}

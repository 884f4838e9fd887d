"""`cepheus apply` and `cepheus export`: the registry as one declarative file (TOML or YAML).

`apply_file` reads a document (format: docs/declarative.md), checks every entry and every
plan (`engine.validate`; errors as `plan-file:line:col`) before touching the database, then
creates or updates everything in one registry transaction in which references are checked:
an error anywhere leaves the registry as it was. Entries equal to what is stored are reported
`unchanged` and write nothing, so applying a file twice changes nothing. Entities the file
does not mention are left alone. `export_document` writes the registry back in the same form.

`${VAR}` references in the connection settings of receivers, data sources and adapters are
stored as written (a node expands them when it builds the component: no secret in the
registry); everywhere else they are expanded on reading the file.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import engine
from app.registry import InvalidPlan, Outcome, Registry, RegistryError
from app.registry.documents import Desired, build_document, parse_document
from app.registry.substitution import SubstitutionError, substitute
from app.registry.toml_writer import TomlWriteError, dumps
from engine.errors import ConfigError

FORMATS = ("toml", "yaml")
KEPT_REFERENCES = ("receivers", "datasources", "adapters")  # sections whose settings keep `${VAR}`
EXPANDED_KEYS = ("name", "type", "enabled", "datasource")  # ... except in these keys


class DeclarativeError(ConfigError):
    """The file cannot be applied; `problems` lists every message (also joined in str())."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Applied:
    kind: str  # stream | plan | receiver | datasource | adapter | formatter
    name: str
    outcome: Outcome

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.outcome}"


class _DryRun(Exception):
    pass


def file_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix == ".toml":
        return "toml"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    msg = f"{path}: cannot tell the format; name the file *.toml, *.yaml or *.yml"
    raise DeclarativeError([msg])


def load_document(path: str | Path, env: Mapping[str, str] | None = None) -> Any:
    """The plain data of a TOML or YAML file (by extension), `${VAR}` references expanded
    except in the connection settings (`KEPT_REFERENCES`), which keep them as written."""
    fmt = file_format(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        msg = f"{path}: cannot read the file ({exc.strerror})"
        raise DeclarativeError([msg]) from None
    try:
        data = tomllib.loads(raw.decode("utf-8")) if fmt == "toml" else yaml.safe_load(raw) or {}
        return _expand_document(data, os.environ if env is None else env)
    except SubstitutionError as exc:
        msg = f"{path}: {exc}"
        raise DeclarativeError([msg]) from None
    except UnicodeDecodeError:
        msg = f"{path}: not UTF-8 text"
        raise DeclarativeError([msg]) from None
    except tomllib.TOMLDecodeError as exc:
        msg = f"{path}: {exc}"
        raise DeclarativeError([msg]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        msg = f"{where}: {getattr(exc, 'problem', None) or exc}"
        raise DeclarativeError([msg]) from None


def _expand_document(data: Any, env: Mapping[str, str]) -> Any:
    if not isinstance(data, dict):
        return substitute(data, env)
    out: dict[str, Any] = {}
    for section, entries in data.items():
        if section in KEPT_REFERENCES and isinstance(entries, list):
            out[section] = [_expand_entry(e, env, f"{section}[{i}]") for i, e in enumerate(entries)]
        else:
            out[section] = substitute(entries, env, str(section))
    return out


def _expand_entry(entry: Any, env: Mapping[str, str], where: str) -> Any:
    if not isinstance(entry, dict):
        return substitute(entry, env, where)
    return {k: substitute(v, env, f"{where}.{k}") if k in EXPANDED_KEYS else v for k, v in entry.items()}


def read_desired(path: str | Path, env: Mapping[str, str] | None = None) -> Desired:
    """Parse and check a file without a database: entries, then each plan's SiddhiQL.

    A data source URL with `${VAR}` references is checked as expanded from `env` (default:
    this process's environment) when every variable it names is set there.
    """
    env = os.environ if env is None else env
    desired = parse_document(load_document(path, env), Path(path).parent, str(path))
    for datasource in desired.datasources:
        try:
            datasource.check_url(env)
        except RegistryError as exc:
            desired.errors.append(f"{path}: {exc}")
    for plan in desired.plans:
        source = desired.sources[plan.name]
        try:
            engine.validate(plan.text)
        except engine.QueryError as exc:
            desired.errors.append(exc.format(source.filename, with_source=True))
    if desired.errors:
        raise DeclarativeError(desired.errors)
    return desired


def apply_file(
    registry: Registry, path: str | Path, *, dry_run: bool = False, env: Mapping[str, str] | None = None
) -> list[Applied]:
    """Create or update everything in `path` in one transaction; what happened to each entry.

    With `dry_run`, do all the work and checks, report, and roll back.
    """
    desired = read_desired(path, env)
    results: list[Applied] = []
    try:
        with registry.transaction() as store:
            for s in desired.streams:
                results.append(Applied("stream", s.id, store.put_stream(s)))
            for d in desired.datasources:
                results.append(Applied("datasource", d.name, store.put_datasource(d)))
            for a in desired.adapters:
                results.append(Applied("adapter", a.name, store.put_adapter(a)))
            for r in desired.receivers:
                results.append(Applied("receiver", r.name, store.put_receiver(r)))
            for p in desired.plans:
                results.append(Applied("plan", p.name, store.put_plan(p)))
            for f in desired.formatters:
                results.append(Applied("formatter", f.name, store.put_formatter(f)))
            if dry_run:
                store.verify()
                raise _DryRun
    except _DryRun:
        pass
    except InvalidPlan as exc:
        source = desired.sources.get(exc.plan)
        if source is None:  # a stored plan broken by a stream this file changes
            msg = f"{path}: {exc}"
            raise DeclarativeError([msg]) from exc
        raise DeclarativeError([exc.query_error.format(source.filename, with_source=True)]) from exc
    except RegistryError as exc:
        msg = f"{path}: {exc}"
        raise DeclarativeError([msg]) from exc
    return results


def export_document(registry: Registry, plan_files: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything the registry holds except users, as a document (one consistent read)."""
    with registry.reading() as store:
        return build_document(
            store.list_streams(),
            store.list_plans(),
            store.list_receivers(),
            store.list_datasources(),
            store.list_adapters(),
            store.list_formatters(),
            plan_files,
        )


def dump_document(doc: Mapping[str, Any], fmt: str) -> str:
    """A document as TOML or YAML text."""
    if fmt == "toml":
        try:
            return dumps(doc)
        except TomlWriteError as exc:
            raise DeclarativeError([str(exc)]) from None
    if fmt == "yaml":
        return yaml.dump(
            json.loads(json.dumps(doc)), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
        )
    msg = f"unknown format {fmt!r} (known: {', '.join(FORMATS)})"
    raise DeclarativeError([msg])


def export_file(registry: Registry, path: str | Path, *, plan_dir: str | Path | None = None) -> None:
    """Write the registry to `path` (format by extension), plans inline or as files in `plan_dir`."""
    fmt = file_format(path)
    plan_files: dict[str, str] | None = None
    if plan_dir is not None:
        plan_files = {}
        directory = Path(plan_dir)
        directory.mkdir(parents=True, exist_ok=True)
        for plan in registry.list_plans():
            target = directory / f"{plan.name}.siddhi"
            target.write_text(plan.text, encoding="utf-8")
            plan_files[plan.name] = os.path.relpath(target, Path(path).parent)
    text = dump_document(export_document(registry, plan_files), fmt)
    Path(path).write_text(text, encoding="utf-8")


class _Dumper(yaml.SafeDumper):
    """YAML with multi-line strings (plan texts) as `|` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)

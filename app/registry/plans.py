"""Execution plans: the `ExecutionPlan` value, its checks, and the check of its SiddhiQL text.

A plan's text must compile (`engine.validate`), its `@Plan:name` (if any) must equal the plan's
name, and every stream it `@Import`s or `@Export`s must be a registered stream definition with
the same attributes (meta and correlation attributes as `meta_x`, `correlation_x`).
Imports the engine's parser and the registry's streams and checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import engine
from app.registry.errors import InvalidPlan, ValidationError
from app.registry.streams import StreamDefinition, split_stream_id, stream_id
from app.registry.validation import check_bool, check_choice, check_name, check_str
from engine.errors import Diagnostic, QueryValidationError
from engine.query.definitions import Annotation
from engine.query.definitions import StreamDefinition as SiddhiStream

DISTRIBUTED_MODES = ("none", "redundant", "spark")
HA_MODES = ("failover", "active-active", "full-active-active")


@dataclass(frozen=True)
class ExecutionPlan:
    """A SiddhiQL execution plan and how the cluster runs it.

    `ha_mode` applies only to `distributed_mode="redundant"` (default there: failover);
    `snapshot_interval_minutes=0` turns periodic snapshots off.
    """

    name: str
    text: str
    enabled: bool = True
    snapshot_interval_minutes: int = 0
    distributed_mode: str = "none"
    ha_mode: str | None = None
    revision: int = field(default=0, compare=False)

    def checked(self) -> ExecutionPlan:
        """This plan with defaults filled in; raises `ValidationError` naming the field.

        Checks the fields only; `check_text` checks the SiddhiQL.
        """
        check_name("plan", self.name)
        what = f"plan {self.name!r}"
        check_str(what, "text", self.text)
        if not self.text.strip():
            msg = f"{what}: text must not be empty"
            raise ValidationError(msg, field="text")
        check_bool(what, "enabled", self.enabled)
        interval = self.snapshot_interval_minutes
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 0:
            msg = f"{what}: snapshot_interval_minutes must be a whole number >= 0 (0 = off), got {interval!r}"
            raise ValidationError(msg, field="snapshot_interval_minutes")
        mode = check_choice(what, "distributed_mode", self.distributed_mode, DISTRIBUTED_MODES)
        ha_mode = self.ha_mode
        if mode == "redundant":
            ha_mode = check_choice(what, "ha_mode", ha_mode or "failover", HA_MODES)
        elif ha_mode is not None:
            msg = f"{what}: ha_mode applies only to distributed_mode = 'redundant' (this plan is {mode!r})"
            raise ValidationError(msg, field="ha_mode")
        return replace(self, ha_mode=ha_mode)


def plan_name(text: str) -> str | None:
    """The `@Plan:name` (or `@App:name`) of a plan's text, if it parses and has one."""
    try:
        return engine.parse(text).name
    except engine.QueryError:
        return None


def check_text(plan: ExecutionPlan, streams: Callable[[str], StreamDefinition | None]) -> None:
    """Compile the plan's text and check it against its name and the registered streams.

    `streams(id)` looks a stream definition up. Raises `InvalidPlan` carrying a `QueryError`
    with the position of every problem.
    """
    try:
        app = engine.validate(plan.text)
    except engine.QueryError as exc:
        raise InvalidPlan(plan.name, exc) from exc
    problems: list[Diagnostic] = []
    if app.name is not None and app.name != plan.name:
        annotation = next(a for a in app.annotations if a.key in ("plan:name", "app:name"))
        problems.append(
            _at(annotation, f"the plan is named {plan.name!r} but its text says @Plan:name({app.name!r})")
        )
    for definition in app.definitions:
        if not isinstance(definition, SiddhiStream):
            continue
        for annotation in definition.annotations:
            if annotation.key in ("import", "export"):
                problem = _check_binding(definition, annotation, streams)
                if problem is not None:
                    problems.append(problem)
    if problems:
        raise InvalidPlan(plan.name, QueryValidationError(problems, plan.text))


def _check_binding(
    definition: SiddhiStream, annotation: Annotation, streams: Callable[[str], StreamDefinition | None]
) -> Diagnostic | None:
    value = annotation.get(None) or annotation.get("stream")
    if not value:
        return _at(annotation, f"@{annotation.name} needs a stream id such as 'name:1.0.0'")
    sid = stream_id(*split_stream_id(value))
    registered = streams(sid)
    if registered is None:
        return _at(annotation, f"stream {sid} is not defined; define it (a [[streams]] entry) first")
    expected = registered.siddhi_attributes()
    actual = [(a.name, a.type.value) for a in definition.attributes]
    if expected != actual:
        return _at(
            annotation,
            f"stream {definition.name} ({_show(actual)}) does not match the definition of {sid} "
            f"({_show(expected)})",
        )
    return None


def _show(attributes: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in attributes)


def _at(annotation: Annotation, message: str) -> Diagnostic:
    s = annotation.span
    return Diagnostic(message, s.line, s.col, s.end_line, s.end_col)


@dataclass(frozen=True)
class StreamBinding:
    """A plan stream bound to a registered stream: `@Import('id')` (input) or `@Export('id')` (output)."""

    direction: str  # "import" or "export"
    stream: str  # the stream's name in the plan
    stream_id: str  # the registered stream, name:version


class BindsStreams:
    """A deployed plan's `bindings`, by direction."""

    bindings: list[StreamBinding]

    @property
    def imports(self) -> list[StreamBinding]:
        return [b for b in self.bindings if b.direction == "import"]

    @property
    def exports(self) -> list[StreamBinding]:
        return [b for b in self.bindings if b.direction == "export"]


def stream_bindings(app: engine.App) -> list[StreamBinding]:
    """Every `@Import`/`@Export` of a parsed plan, in the order of the text."""
    out = []
    for definition in app.definitions:
        if not isinstance(definition, SiddhiStream):
            continue
        for annotation in definition.annotations:
            if annotation.key in ("import", "export"):
                value = annotation.get(None) or annotation.get("stream")
                if value:
                    sid = stream_id(*split_stream_id(value))
                    out.append(StreamBinding(annotation.key, definition.name, sid))
    return out


def bound_streams(text: str) -> set[str]:
    """The stream ids a plan's text `@Import`s or `@Export`s (empty if it does not parse)."""
    try:
        app = engine.parse(text)
    except engine.QueryError:
        return set()
    return {b.stream_id for b in stream_bindings(app)}

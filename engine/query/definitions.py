"""Definition nodes: annotations, streams, tables, windows, triggers, functions."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.query.expressions import NO_SPAN, FunctionCall, Span
from engine.types import AttrType


@dataclass(eq=False)
class AnnotationElement:
    key: str | None
    value: str
    span: Span = NO_SPAN


@dataclass(eq=False)
class Annotation:
    """`@name(key='value', 'positional', @nested(...))`; `@App:name('x')` has name `App:name`."""

    name: str
    elements: list[AnnotationElement] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    span: Span = NO_SPAN

    @property
    def key(self) -> str:
        return self.name.lower()

    def get(self, key: str | None, default: str | None = None) -> str | None:
        """The value of element `key` (case-insensitive); `None` asks for the first positional."""
        for element in self.elements:
            if key is None and element.key is None:
                return element.value
            if key is not None and element.key is not None and element.key.lower() == key.lower():
                return element.value
        return default

    @property
    def values(self) -> list[str]:
        return [e.value for e in self.elements]


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    for a in annotations:
        if a.key == name.lower():
            return a
    return None


def find_annotations(annotations: list[Annotation], name: str) -> list[Annotation]:
    return [a for a in annotations if a.key == name.lower()]


@dataclass(eq=False)
class Attribute:
    name: str
    type: AttrType
    span: Span = NO_SPAN


@dataclass(eq=False)
class Definition:
    name: str
    span: Span = field(default=NO_SPAN, kw_only=True)
    name_span: Span = field(default=NO_SPAN, kw_only=True)
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class AttributedDefinition(Definition):
    attributes: list[Attribute] = field(default_factory=list)

    @property
    def attribute_names(self) -> list[str]:
        return [a.name for a in self.attributes]

    @property
    def attribute_types(self) -> list[AttrType]:
        return [a.type for a in self.attributes]

    def index_of(self, name: str) -> int | None:
        for i, a in enumerate(self.attributes):
            if a.name == name:
                return i
        return None


@dataclass(eq=False)
class StreamDefinition(AttributedDefinition):
    pass


@dataclass(eq=False)
class TableDefinition(AttributedDefinition):
    pass


@dataclass(eq=False)
class WindowDefinition(AttributedDefinition):
    """`define window W (...) length(10) output all events`."""

    window: FunctionCall | None = None
    output_event_type: str = "all"  # current | expired | all


@dataclass(eq=False)
class TriggerDefinition(Definition):
    """`define trigger T at every 5 sec` (every_ms) or `at 'start'` / a cron string (at)."""

    every_ms: int | None = None
    at: str | None = None

    @property
    def attributes(self) -> list[Attribute]:
        return [Attribute("triggered_time", AttrType.LONG)]


@dataclass(eq=False)
class FunctionDefinition(Definition):
    language: str
    return_type: AttrType
    body: str


@dataclass(eq=False)
class AggregationDefinition(Definition):
    """`define aggregation A from S select ... group by ... aggregate by ts every sec...year`.

    Parsed and kept on the tree; see the planner for what runs.
    """

    source: object = None  # queries.SingleInput
    selector: object = None  # queries.Selector
    aggregate_by: object = None  # expressions.Variable | None
    durations: list[str] = field(default_factory=list)

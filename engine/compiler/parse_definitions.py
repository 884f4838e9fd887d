"""Annotations and `define stream|table|window|trigger|function|aggregation|partition`."""

from __future__ import annotations

from engine.compiler.parse_expressions import ExpressionParser
from engine.compiler.stream import span_of
from engine.compiler.tokens import SCRIPT, STRING, Token
from engine.query.definitions import (
    AggregationDefinition,
    Annotation,
    AnnotationElement,
    Attribute,
    Definition,
    FunctionDefinition,
    StreamDefinition,
    TableDefinition,
    TriggerDefinition,
    WindowDefinition,
)
from engine.query.expressions import FunctionCall, Variable
from engine.query.queries import PartitionDefinition, ValuePartition
from engine.types import AttrType


class DefinitionParser(ExpressionParser):
    # ---- annotations ----------------------------------------------------------------

    def annotations(self) -> list[Annotation]:
        found = []
        while self.at_punct("@"):
            found.append(self.annotation())
        return found

    def annotation(self) -> Annotation:
        start = self.expect_punct("@")
        name = self.name("an annotation name after '@'")
        if self.accept_punct(":"):
            name = f"{name}:{self.name('an annotation name after the colon')}"
        ann = Annotation(name)
        if self.accept_punct("("):
            if not self.at_punct(")"):
                self._annotation_item(ann)
                while self.accept_punct(","):
                    self._annotation_item(ann)
            self.expect_punct(")", f" to close @{name}(")
        ann.span = self.span_from(start)
        return ann

    def _annotation_item(self, ann: Annotation) -> None:
        if self.at_punct("@"):
            ann.annotations.append(self.annotation())
            return
        start = self.tok
        key: str | None = None
        if self.tok.kind == STRING and self.peek().is_punct("="):
            key = self.advance().text
            self.advance()
        elif self.at_name():
            parts = [self.name()]
            while self.at_punct(".", "-", ":"):
                parts.append(self.advance().text)
                parts.append(self.name("a property name"))
            key = "".join(parts)
            self.expect_punct("=", f" after annotation property '{key}'")
        value = self.string_value("a quoted annotation value")
        ann.elements.append(AnnotationElement(key, value, self.span_from(start)))

    # ---- definitions ---------------------------------------------------------------------

    def definition(self, annotations: list[Annotation], start: Token) -> Definition:
        self.expect_word("define")
        kind_tok = self.tok
        kind = kind_tok.text.lower() if kind_tok.kind == "word" else ""
        self.advance()
        if kind == "stream":
            d: Definition = self._attributed(StreamDefinition)
        elif kind == "table":
            d = self._attributed(TableDefinition)
        elif kind == "window":
            d = self._window_definition()
        elif kind == "trigger":
            d = self._trigger_definition()
        elif kind == "function":
            d = self._function_definition()
        elif kind == "aggregation":
            d = self._aggregation_definition()
        elif kind == "partition":
            d = self._partition_definition()
        else:
            self.fail(
                "expected 'stream', 'table', 'window', 'trigger', 'function', "
                "'aggregation' or 'partition' after 'define'",
                kind_tok,
            )
        d.annotations = annotations
        d.span = self.span_from(start)
        return d

    def _defined_name(self, d_kind: str) -> tuple[str, Token]:
        tok = self.tok
        self.accept_punct("#")
        return self.name(f"a {d_kind} name"), tok

    def _attributes(self) -> list[Attribute]:
        self.expect_punct("(", " to start the attribute list")
        attrs = [self._attribute()]
        while self.accept_punct(","):
            attrs.append(self._attribute())
        self.expect_punct(")", " to close the attribute list")
        return attrs

    def _attribute(self) -> Attribute:
        start = self.tok
        name = self.name("an attribute name")
        type_tok = self.tok
        type_name = self.name("an attribute type")
        kind = AttrType.parse(type_name)
        if kind is None:
            raise self.error(
                f"unknown type '{type_name}'",
                type_tok,
                hint="use string, int, long, float, double, bool or object",
            )
        return Attribute(name, kind, self.span_from(start))

    def _attributed(self, cls: type[StreamDefinition] | type[TableDefinition]) -> Definition:
        name, tok = self._defined_name("stream" if cls is StreamDefinition else "table")
        attrs = self._attributes()
        d = cls(name, attrs)
        d.name_span = span_of(tok)
        if cls is TableDefinition and self.at_word("from"):
            # Siddhi 2.x: `define table T (...) from ('datasource.name'='x', ...)` — kept as
            # an annotation so the table stays in memory unless an adapter claims it.
            self.advance()
            self.expect_punct("(")
            store = Annotation("from")
            while not self.at_punct(")"):
                self._annotation_item(store)
                self.accept_punct(",")
            self.expect_punct(")")
            d.annotations.append(store)
        return d

    def _window_definition(self) -> WindowDefinition:
        name, tok = self._defined_name("window")
        attrs = self._attributes()
        call_start = self.tok
        if self.accept_punct("#"):
            self.expect_word("window")
            self.expect_punct(".")
            call_start = self.tok
        ns = None
        fname = self.name("a window function such as length(10)")
        if self.accept_punct(":"):
            ns, fname = fname, self.name("a window function name")
        call = self.function_call(ns, fname, call_start)
        event_type = "all"
        if self.accept_word("output"):
            event_type = self.output_event_type(required=True)
        d = WindowDefinition(name, attrs, window=call, output_event_type=event_type)
        d.name_span = span_of(tok)
        return d

    def _trigger_definition(self) -> TriggerDefinition:
        name, tok = self._defined_name("trigger")
        self.expect_word("at", " after the trigger name")
        if self.accept_word("every"):
            d = TriggerDefinition(name, every_ms=self.time_value())
        elif self.tok.kind == STRING:
            d = TriggerDefinition(name, at=self.advance().text)
        else:
            self.fail("expected 'every <time>', 'start' or a cron expression in quotes")
        d.name_span = span_of(tok)
        return d

    def _function_definition(self) -> FunctionDefinition:
        name, tok = self._defined_name("function")
        self.expect_punct("[")
        language = self.name("a script language")
        self.expect_punct("]")
        self.expect_word("return")
        type_tok = self.tok
        kind = AttrType.parse(self.name("a return type"))
        if kind is None:
            raise self.error("unknown return type", type_tok)
        if self.tok.kind != SCRIPT:
            self.fail("expected the function body in '{ ... }'")
        body = self.advance().text
        d = FunctionDefinition(name, language, kind, body)
        d.name_span = span_of(tok)
        return d

    def _aggregation_definition(self) -> AggregationDefinition:
        name, tok = self._defined_name("aggregation")
        self.expect_word("from")
        source = self.single_input(allow_window=True)  # type: ignore[attr-defined]
        selector = self.selector()  # type: ignore[attr-defined]
        self.expect_word("aggregate")
        by: Variable | None = None
        if self.accept_word("by"):
            e = self.expression()
            if not isinstance(e, Variable):
                raise self.error("expected an attribute after 'aggregate by'", e.span)
            by = e
        self.expect_word("every")
        durations = [self.name("a duration such as sec or min")]
        while self.at_punct(",", "..."):
            sep = self.advance().text
            durations.append(sep)
            durations.append(self.name("a duration"))
        d = AggregationDefinition(name, source=source, selector=selector, aggregate_by=by)
        d.durations = durations
        d.name_span = span_of(tok)
        return d

    def _partition_definition(self) -> Definition:
        name, tok = self._defined_name("partition")
        self.legacy = True
        self.expect_word("by")
        parts = []
        while True:
            e = self.expression()
            if not isinstance(e, Variable) or e.stream is None:
                raise self.error("expected Stream.attribute in 'define partition ... by'", e.span)
            stream = e.stream
            parts.append(ValuePartition(Variable(e.attribute, span=e.span), stream, span=e.span))
            if not self.accept_punct(","):
                break
        d = PartitionDefinition(name, partition_with=parts)  # type: ignore[arg-type]
        d.name_span = span_of(tok)
        return d

    def output_event_type(self, required: bool = False) -> str:
        """`all events` | `expired events` | `current events` | `events`, also `all-events`."""
        t = self.tok
        kind = None
        if t.is_word("all", "expired", "current"):
            if self.peek().is_word("events") or (
                self.peek().is_punct("-") and self.peek(2).is_word("events")
            ):
                kind = self.advance().text.lower()
                if self.accept_punct("-"):
                    self.legacy = True
                self.advance()
                return kind
        if t.is_word("events"):
            self.advance()
            return "current"
        if required:
            self.fail("expected 'all events', 'expired events' or 'current events'")
        return "default"

    def call_or_fail(self) -> FunctionCall:
        start = self.tok
        ns = None
        name = self.name("a function name")
        if self.accept_punct(":"):
            ns, name = name, self.name("a function name")
        return self.function_call(ns, name, start)

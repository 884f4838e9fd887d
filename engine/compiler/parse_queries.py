"""Queries: `from` inputs (single, join, anonymous), selector, output rate, outputs,
and partitions. Pattern and sequence inputs are in parse_patterns."""

from __future__ import annotations

from engine.compiler.parse_patterns import PatternParser
from engine.compiler.stream import span_of
from engine.compiler.tokens import EOF, INT, PUNCT, Token
from engine.query.definitions import Annotation
from engine.query.expressions import Expr, Variable
from engine.query.queries import (
    AnonymousInput,
    DeleteFrom,
    Filter,
    InsertInto,
    JoinInput,
    OrderBy,
    Output,
    OutputAttribute,
    OutputRate,
    Partition,
    PartitionType,
    Query,
    RangePartition,
    ReturnOutput,
    Selector,
    SetAssignment,
    SingleInput,
    StateInput,
    StreamFunction,
    UpdateOrInsert,
    UpdateTable,
    ValuePartition,
    Window,
)

_CLAUSE_WORDS = (
    "select", "insert", "delete", "update", "return", "output", "group", "having", "order",
    "limit", "offset",
)  # fmt: skip


class QueryParser(PatternParser):
    # ---- query ------------------------------------------------------------------------

    def query(self, annotations: list[Annotation], start: Token) -> Query:
        self.expect_word("from")
        source = self.query_input()
        selector = self.selector() if self.at_word("select") else Selector()
        rate = self.output_rate() if self.at_word("output") else None
        output = self.query_output()
        q = Query(source, output, selector, rate, annotations)
        if self.at_word("partition") and self.peek().is_word("by"):
            self.advance()
            self.advance()
            q.partition_ref = self.name("a partition name after 'partition by'")
        q.span = self.span_from(start)
        return q

    def query_input(self) -> SingleInput | JoinInput | AnonymousInput | StateInput:
        start = self.tok
        if start.is_punct("(") and self.peek().is_word("from"):
            return self.anonymous_input()
        kind = self._classify_input()
        if kind in ("pattern", "sequence"):
            return self.state_input(kind)
        left = self.single_input(allow_window=True, allow_alias=True)
        if kind != "join":
            return left
        return self.join_rest(left, start)

    def _classify_input(self) -> str:
        """Look ahead (to the selector) for `->`, `,`, `join`, `every`, `e=S` or a logical op."""
        if self.at_word("every", "not") or self.at_punct("("):
            return self._state_kind()
        depth = 0
        j = self.i
        found = "single"
        while True:
            t = self.tokens[j]
            if t.kind == EOF:
                break
            if t.kind == PUNCT:
                if t.text in "([":
                    depth += 1
                elif t.text in ")]":
                    depth -= 1
                    if depth < 0:
                        break
                elif depth == 0:
                    if t.text == ";":
                        break
                    if t.text == "->":
                        return "pattern"
                    if t.text == ",":
                        return "sequence"
                    if t.text == "=" and j == self.i + 1:
                        found = "pattern"
                    if (
                        t.text == "<"
                        and self.tokens[j + 1].kind == INT
                        or (t.text == "<" and self.tokens[j + 1].is_punct(":"))
                    ):
                        found = "pattern"
            elif depth == 0 and t.is_word(*_CLAUSE_WORDS):
                break
            elif depth == 0 and t.is_word("join"):
                return "join"
            elif depth == 0 and t.is_word("and", "or") and found == "single":
                found = "pattern"
            elif depth == 0 and t.is_word("within") and found == "single":
                pass
            j += 1
        return found

    def _state_kind(self) -> str:
        """A state input: a `,` between states (outside filters and handler arguments, at
        any group depth) makes it a sequence, else it is a pattern."""
        stack: list[bool] = []  # per open bracket: does it hold states (a group)?
        j = self.i
        while True:
            t = self.tokens[j]
            if t.kind == EOF or (not stack and (t.is_punct(";") or t.is_word(*_CLAUSE_WORDS))):
                return "pattern"
            if t.is_punct("(", "["):
                prev = self.tokens[j - 1] if j > self.i else None
                group = t.text == "(" and (
                    prev is None or prev.is_punct("(", "->", ",") or prev.is_word("every", "and", "or")
                )
                stack.append(group)
            elif t.is_punct(")", "]"):
                if not stack:
                    return "pattern"
                stack.pop()
            elif t.is_punct("->") and all(stack):
                return "pattern"
            elif t.is_punct(",") and all(stack):
                return "sequence"
            j += 1

    def anonymous_input(self) -> AnonymousInput:
        start = self.expect_punct("(")
        inner_start = self.tok
        self.expect_word("from")
        source = self.query_input()
        selector = self.selector() if self.at_word("select") else Selector()
        rate = self.output_rate() if self.at_word("output") else None
        ret_tok = self.expect_word("return", " to end the inner query (from ... return)")
        event_type = self.output_event_type()
        inner = Query(source, ReturnOutput(event_type, span=span_of(ret_tok)), selector, rate)
        inner.span = self.span_from(inner_start)
        self.expect_punct(")", " to close the inner query")
        return AnonymousInput(inner, span=self.span_from(start))

    def single_input(self, allow_window: bool = True, allow_alias: bool = False) -> SingleInput:
        start = self.tok
        inner = fault = False
        if self.accept_punct("#"):
            inner = True
        elif self.accept_punct("!"):
            fault = True
        name_tok = self.tok
        stream = self.name("a stream name")
        si = SingleInput(stream, inner=inner, fault=fault, stream_span=span_of(name_tok))
        target = si.handlers
        while True:
            if self.at_punct("["):
                si_start = self.advance()
                expr = self.expression()
                self.expect_punct("]", f" to close the filter opened at {si_start.line}:{si_start.col}")
                target.append(Filter(expr, self.span_from(si_start)))
            elif self.at_punct("#") and self.peek().is_punct("["):
                hstart = self.advance()
                self.advance()
                expr = self.expression()
                self.expect_punct("]", f" to close the filter opened at {hstart.line}:{hstart.col}")
                target.append(Filter(expr, self.span_from(hstart)))
            elif self.at_punct("#") and self.peek().is_word("window") and self.peek(2).is_punct("."):
                wstart = self.advance()
                if not allow_window:
                    raise self.error("a window is not allowed here", wstart)
                if si.window is not None:
                    raise self.error("a stream can have only one window", wstart)
                self.advance()
                self.advance()
                call = self.call_or_fail()
                si.window = Window(call, self.span_from(wstart))
                target = si.post_handlers
            elif self.at_punct("#"):
                fstart = self.advance()
                call = self.call_or_fail()
                target.append(StreamFunction(call, self.span_from(fstart)))
            else:
                break
        if allow_alias and self.accept_word("as"):
            si.alias = self.name("an alias after 'as'")
        si.span = self.span_from(start)
        return si

    def join_rest(self, left: SingleInput, start: Token) -> JoinInput:
        uni: str | None = None
        if self.accept_word("unidirectional"):
            uni = "left"
        if self.accept_word("left"):
            self.expect_word("outer")
            join_type = "left_outer"
        elif self.accept_word("right"):
            self.expect_word("outer")
            join_type = "right_outer"
        elif self.accept_word("full"):
            self.expect_word("outer")
            join_type = "full_outer"
        elif self.at_word("outer"):
            raise self.error(
                "found 'outer join'; write 'left outer join', 'right outer join' or 'full outer join'",
                self.tok,
            )
        else:
            self.accept_word("inner")
            join_type = "inner"
        self.expect_word("join", " in the join")
        right = self.single_input(allow_window=True, allow_alias=True)
        if self.accept_word("unidirectional"):
            if uni is not None:
                raise self.error("only one side of a join can be unidirectional", self.prev)
            uni = "right"
        j = JoinInput(left, right, join_type, uni)
        if self.accept_word("on"):
            j.on = self.expression()
        if self.accept_word("within"):
            j.within = self.expression()
            if self.accept_punct(","):
                j.within_end = self.expression()
            self.expect_word("per", " after 'within' in a join")
            j.per = self.expression()
        j.span = self.span_from(start)
        return j

    # ---- selector --------------------------------------------------------------------

    def selector(self) -> Selector:
        start = self.expect_word("select")
        sel = Selector()
        if self.accept_punct("*"):
            sel.attributes = None
        else:
            sel.attributes = [self._output_attribute()]
            while self.accept_punct(","):
                sel.attributes.append(self._output_attribute())
        if self.accept_word("group"):
            self.expect_word("by")
            sel.group_by = [self._variable("an attribute after 'group by'")]
            while self.accept_punct(","):
                sel.group_by.append(self._variable("an attribute"))
        if self.accept_word("having"):
            sel.having = self.expression()
        if self.accept_word("order"):
            self.expect_word("by")
            sel.order_by = [self._order_by()]
            while self.accept_punct(","):
                sel.order_by.append(self._order_by())
        if self.accept_word("limit"):
            sel.limit = self.expression()
        if self.accept_word("offset"):
            sel.offset = self.expression()
        sel.span = self.span_from(start)
        return sel

    def _variable(self, what: str) -> Variable:
        e = self.expression()
        if not isinstance(e, Variable):
            raise self.error(f"expected {what}", e.span)
        return e

    def _order_by(self) -> OrderBy:
        v = self._variable("an attribute after 'order by'")
        ascending = True
        if self.accept_word("desc"):
            ascending = False
        else:
            self.accept_word("asc")
        return OrderBy(v, ascending)

    def _output_attribute(self) -> OutputAttribute:
        start = self.tok
        expr = self.expression()
        if self.accept_word("as"):
            name = self.name("a name after 'as'")
            return OutputAttribute(name, expr, self.span_from(start))
        if isinstance(expr, Variable):
            return OutputAttribute(expr.attribute, expr, self.span_from(start), explicit_name=False)
        raise self.error(
            "this select expression needs a name",
            expr.span,
            hint="add 'as <name>', e.g. 'avg(price) as avgPrice'",
        )

    def output_rate(self) -> OutputRate:
        start = self.expect_word("output")
        if self.accept_word("snapshot"):
            self.expect_word("every")
            return OutputRate("snapshot", time_ms=self.time_value(), span=self.span_from(start))
        kind = "all"
        if self.at_word("all", "first", "last"):
            kind = self.advance().text.lower()
        self.expect_word("every", " in the output rate")
        if self.at_time_value():
            return OutputRate(kind, time_ms=self.time_value(), span=self.span_from(start))
        n = self.int_value("a number of events or a time value after 'every'")
        self.expect_word("events", " after the number in 'output every N events'")
        if n <= 0:
            raise self.error("the output rate must be a positive number of events", self.prev)
        return OutputRate(kind, events=n, span=self.span_from(start))

    # ---- outputs ---------------------------------------------------------------------

    def query_output(self) -> Output:
        start = self.tok
        if self.accept_word("insert"):
            event_type = self.output_event_type() if not self.at_word("into") else "default"
            self.expect_word("into")
            inner = fault = False
            if self.accept_punct("#"):
                inner = True
            elif self.accept_punct("!"):
                fault = True
            target_tok = self.tok
            target = self.name("a stream or table name after 'insert into'")
            if self.accept_word("for"):
                event_type = self.output_event_type(required=True)
            out: Output = InsertInto(event_type, target, inner, fault, target_span=span_of(target_tok))
        elif self.accept_word("return"):
            out = ReturnOutput(self.output_event_type())
        elif self.accept_word("delete"):
            target_tok = self.tok
            target = self.name("a table name after 'delete'")
            event_type = "default"
            if self.accept_word("for"):
                event_type = self.output_event_type(required=True)
            on = self.expression() if self.accept_word("on") else None
            out = DeleteFrom(event_type, target, on, target_span=span_of(target_tok))
        elif self.accept_word("update"):
            if self.accept_word("or"):
                self.expect_word("insert")
                self.expect_word("into")
                target_tok = self.tok
                target = self.name("a table name")
                event_type = self._for_events()
                assignments = self._set_clause()
                self.expect_word("on", " ('update or insert into' needs an 'on' condition)")
                out = UpdateOrInsert(
                    event_type, target, self.expression(), assignments, target_span=span_of(target_tok)
                )
            else:
                target_tok = self.tok
                target = self.name("a table name after 'update'")
                event_type = self._for_events()
                assignments = self._set_clause()
                self.expect_word("on", " ('update' needs an 'on' condition)")
                out = UpdateTable(
                    event_type, target, self.expression(), assignments, target_span=span_of(target_tok)
                )
        else:
            self.fail("expected 'insert into', 'return', 'delete', 'update' or an earlier query clause")
        out.span = self.span_from(start)
        return out

    def _for_events(self) -> str:
        if self.accept_word("for"):
            return self.output_event_type(required=True)
        return "default"

    def _set_clause(self) -> list[SetAssignment] | None:
        if not self.accept_word("set"):
            return None
        items = [self._assignment()]
        while self.accept_punct(","):
            items.append(self._assignment())
        return items

    def _assignment(self) -> SetAssignment:
        v = self._variable("a table attribute in 'set'")
        self.expect_punct("=", " in the 'set' assignment")
        return SetAssignment(v, self.expression())

    # ---- partitions ------------------------------------------------------------------

    def partition(self, annotations: list[Annotation], start: Token) -> Partition:
        self.expect_word("partition")
        self.expect_word("with")
        self.expect_punct("(", " after 'partition with'")
        parts = [self._partition_type()]
        while self.accept_punct(","):
            parts.append(self._partition_type())
        self.expect_punct(")", " to close 'partition with (...)'")
        self.expect_word("begin")
        queries = []
        while not self.at_word("end"):
            if self.accept_punct(";"):
                continue
            q_start = self.tok
            q_ann = self.annotations()
            if not self.at_word("from"):
                self.fail("expected a query ('from ...') or 'end' in the partition")
            queries.append(self.query(q_ann, q_start))
            if not self.at_word("end"):
                self.expect_punct(";", " between queries of a partition")
        self.expect_word("end")
        if not queries:
            raise self.error("a partition needs at least one query", self.prev)
        return Partition(parts, queries, annotations, self.span_from(start))

    def _partition_type(self) -> PartitionType:
        start = self.tok
        expr = self.expression()
        if self.at_word("as"):
            ranges: list[tuple[Expr, str]] = []
            while True:
                self.expect_word("as")
                ranges.append((expr, self.string_value("a quoted range label")))
                if not self.accept_word("or"):
                    break
                expr = self.expression()
            self.expect_word("of", " after the range conditions")
            stream = self.name("a stream name after 'of'")
            return RangePartition(ranges, stream, self.span_from(start))
        self.expect_word("of", " after the partition attribute")
        stream = self.name("a stream name after 'of'")
        return ValuePartition(expr, stream, self.span_from(start))

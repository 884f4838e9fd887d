"""Pattern (`->`) and sequence (`,`) inputs: `every`, `within`, `and`/`or`, absent
(`not S for T`) and counting (`<n:m>`, `*`, `+`, `?`) states."""

from __future__ import annotations

from engine.compiler.parse_definitions import DefinitionParser
from engine.compiler.tokens import INT, LONG
from engine.query.queries import (
    AbsentState,
    CountState,
    EveryState,
    LogicalState,
    NextState,
    SingleInput,
    StateElement,
    StateInput,
    StreamState,
)


class PatternParser(DefinitionParser):
    def single_input(self, allow_window: bool = True, allow_alias: bool = False) -> SingleInput:
        raise NotImplementedError  # provided by QueryParser

    def state_input(self, kind: str) -> StateInput:
        start = self.tok
        root = self._chain(kind == "sequence")
        within = None
        if self.accept_word("within"):
            within = self._within_value()
        return StateInput(kind, root, within, self.span_from(start))

    def _within_value(self) -> int:
        """`within 5 sec`; Siddhi 2.x (WSO2 CEP 3.x) also took a bare number of
        milliseconds, `within 10000`, which marks the plan as that dialect."""
        if self.tok.kind in (INT, LONG) and not self.at_time_value():
            self.legacy = True
            text = self.advance().text
            return int(text[:-1] if text[-1] in "lL" else text)
        return self.time_value("a time value after 'within'")

    def _chain(self, sequence: bool) -> StateElement:
        sep = "," if sequence else "->"
        left = self._term(sequence)
        while self.accept_punct(sep):
            right = self._term(sequence)
            left = NextState(left, right, span=left.span.to(right.span))
        return left

    def _term(self, sequence: bool) -> StateElement:
        start = self.tok
        if self.accept_word("every"):
            inner = self._term_no_every(sequence)
            return EveryState(inner, span=self.span_from(start))
        return self._term_no_every(sequence)

    def _term_no_every(self, sequence: bool) -> StateElement:
        start = self.tok
        if self.at_punct("("):
            self.advance()
            inner = self._chain(sequence)
            self.expect_punct(")", " to close the pattern group")
            inner.span = self.span_from(start)
            if self.at_word("and", "or"):
                return self._logical_rest(inner, sequence)
            return inner
        first = self._unit(sequence)
        if self.at_word("and", "or"):
            return self._logical_rest(first, sequence)
        return first

    def _logical_rest(self, left: StateElement, sequence: bool) -> StateElement:
        op = self.advance().text.lower()
        right = self._unit(sequence, in_logical=True)
        for side in (left, right):
            if isinstance(side, CountState):
                raise self.error(
                    f"a counting state cannot be a side of '{op}'",
                    side.span,
                    hint="'and'/'or' join two single states (e1=A, or not A)",
                )
        return LogicalState(op, left, right, span=left.span.to(right.span))

    def _unit(self, sequence: bool, in_logical: bool = False) -> StateElement:
        start = self.tok
        if self.accept_word("not"):
            src = self.single_input(allow_window=False)
            waiting = None
            if self.accept_word("for"):
                waiting = self.time_value("a time value after 'for'")
            elif not in_logical and not self.at_word("and"):
                raise self.error(
                    "an absent state needs 'for <time>' unless it is combined with 'and'",
                    self.span_from(start),
                )
            return AbsentState(src, waiting, span=self.span_from(start))
        ref = None
        if self.at_name() and self.peek().is_punct("="):
            ref = self.name()
            self.advance()
        src = self.single_input(allow_window=False)
        state = StreamState(src, ref, span=self.span_from(start))
        if self.at_punct("<") and (self.peek().kind == INT or self.peek().is_punct(":")):
            self.advance()
            lo, hi = 0, None
            if self.accept_punct(":"):
                hi = self.int_value("a maximum count")
            else:
                lo = self.int_value("a minimum count")
                if self.accept_punct(":"):
                    if self.tok.kind == INT:
                        hi = self.int_value()
                else:
                    hi = lo
            self.expect_punct(">", " to close the count '<min:max>'")
            if hi is not None and hi < lo:
                raise self.error(
                    f"the count <{lo}:{hi}> has its maximum below its minimum", self.span_from(start)
                )
            return CountState(state, lo, hi, span=self.span_from(start))
        if sequence and self.at_punct("*", "+", "?"):
            q = self.advance().text
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[q]
            return CountState(state, lo, hi, span=self.span_from(start))
        return state

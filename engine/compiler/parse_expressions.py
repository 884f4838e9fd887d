"""Expressions, with Siddhi's precedence (tightest first):

`not`, then `* / %`, `+ -`, `< <= > >=`, `== !=`, `in Table`, `and`, `or`.
As in Siddhi's grammar, `not` applies to the operand right after it:
`not price > 10` is `(not price) > 10`; write `not (price > 10)`.
"""

from __future__ import annotations

from engine.compiler.stream import TokenStream, span_of
from engine.compiler.tokens import DOUBLE, FLOAT, INT, LONG, QUOTED, WORD, Token
from engine.errors import QuerySyntaxError
from engine.query.expressions import (
    BinaryOp,
    EventIndex,
    Expr,
    FunctionCall,
    In,
    IsNull,
    IsNullStream,
    Negate,
    Not,
    Span,
    Variable,
)

MAX_NESTING = 100
"""How deeply parentheses, function calls, `not`, `-` and `in` may nest in one expression.

A deeper expression is refused with a QuerySyntaxError at the opening that goes too deep,
before the parser or the compiled Python runs out of room. Long chains at one level
(`a or b or c ...`, `x + y + z ...`) do not nest and have no such limit.
"""

_PRECEDENCE = {
    "or": 1,
    "and": 2,
    "in": 3,
    "==": 4,
    "!=": 4,
    ">=": 5,
    "<=": 5,
    ">": 5,
    "<": 5,
    "+": 6,
    "-": 6,
    "*": 7,
    "/": 7,
    "%": 7,
}
_ANY_OPERATOR = max(_PRECEDENCE.values())
_WORD_OPS = ("or", "and", "in")
_PUNCT_OPS = tuple(op for op in _PRECEDENCE if op not in _WORD_OPS)
_OPENER_OF = {"(": "(", "not": "not", "-": "negate"}
_OPENERS = tuple(_OPENER_OF.values())


class ExpressionParser(TokenStream):
    """Binary operators by an explicit operator stack (shunting-yard): neither long chains
    nor parentheses recurse. Only function arguments recurse, and they count as nesting."""

    _nesting = 0

    def expression(self) -> Expr:
        operands: list[Expr] = []
        pending: list[tuple[str, Token]] = []  # openers and binary operators
        opened = 0  # entries on `pending` that count as nesting
        in_run = 0  # `x in T in U ...`: each `in` wraps the condition before it
        # After `x in T` only `in`, `and` and `or` continue the expression, as in Siddhi's
        # grammar (`x in T == y` ends before `==`); a closing parenthesis lifts this.
        ceiling = _ANY_OPERATOR
        try:
            while True:
                start = self.tok
                if start.is_punct("(") or start.is_word("not") or self._at_negation():
                    opened += 1
                    self._nest(start)
                    pending.append((_OPENER_OF[start.text.lower()], start))
                    self.advance()
                    continue
                operands.append(self._is_null_tail(self._primary()))
                opened -= self._apply_prefixes(operands, pending)
                while True:
                    t = self.tok
                    if t.is_punct(")") and any(kind == "(" for kind, _ in pending):
                        self._reduce(operands, pending, 0)
                        paren = pending.pop()[1]
                        opened -= 1
                        self._nesting -= 1
                        ceiling = _ANY_OPERATOR
                        self.advance()
                        operands[-1].span = self.span_from(paren)
                        operands[-1] = self._is_null_tail(operands[-1])
                        opened -= self._apply_prefixes(operands, pending)
                        continue
                    op = self._binary_operator(t)
                    if op is None or _PRECEDENCE[op] > ceiling:
                        self._reduce(operands, pending, 0)
                        if pending:
                            self.expect_punct(")", " to close '('")
                        return operands[0]
                    self._reduce(operands, pending, _PRECEDENCE[op])
                    self.advance()
                    if op != "in":
                        pending.append((op, t))
                        ceiling = _ANY_OPERATOR
                        break
                    left = operands[-1]
                    name_tok = self.tok
                    table = self.name("a table name after 'in'")
                    in_run = in_run + 1 if isinstance(left, In) else 1
                    if in_run > MAX_NESTING:
                        raise self._too_deep(name_tok)
                    operands[-1] = In(left, table, span_of(name_tok), span=left.span.to(span_of(name_tok)))
                    ceiling = _PRECEDENCE["in"]
        finally:
            self._nesting -= opened

    def _nest(self, token: Token) -> None:
        self._nesting += 1
        if self._nesting > MAX_NESTING:
            raise self._too_deep(token)

    def _too_deep(self, token: Token) -> QuerySyntaxError:
        return self.error(
            f"expression nested too deeply: more than {MAX_NESTING} levels of parentheses, "
            "function calls, 'not', '-' or 'in'",
            token,
            hint="write long conditions as flat chains (a or b or c) or split them over several queries",
        )

    def _at_negation(self) -> bool:
        t = self.tok
        return t.is_punct("-") and self.peek().kind not in (INT,) and not self._signed_literal_ahead()

    @staticmethod
    def _binary_operator(t: Token) -> str | None:
        if t.kind == WORD:
            word = t.text.lower()
            return word if word in _WORD_OPS else None
        # `a < 2:5>` never occurs in expressions; `<` here is always a comparison.
        return t.text if t.is_punct(*_PUNCT_OPS) else None

    @staticmethod
    def _reduce(operands: list[Expr], pending: list[tuple[str, Token]], precedence: int) -> None:
        """Apply the pending binary operators binding at least as tightly (left-associative)."""
        while pending and pending[-1][0] not in _OPENERS and _PRECEDENCE[pending[-1][0]] >= precedence:
            op = pending.pop()[0]
            right = operands.pop()
            left = operands.pop()
            operands.append(BinaryOp(op, left, right, span=left.span.to(right.span)))

    def _apply_prefixes(self, operands: list[Expr], pending: list[tuple[str, Token]]) -> int:
        """`not` and `-` bind tighter than any binary operator: wrap the operand just read."""
        applied = 0
        while pending and pending[-1][0] in ("not", "negate"):
            kind, tok = pending.pop()
            operand = operands[-1]
            span = span_of(tok).to(operand.span)
            operands[-1] = Not(operand, span=span) if kind == "not" else Negate(operand, span=span)
            applied += 1
        self._nesting -= applied
        return applied

    def _is_null_tail(self, expr: Expr) -> Expr:
        if self.at_word("is") and self.peek().is_word("null"):
            self.advance()
            end = self.advance()
            span = expr.span.to(span_of(end))
            if isinstance(expr, IsNullStream):
                expr.span = span
                return expr
            return IsNull(expr, span=span)
        if isinstance(expr, IsNullStream):
            raise self.error(
                f"'{expr.stream}' refers to a whole event; use '{expr.stream}.attribute' "
                f"or '{expr.stream} is null'",
                expr.span,
            )
        return expr

    def _signed_literal_ahead(self) -> bool:
        return self.peek().kind in (LONG, FLOAT, DOUBLE)

    def _primary(self) -> Expr:
        start = self.tok
        const = self.literal()
        if const is not None:
            return const
        if start.is_punct("#", "!") or start.kind in (WORD, QUOTED):
            return self._reference_or_call()
        self.fail("expected an expression")

    def _reference_or_call(self) -> Expr:
        start = self.tok
        inner = fault = False
        if self.accept_punct("#"):
            inner = True
        elif self.accept_punct("!"):
            fault = True
        first = self.name("an attribute or stream name")
        if not (inner or fault):
            if self.at_punct("("):
                return self.function_call(None, first, start)
            if self.at_punct(":") and self.peek().kind in (WORD, QUOTED) and self.peek(2).is_punct("("):
                self.advance()
                fname = self.name()
                return self.function_call(first, fname, start)
        index = None
        if self.at_punct("["):
            index = self.event_index()
        if self.accept_punct("#"):
            # `S#name.attr` (aggregation/window sub-reference): keep the outer name
            self.name()
            if self.at_punct("["):
                self.event_index()
        if self.accept_punct("."):
            attr = self.name("an attribute name after '.'")
            return Variable(attr, first, index, inner, fault, span=self.span_from(start))
        if index is not None or inner or fault:
            return IsNullStream(first, index, inner, span=self.span_from(start))
        if self.at_word("is") and self.peek().is_word("null"):
            # `e1 is null` may name an event or an attribute; the planner decides.
            return Variable(first, span=self.span_from(start))
        return Variable(first, span=self.span_from(start))

    def event_index(self) -> EventIndex:
        self.expect_punct("[")
        if self.tok.kind == INT:
            idx = EventIndex(position=int(self.advance().text))
        elif self.accept_word("last"):
            back = 0
            if self.accept_punct("-"):
                back = self.int_value("a whole number after 'last -'")
            idx = EventIndex(from_last=back)
        else:
            self.fail("expected an event index (a number, 'last' or 'last - n')")
        self.expect_punct("]", " to close the event index")
        return idx

    def function_call(self, namespace: str | None, name: str, start_tok: Token) -> FunctionCall:
        self._nest(self.expect_punct("("))
        try:
            args: list[Expr] = []
            star = False
            if self.accept_punct("*"):
                star = True
            elif not self.at_punct(")"):
                args.append(self.expression())
                while self.accept_punct(","):
                    args.append(self.expression())
            self.expect_punct(")", f" to close the arguments of {name}()")
        finally:
            self._nesting -= 1
        return FunctionCall(name, args, namespace, star, span=self.span_from(start_tok))

    def span_between(self, a: Span, b: Span) -> Span:
        return a.to(b)

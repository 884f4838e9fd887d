"""Expressions, with Siddhi's precedence (tightest first):

`not`, then `* / %`, `+ -`, `< <= > >=`, `== !=`, `in Table`, `and`, `or`.
As in Siddhi's grammar, `not` applies to the operand right after it:
`not price > 10` is `(not price) > 10`; write `not (price > 10)`.
"""

from __future__ import annotations

from engine.compiler.stream import TokenStream, span_of
from engine.compiler.tokens import INT, QUOTED, WORD
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

_LEVELS: list[tuple[str, ...]] = [
    ("or",),
    ("and",),
    ("in",),
    ("==", "!="),
    (">=", "<=", ">", "<"),
    ("+", "-"),
    ("*", "/", "%"),
]


class ExpressionParser(TokenStream):
    def expression(self) -> Expr:
        return self._level(0)

    def _level(self, level: int) -> Expr:
        if level == len(_LEVELS):
            return self._unary()
        ops = _LEVELS[level]
        left = self._level(level + 1)
        while True:
            t = self.tok
            if ops[0] in ("or", "and"):
                if not t.is_word(ops[0]):
                    return left
                self.advance()
                right = self._level(level + 1)
                left = BinaryOp(ops[0], left, right, span=left.span.to(right.span))
            elif ops[0] == "in":
                if not t.is_word("in"):
                    return left
                self.advance()
                name_tok = self.tok
                table = self.name("a table name after 'in'")
                left = In(left, table, span_of(name_tok), span=left.span.to(span_of(name_tok)))
            else:
                if not t.is_punct(*ops):
                    return left
                # `a < 2:5>` never occurs in expressions; `<` here is always a comparison.
                self.advance()
                right = self._level(level + 1)
                left = BinaryOp(t.text, left, right, span=left.span.to(right.span))

    def _unary(self) -> Expr:
        start = self.tok
        if start.is_word("not"):
            self.advance()
            operand = self._unary()
            return Not(operand, span=span_of(start).to(operand.span))
        if start.is_punct("-") and self.peek().kind not in (INT,) and not self._signed_literal_ahead():
            self.advance()
            operand = self._unary()
            return Negate(operand, span=span_of(start).to(operand.span))
        expr = self._primary()
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
        from engine.compiler.tokens import DOUBLE, FLOAT, LONG

        return self.peek().kind in (LONG, FLOAT, DOUBLE)

    def _primary(self) -> Expr:
        start = self.tok
        if start.is_punct("("):
            self.advance()
            inner = self.expression()
            self.expect_punct(")", " to close '('")
            inner.span = self.span_from(start)
            return inner
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

    def function_call(self, namespace: str | None, name: str, start_tok: object) -> FunctionCall:
        from engine.compiler.tokens import Token

        assert isinstance(start_tok, Token)
        self.expect_punct("(")
        args: list[Expr] = []
        star = False
        if self.accept_punct("*"):
            star = True
        elif not self.at_punct(")"):
            args.append(self.expression())
            while self.accept_punct(","):
                args.append(self.expression())
        self.expect_punct(")", f" to close the arguments of {name}()")
        return FunctionCall(name, args, namespace, star, span=self.span_from(start_tok))

    def span_between(self, a: Span, b: Span) -> Span:
        return a.to(b)

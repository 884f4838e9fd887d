"""Token cursor shared by the clause parsers: peeking, expecting, spans, errors."""

from __future__ import annotations

from typing import NoReturn

from engine.compiler.tokens import (
    DOUBLE,
    EOF,
    FLOAT,
    INT,
    LONG,
    PUNCT,
    QUOTED,
    STRING,
    WORD,
    Token,
)
from engine.errors import Diagnostic, QuerySyntaxError
from engine.query.expressions import Constant, Span
from engine.types import AttrType, f32

TIME_UNITS_MS = {
    "year": 365 * 24 * 3600 * 1000,
    "years": 365 * 24 * 3600 * 1000,
    "month": 30 * 24 * 3600 * 1000,
    "months": 30 * 24 * 3600 * 1000,
    "week": 7 * 24 * 3600 * 1000,
    "weeks": 7 * 24 * 3600 * 1000,
    "day": 24 * 3600 * 1000,
    "days": 24 * 3600 * 1000,
    "hour": 3600 * 1000,
    "hours": 3600 * 1000,
    "min": 60 * 1000,
    "minute": 60 * 1000,
    "minutes": 60 * 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "millisec": 1,
    "millisecond": 1,
    "milliseconds": 1,
}

# Words that cannot start or be an attribute/stream name where that would be ambiguous.
RESERVED_AFTER_EXPR = frozenset(
    {
        "select", "insert", "delete", "update", "return", "output", "group", "having",
        "order", "limit", "offset", "as", "on", "within", "per", "join", "left", "right",
        "full", "inner", "outer", "unidirectional", "and", "or", "for", "of", "begin", "end",
        "from", "define", "partition", "is", "in", "not", "every", "set",
    }
)  # fmt: skip


def span_of(token: Token) -> Span:
    return Span(token.line, token.col, token.end_line, token.end_col)


class TokenStream:
    def __init__(self, tokens: list[Token], source: str) -> None:
        self.tokens = tokens
        self.source = source
        self.i = 0
        self.legacy = False  # saw a Siddhi 2.x (WSO2 CEP 3.x) form

    # ---- cursor -------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        j = min(self.i + k, len(self.tokens) - 1)
        return self.tokens[j]

    def advance(self) -> Token:
        t = self.tokens[self.i]
        if t.kind != EOF:
            self.i += 1
        return t

    @property
    def prev(self) -> Token:
        return self.tokens[max(0, self.i - 1)]

    def span_from(self, start: Token) -> Span:
        end = self.prev if self.i > 0 else start
        return Span(start.line, start.col, end.end_line, end.end_col)

    # ---- matching -----------------------------------------------------------------

    def at_word(self, *words: str) -> bool:
        return self.tok.is_word(*words)

    def at_punct(self, *puncts: str) -> bool:
        return self.tok.is_punct(*puncts)

    def accept_word(self, *words: str) -> Token | None:
        if self.tok.is_word(*words):
            return self.advance()
        return None

    def accept_punct(self, *puncts: str) -> Token | None:
        if self.tok.is_punct(*puncts):
            return self.advance()
        return None

    def expect_word(self, word: str, context: str = "") -> Token:
        if self.tok.is_word(word):
            return self.advance()
        self.fail(f"expected '{word}'{context}")

    def expect_punct(self, punct: str, context: str = "") -> Token:
        if self.tok.is_punct(punct):
            return self.advance()
        self.fail(f"expected '{punct}'{context}")

    def fail(self, expected: str, token: Token | None = None) -> NoReturn:
        t = token or self.tok
        raise self.error(f"{expected}, found {t.describe()}", t)

    def error(self, message: str, token: Token | Span, hint: str | None = None) -> QuerySyntaxError:
        s = span_of(token) if isinstance(token, Token) else token
        diag = Diagnostic(message, s.line, s.col, s.end_line, max(s.end_col, s.col + 1), hint)
        return QuerySyntaxError([diag], self.source)

    # ---- names and literals ----------------------------------------------------------

    def at_name(self) -> bool:
        return self.tok.kind in (WORD, QUOTED)

    def name(self, what: str = "a name") -> str:
        t = self.tok
        if t.kind in (WORD, QUOTED):
            self.advance()
            return t.text
        self.fail(f"expected {what}")

    def string_value(self, what: str = "a quoted string") -> str:
        t = self.tok
        if t.kind == STRING:
            self.advance()
            return t.text
        self.fail(f"expected {what}")

    def int_value(self, what: str = "a whole number") -> int:
        t = self.tok
        if t.kind == INT:
            self.advance()
            return int(t.text)
        self.fail(f"expected {what}")

    def at_time_value(self) -> bool:
        return self.tok.kind == INT and self.peek().kind == WORD and self.peek().text.lower() in TIME_UNITS_MS

    def time_value(self, what: str = "a time value such as '5 sec'") -> int:
        """`1 min 30 sec` -> 90000 (ms)."""
        if not self.at_time_value():
            self.fail(f"expected {what}")
        total = 0
        while self.at_time_value():
            amount = int(self.advance().text)
            total += amount * TIME_UNITS_MS[self.advance().text.lower()]
        return total

    def literal(self) -> Constant | None:
        """A constant at the cursor (signed numbers, strings, bools, null, time values)."""
        start = self.tok
        sign = ""
        if self.tok.is_punct("-", "+") and self.peek().kind in (INT, LONG, FLOAT, DOUBLE):
            sign = self.advance().text
        t = self.tok
        if t.kind == INT and not sign and self.at_time_value():
            ms = self.time_value()
            return Constant(ms, AttrType.LONG, is_time=True, span=self.span_from(start))
        text = sign + t.text
        value: object
        if t.kind == INT:
            self.advance()
            value = int(text)
            kind = AttrType.INT if -(2**31) <= value <= 2**31 - 1 else AttrType.LONG
            if kind is AttrType.LONG:
                raise self.error(f"integer literal {text} is out of int range; write {text}L", t)
        elif t.kind == LONG:
            self.advance()
            value, kind = int(text[:-1]), AttrType.LONG
        elif t.kind == FLOAT:
            self.advance()
            value, kind = float(text[:-1]), AttrType.FLOAT
        elif t.kind == DOUBLE:
            self.advance()
            body = text[:-1] if text[-1] in "dD" else text
            value, kind = float(body), AttrType.DOUBLE
        elif sign:
            return None
        elif t.kind == STRING:
            self.advance()
            value, kind = t.text, AttrType.STRING
        elif t.is_word("true", "false"):
            self.advance()
            value, kind = t.text.lower() == "true", AttrType.BOOL
        elif t.is_word("null") and not self.peek().is_punct(".", "("):
            self.advance()
            value, kind = None, AttrType.OBJECT
        else:
            return None
        if kind is AttrType.FLOAT:
            value = f32(value)  # type: ignore[arg-type]
        return Constant(value, kind, span=self.span_from(start))

    def is_punct_token(self, t: Token, *puncts: str) -> bool:
        return t.kind == PUNCT and t.text in puncts

    def at_eof(self) -> bool:
        return self.tok.kind == EOF

    def at_string(self) -> bool:
        return self.tok.kind == STRING

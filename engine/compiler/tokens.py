"""SiddhiQL lexer: text to tokens with 1-based line/column spans.

Keywords are not separate token kinds: SiddhiQL lets most keywords be used as names,
so the lexer emits WORD and the parser matches words case-insensitively.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.errors import Diagnostic, QuerySyntaxError

WORD = "word"
QUOTED = "quoted"  # `backtick quoted` identifier
INT = "int"
LONG = "long"
FLOAT = "float"
DOUBLE = "double"
STRING = "string"
PUNCT = "punct"
SCRIPT = "script"
EOF = "eof"


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str  # source text, or the decoded value for strings and quoted ids
    line: int
    col: int
    end_line: int
    end_col: int
    offset: int

    def is_word(self, *words: str) -> bool:
        return self.kind == WORD and self.text.lower() in words

    def is_punct(self, *puncts: str) -> bool:
        return self.kind == PUNCT and self.text in puncts

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of input"
        if self.kind == STRING:
            return f"string '{self.text}'"
        return f"'{self.text}'"


_PUNCTS = ("...", "->", ">=", "<=", "==", "!=")
_SINGLE = set(":;.()[],=*+?-/%<>@#!")
_NUMBER = re.compile(r"(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?([fFdDlL])?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_SPACE = re.compile(r"[ \t\r\n\x0b\x0c]+")
_ESCAPE = re.compile(r"\\(u+[0-9a-fA-F]{4}|[0-3]?[0-7]{1,2}|.)")
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}


def _unescape(raw: str) -> str:
    """Java-style escapes, as Siddhi applies them to triple-quoted strings."""

    def one(m: re.Match[str]) -> str:
        body = m.group(1)
        if body[0] == "u":
            return chr(int(body.lstrip("u"), 16))
        if body[0].isdigit():
            return chr(int(body, 8))
        return _SIMPLE_ESCAPES.get(body, body)

    return _ESCAPE.sub(one, raw)


def tokenize(source: str) -> list[Token]:
    return _Lexer(source).run()


class _Lexer:
    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.tokens: list[Token] = []

    def error(self, message: str, start: int, end: int | None = None) -> QuerySyntaxError:
        line, col = self.position(start)
        end_line, end_col = self.position(end if end is not None else start + 1)
        return QuerySyntaxError([Diagnostic(message, line, col, end_line, end_col)], self.src)

    def position(self, offset: int) -> tuple[int, int]:
        line = self.src.count("\n", 0, offset) + 1
        start = self.src.rfind("\n", 0, offset) + 1
        return line, offset - start + 1

    def emit(self, kind: str, text: str, start: int, end: int) -> None:
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        self.tokens.append(Token(kind, text, line, col, end_line, end_col, start))

    def run(self) -> list[Token]:
        src = self.src
        n = len(src)
        while True:
            m = _SPACE.match(src, self.pos)
            if m:
                self.pos = m.end()
            if self.pos >= n:
                break
            start = self.pos
            ch = src[start]
            if src.startswith("--", start):
                nl = src.find("\n", start)
                self.pos = n if nl < 0 else nl
                continue
            if src.startswith("/*", start):
                close = src.find("*/", start + 2)
                self.pos = n if close < 0 else close + 2
                continue
            if ch.isdigit() or (ch == "." and start + 1 < n and src[start + 1].isdigit()):
                self.number(start)
                continue
            m = _IDENT.match(src, start)
            if m:
                self.pos = m.end()
                self.emit(WORD, m.group(), start, self.pos)
                continue
            if ch == "`":
                close = src.find("`", start + 1)
                if close < 0:
                    raise self.error("unterminated `quoted` name", start)
                self.pos = close + 1
                self.emit(QUOTED, src[start + 1 : close], start, self.pos)
                continue
            if ch in "'\"":
                self.string(start)
                continue
            if ch == "{":
                self.script(start)
                continue
            for p in _PUNCTS:
                if src.startswith(p, start):
                    self.pos = start + len(p)
                    self.emit(PUNCT, p, start, self.pos)
                    break
            else:
                if ch in _SINGLE:
                    self.pos = start + 1
                    self.emit(PUNCT, ch, start, self.pos)
                else:
                    raise self.error(f"unexpected character '{ch}'", start)
        self.emit(EOF, "", n, n)
        return self.tokens

    def number(self, start: int) -> None:
        m = _NUMBER.match(self.src, start)
        assert m is not None
        body, exp, suffix = m.group(1), m.group(2), m.group(3)
        end = m.end()
        fractional = "." in body or exp is not None
        if suffix and suffix in "lL" and fractional:
            suffix = None
            end -= 1
        if suffix in ("l", "L"):
            kind = LONG
        elif suffix in ("f", "F"):
            kind = FLOAT
        elif suffix in ("d", "D") or fractional:
            kind = DOUBLE
        else:
            kind = INT
        self.pos = end
        self.emit(kind, self.src[start:end], start, end)

    def string(self, start: int) -> None:
        src = self.src
        if src.startswith('"""', start):
            close = src.find('"""', start + 3)
            if close < 0:
                raise self.error("unterminated string", start, start + 3)
            self.pos = close + 3
            raw = src[start + 3 : close]
            self.emit(STRING, _unescape(raw), start, self.pos)
            return
        quote = src[start]
        i = start + 1
        while i < len(src) and src[i] != quote:
            if src[i] in "\r\n":
                raise self.error("unterminated string: a string cannot span lines", start, i)
            i += 1
        if i >= len(src):
            raise self.error("unterminated string", start, i)
        self.pos = i + 1
        self.emit(STRING, src[start + 1 : i], start, self.pos)

    def script(self, start: int) -> None:
        depth = 0
        i = start
        src = self.src
        while i < len(src):
            c = src[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    self.pos = i + 1
                    self.emit(SCRIPT, src[start + 1 : i], start, self.pos)
                    return
            elif c in "'\"":
                close = src.find(c, i + 1)
                i = close if close > 0 else i
            i += 1
        raise self.error("unterminated '{' script body", start)

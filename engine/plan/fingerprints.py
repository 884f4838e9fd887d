"""Fingerprints that tell whether a part of a snapshot still fits a plan (engine/runtime/
parts.py): a hash of an element's tokens (its text, comments and whitespace ignored) and a
hash of the schemas it reads and writes. Imports the lexer, nothing of the runtime."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from engine.compiler.tokens import EOF, Token, tokenize
from engine.plan.context import PlanContext
from engine.query.expressions import Span


def _digest(parts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()[:16]


class Fingerprints:
    def __init__(self, source: str, ctx: PlanContext) -> None:
        self.source = source
        self.ctx = ctx
        self.tokens = [t for t in tokenize(source) if t.kind != EOF]

    def _within(self, span: Span) -> list[Token]:
        start, end = (span.line, span.col), (span.end_line, span.end_col)
        return [t for t in self.tokens if (t.line, t.col) >= start and (t.end_line, t.end_col) <= end]

    def text(self, span: Span) -> str:
        """The element's tokens (kind and text), so a comment or a line break changes nothing."""
        return _digest(f"{t.kind}\x1e{t.text}" for t in self._within(span))

    def excerpt(self, span: Span, width: int = 40) -> str:
        """The element's first tokens, for a label people recognise."""
        tokens = self._within(span)
        if not tokens:
            return ""
        text = " ".join(self.source[tokens[0].offset : tokens[0].offset + 4 * width].split())
        return text if len(text) <= width else text[: width - 1].rstrip() + "…"

    def schemas(self, streams: Iterable[str]) -> str:
        """The attribute names and types of these streams, tables or windows, in order."""
        ctx = self.ctx
        out = []
        for name in streams:
            info = (
                ctx.streams.get(name)
                or ctx.window_infos.get(name)
                or ctx.table_infos.get(name)
                or ctx.aggregation_infos.get(name)
            )
            if info is None:
                out.append(f"{name}:?")
            else:
                attrs = ",".join(f"{n} {t.name}" for n, t in info.attributes)
                out.append(f"{name}({attrs})")
        return _digest(out)

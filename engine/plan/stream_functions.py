"""Stream handlers other than filters: `#log(...)` (Siddhi's LogStreamProcessor) and
`#str:tokenize(...)` (siddhi-execution-string's TokenizeStreamProcessor). A query's handlers
run in their written order, `S[a]#log()[b]` filtering, logging, then filtering again, as one
chunk function."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from engine.events import Chunk
from engine.plan.expressions import Compiled, ExpressionCompiler, PlanError
from engine.plan.scope import Scope
from engine.query.expressions import FunctionCall
from engine.query.queries import Filter, StreamFunction
from engine.runtime.extensions import java_regex, java_split
from engine.runtime.log import LogSpec, level_of, log_chunk
from engine.types import AttrType

ChunkFn = Callable[[Chunk], "Chunk | None"]
USAGE = "usage: #log([priority <string>,] [message <string>,] [is.event.logged <bool>])"


def is_supported(h: StreamFunction) -> bool:
    return _is_log(h) or _is_tokenize(h)


def _is_log(h: StreamFunction) -> bool:
    return h.call.namespace is None and h.call.name.lower() == "log"


def _is_tokenize(h: StreamFunction) -> bool:
    return (h.call.namespace or "").lower() == "str" and h.call.name.lower() == "tokenize"


def added_attributes(handlers: list[Filter | StreamFunction]) -> list[tuple[str, AttrType]]:
    """The attributes the handlers append to each event: `token` for each #str:tokenize."""
    return [("token", AttrType.STRING) for h in handlers if isinstance(h, StreamFunction) and _is_tokenize(h)]


def plan_handlers(
    handlers: list[Filter | StreamFunction],
    scopes: list[Scope],
    comp: ExpressionCompiler,
    app_name: str,
    query: str,
    make_filter: Callable[[list[Filter], Scope], ChunkFn | None],
) -> ChunkFn | None:
    """The handlers as one chunk function, or None when they are only filters (the
    planner's own filter path handles those). `scopes[k]` is the scope after k tokenize
    steps (each appends `token`). `make_filter` turns a run of filters into a chunk
    function (the planner's, which this module cannot import: it imports this)."""
    if not any(isinstance(h, StreamFunction) for h in handlers):
        return None
    steps: list[ChunkFn] = []
    run: list[Filter] = []
    level = 0

    def flush() -> None:
        fn = make_filter(run, scopes[level]) if run else None
        if fn is not None:
            steps.append(fn)
        run.clear()

    for h in handlers:
        if isinstance(h, Filter):
            run.append(h)
            continue
        flush()
        if _is_tokenize(h):
            steps.append(plan_tokenize(h.call, scopes[level], comp))
            level += 1
            continue
        if not is_supported(h):
            continue  # the planner reports it as not supported; it is no #log()
        steps.append(partial(_log_step, plan_log(h.call, scopes[level], comp, app_name, query)))
    flush()

    def handle(chunk: Chunk) -> Chunk | None:
        for step in steps:
            out = step(chunk)
            if out is None or not out.rows:
                return None
            chunk = out
        return chunk

    return handle


def _log_step(spec: LogSpec, chunk: Chunk) -> Chunk | None:
    return log_chunk(spec, chunk)


def plan_log(
    call: FunctionCall, scope: Scope, comp: ExpressionCompiler, app_name: str, query: str
) -> LogSpec:
    """Siddhi's overloads: (), (message), (is.event.logged), (message, is.event.logged),
    (priority, message), (priority, message, is.event.logged)."""
    args = [comp.compile(a, scope) for a in call.args]
    if any(a.failed for a in args):
        raise PlanError
    types = [a.type for a in args]
    s, b = AttrType.STRING, AttrType.BOOL
    readers = [_reader(a, comp) for a in args]
    prefix = f"{app_name}: "
    row_types = tuple(t for src in scope.sources[:1] for _, t in src.attributes)
    if not args:
        return LogSpec(prefix, None, None, None, query, row_types)
    if types == [s]:
        return LogSpec(prefix, None, readers[0], None, query, row_types)
    if types == [b]:
        return LogSpec(prefix, None, None, readers[0], query, row_types)
    if types == [s, b]:
        return LogSpec(prefix, None, readers[0], readers[1], query, row_types)
    if types == [s, s] or types == [s, s, b]:
        _check_priority(call, args[0], comp)
        return LogSpec(
            prefix, readers[0], readers[1], readers[2] if len(args) == 3 else None, query, row_types
        )
    found = ", ".join(str(t) for t in types)
    comp.error(f"#log() does not take ({found})", call.span, hint=USAGE)
    raise PlanError


def _check_priority(call: FunctionCall, arg: Compiled, comp: ExpressionCompiler) -> None:
    if arg.const and level_of(arg.value) is None:
        comp.error(
            f"#log(): unknown priority '{arg.value}'",
            call.args[0].span,
            hint="priorities: TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF",
        )
        raise PlanError


def _reader(arg: Compiled, comp: ExpressionCompiler) -> Callable[[tuple[Any, ...]], Any]:
    if arg.const:
        value = arg.value
        return lambda r: value
    fn = eval(f"lambda r: {arg.safe}", comp.ctx.namespace)  # noqa: S307 - generated code
    return fn  # type: ignore[no-any-return]


def plan_tokenize(call: FunctionCall, scope: Scope, comp: ExpressionCompiler) -> ChunkFn:
    """`#str:tokenize(input string, regex string[, distinct bool])`: each event becomes one
    event per piece of the input split at the regex (Java's String.split: trailing empty
    pieces dropped), the piece appended as `token`; `distinct` drops repeated pieces."""
    args = [comp.compile(a, scope) for a in call.args]
    if any(a.failed for a in args):
        raise PlanError
    if len(args) not in (2, 3):
        comp.error(f"str:tokenize() takes 2 or 3 arguments, got {len(args)}", call.span)
        raise PlanError
    if args[0].type is not AttrType.STRING:
        comp.error(f"the input of str:tokenize() must be a string, found {args[0].type}", call.args[0].span)
        raise PlanError
    if not (args[1].const and isinstance(args[1].value, str)):
        comp.error("the regex of str:tokenize() must be a constant string", call.args[1].span)
        raise PlanError
    try:
        pattern = java_regex(args[1].value)
    except re.error as exc:
        comp.error(f"str:tokenize(): bad regular expression: {exc}", call.args[1].span)
        raise PlanError from exc
    distinct = False
    if len(args) == 3:
        if not (args[2].const and args[2].type is AttrType.BOOL):
            comp.error("the distinct flag of str:tokenize() must be a constant bool", call.args[2].span)
            raise PlanError
        distinct = bool(args[2].value)
    read = _reader(args[0], comp)

    def step(chunk: Chunk) -> Chunk | None:
        ts: list[int] = []
        rows: list[tuple[Any, ...]] = []
        kinds: list[Any] | None = None if chunk.kinds is None else []
        for i, row in enumerate(chunk.rows):
            text = read(row)
            if text is None:
                msg = "Invalid input given to str:tokenize() function. Input.string argument cannot be null"
                raise ValueError(msg)
            words = java_split(pattern, text)
            if distinct:
                words = list(dict.fromkeys(words))
            for w in words:
                ts.append(chunk.ts[i])
                rows.append((*row, w))
                if kinds is not None:
                    assert chunk.kinds is not None
                    kinds.append(chunk.kinds[i])
        return Chunk(ts, rows, kinds)

    return step

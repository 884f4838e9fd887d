"""Stream handlers other than filters: `#log(...)` (Siddhi's LogStreamProcessor). A
query's handlers run in their written order, `S[a]#log()[b]` filtering, logging, then
filtering again, as one chunk function."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from engine.events import Chunk
from engine.plan.expressions import Compiled, ExpressionCompiler, PlanError
from engine.plan.scope import Scope
from engine.query.expressions import FunctionCall
from engine.query.queries import Filter, StreamFunction
from engine.runtime.log import LogSpec, level_of, log_chunk
from engine.types import AttrType

ChunkFn = Callable[[Chunk], "Chunk | None"]
USAGE = "usage: #log([priority <string>,] [message <string>,] [is.event.logged <bool>])"


def is_supported(h: StreamFunction) -> bool:
    return h.call.namespace is None and h.call.name.lower() == "log"


def plan_handlers(
    handlers: list[Filter | StreamFunction],
    scope: Scope,
    comp: ExpressionCompiler,
    app_name: str,
    query: str,
    make_filter: Callable[[list[Filter]], ChunkFn | None],
) -> ChunkFn | None:
    """The handlers as one chunk function, or None when they are only filters (the
    planner's own filter path handles those). `make_filter` turns a run of filters into
    a chunk function (the planner's, which this module cannot import: it imports this)."""
    if not any(isinstance(h, StreamFunction) for h in handlers):
        return None
    steps: list[ChunkFn] = []
    run: list[Filter] = []

    def flush() -> None:
        fn = make_filter(run) if run else None
        if fn is not None:
            steps.append(fn)
        run.clear()

    for h in handlers:
        if isinstance(h, Filter):
            run.append(h)
            continue
        flush()
        if not is_supported(h):
            continue  # the planner reports it as not supported; it is no #log()
        steps.append(partial(_log_step, plan_log(h.call, scope, comp, app_name, query)))
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

"""Plan tables: `define table` (keys, indexes), `insert into T`, `delete T on ...`,
`update T [set ...] on ...`, `update or insert into T [set ...] on ...`, and `cond in T`.

Conditions on a table see the event's attributes unqualified and the table's as
`T.attr`. An equality on the primary key (or an indexed column) becomes a lookup
instead of a scan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import Chunk
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import Compiled, ExpressionCompiler, PlanError
from engine.plan.scope import Scope, Source
from engine.query.definitions import TableDefinition, find_annotations
from engine.query.expressions import BinaryOp, Expr, In, Span, Variable, walk
from engine.query.queries import DeleteFrom, InsertInto, Query, UpdateOrInsert, UpdateTable
from engine.runtime.table import Table
from engine.types import AttrType


def plan_table(ctx: PlanContext, d: TableDefinition, info: StreamInfo) -> Table | None:
    names = info.names
    pk: list[int] = []
    indexes: list[int] = []
    ok = True
    for ann in find_annotations(d.annotations, "primarykey"):
        for v in ann.values:
            if v not in names:
                ctx.errors.add(
                    f"@PrimaryKey names '{v}', which is not an attribute of table '{d.name}'", ann.span
                )
                ok = False
            elif names.index(v) not in pk:
                pk.append(names.index(v))
    for ann in find_annotations(d.annotations, "index"):
        for v in ann.values:
            if v not in names:
                ctx.errors.add(f"@Index names '{v}', which is not an attribute of table '{d.name}'", ann.span)
                ok = False
            elif names.index(v) not in indexes:
                indexes.append(names.index(v))
    if not ok:
        return None
    types = info.types
    numeric = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)
    if len(pk) == 1 and types[pk[0]] in numeric:
        order = "numeric"
    elif pk and not (len(pk) == 1 and types[pk[0]] is AttrType.OBJECT):
        order = "hash"
    else:
        order = "insertion"
    floats = frozenset(i for i, t in enumerate(types) if t is AttrType.FLOAT)
    return Table(d.name, len(names), pk, indexes, order, floats)


def table_source(name: str, info: StreamInfo) -> Source:
    return Source((name,), info.attributes, "t", stream=name, is_table=True)


# ---- lookups ---------------------------------------------------------------------------


@dataclass
class Lookup:
    """How to narrow the rows to test: by primary key or an index, from event values."""

    kind: str  # "pk" | "index"
    column: int
    key: str  # code over the event row

    def code(self, table: str) -> str:
        if self.kind == "pk":
            return f"{table}.ids_for_key({self.key})"
        return f"{table}.ids_for_index({self.column}, {self.key})"


def _conjuncts(e: Expr) -> list[Expr]:
    found: list[Expr] = []
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, BinaryOp) and node.op == "and":
            stack.extend((node.right, node.left))
        else:
            found.append(node)
    return found


def _table_column(e: Expr, table: str, info: StreamInfo) -> int | None:
    if isinstance(e, Variable) and e.stream == table and e.index is None:
        return info.names.index(e.attribute) if e.attribute in info.names else None
    return None


def _mentions_table(e: Expr, table: str) -> bool:
    return any(isinstance(n, Variable) and n.stream == table for n in walk(e))


def find_lookup(
    cond: Expr | None, table: str, info: StreamInfo, store: Table, comp: ExpressionCompiler, scope: Scope
) -> Lookup | None:
    """An equality `T.col == <event expression>` the table can answer by key or index."""
    if cond is None:
        return None
    equalities: dict[int, Expr] = {}
    for conj in _conjuncts(cond):
        if not (isinstance(conj, BinaryOp) and conj.op == "=="):
            continue
        for col_side, other in ((conj.left, conj.right), (conj.right, conj.left)):
            col = _table_column(col_side, table, info)
            if col is not None and not _mentions_table(other, table):
                equalities.setdefault(col, other)
    if not equalities:
        return None
    pk = store.primary_key
    errors_before = len(comp.ctx.errors.items)
    try:
        if pk and all(c in equalities for c in pk):
            keys = [comp.compile(equalities[c], scope) for c in pk]
            if any(_type_mismatch(info.types[c], k.type) for c, k in zip(pk, keys, strict=True)):
                return None
            code = keys[0].safe if len(pk) == 1 else "(" + ", ".join(k.safe for k in keys) + ",)"
            return Lookup("pk", pk[0], code)
        for c in store.indexes:
            if c in equalities:
                k = comp.compile(equalities[c], scope)
                if _type_mismatch(info.types[c], k.type):
                    return None
                return Lookup("index", c, k.safe)
    finally:
        del comp.ctx.errors.items[errors_before:]
    return None


def _type_mismatch(column: AttrType, value: AttrType) -> bool:
    """A lookup needs Python equality to agree with Siddhi's (int 1 == long 1 is fine;
    a float column against a double value is not: compare them by scanning)."""
    if column == value:
        return False
    integral = (AttrType.INT, AttrType.LONG)
    return not (column in integral and value in integral)


# ---- `cond in Table` ---------------------------------------------------------------------


def table_in_condition(ctx: PlanContext, name: str) -> TableInCondition | None:
    """What `cond in name` searches: a table or a named window of the plan, if any."""
    table = ctx.tables.get(name)
    if table is not None:
        return TableInCondition(ctx.table_infos[name], table)
    window = ctx.windows.get(name)
    if window is not None:
        return TableInCondition(ctx.window_infos[name], window)
    return None


class TableInCondition:
    def __init__(self, info: StreamInfo, store: Any) -> None:
        self.info = info
        self.store = store

    def compile_in(self, comp: ExpressionCompiler, e: In, scope: Scope) -> Compiled:
        src = table_source(e.table, self.info)
        sub = scope.with_qualified([src])
        cond = comp.compile(e.operand, sub)
        if cond.type is not AttrType.BOOL:
            return comp.error("the condition before 'in' must be a bool expression", e.operand.span)
        cond = comp.as_bool(cond)
        name = comp.ctx.bind("tbl", self.store)
        if isinstance(self.store, Table):
            lookup = find_lookup(e.operand, e.table, self.info, self.store, comp, scope)
            ids = lookup.code(name) if lookup is not None else "None"
            code = f"_table_any({name}, {ids}, lambda t: {cond.safe})"
        else:  # a named window: scan its rows
            code = f"any({cond.safe} for t in {name}.rows())"
        return Compiled(code, code, AttrType.BOOL, may_be_null=False)


# ---- outputs -------------------------------------------------------------------------


def insert_into_table(
    ctx: PlanContext, target: str, out: InsertInto
) -> Callable[[Env], Callable[[Chunk], None]]:
    table = ctx.tables[target]

    def build(env: Env) -> Callable[[Chunk], None]:
        return lambda chunk: table.insert(chunk.rows)

    return build


def _event_scope(
    query: Query, names: list[str], types: list[AttrType], table: str, info: StreamInfo
) -> Scope:
    refs: list[str] = []
    source = query.input
    for side in (getattr(source, "left", None), getattr(source, "right", None), source):
        stream = getattr(side, "stream", None)
        if isinstance(stream, str) and stream not in refs and stream != table:
            refs.append(stream)
    event = Source(
        tuple(refs) or ("__output__",), list(zip(names, types, strict=True)), "r", stream="__output__"
    )
    return Scope([event], qualified_only=[table_source(table, info)], event_ts="_et")


def plan_table_output(
    ctx: PlanContext, query: Query, sel: Any, comp: ExpressionCompiler
) -> Callable[[Env], Callable[[Chunk], None]]:
    out = query.output
    assert isinstance(out, (DeleteFrom, UpdateTable, UpdateOrInsert))
    store, info = table_target(ctx, out.target, out.target_span, comp)
    scope = _event_scope(query, sel.names, sel.types, out.target, info)
    apply = table_change(ctx, out, store, info, sel.names, sel.types, scope, comp)
    return lambda env: apply


def table_target(
    ctx: PlanContext, target: str, span: Span, comp: ExpressionCompiler
) -> tuple[Table, StreamInfo]:
    """The table `delete`/`update` names; raises PlanError (diagnostic recorded) if none."""
    store = ctx.tables.get(target)
    info = ctx.table_infos.get(target)
    if store is None or info is None:
        comp.error(f"'{target}' is not a table", span, hint="delete and update work on tables only")
        raise PlanError
    return store, info


def table_change(
    ctx: PlanContext,
    out: DeleteFrom | UpdateTable | UpdateOrInsert,
    store: Table,
    info: StreamInfo,
    names: list[str],
    types: list[AttrType],
    scope: Scope,
    comp: ExpressionCompiler,
) -> Callable[[Chunk], None]:
    """What `delete`/`update`/`update or insert` does with a chunk of events (rows of
    `names`/`types`, seen through `scope` with the table qualified)."""
    target = out.target
    cond_expr = out.on
    cond = comp.compile(cond_expr, scope) if cond_expr is not None else None
    if cond is not None and cond.type is not AttrType.BOOL:
        comp.error("the 'on' condition must be a bool expression", cond_expr.span)  # type: ignore[union-attr]
    lookup = find_lookup(cond_expr, target, info, store, comp, scope)
    name = comp.ctx.bind("tbl", store)
    pred_src = f"lambda t, r: {comp.as_bool(cond).safe}" if cond is not None else "lambda t, r: True"
    lookup_src = f"lambda {name}, r: {lookup.code(name)}" if lookup is not None else "lambda _t, r: None"
    make_src = None
    new_row_src = None
    if isinstance(out, (UpdateTable, UpdateOrInsert)):
        make_src = _make_row(out, names, types, info, target, scope, comp)
    if isinstance(out, UpdateOrInsert):
        if list(zip(names, types, strict=True)) != info.attributes:
            fmt = _signature
            comp.error(
                f"'update or insert' needs the select to match table '{target}' {fmt(info.attributes)}, "
                f"found {fmt(list(zip(names, types, strict=True)))}",
                out.target_span,
            )
        new_row_src = "lambda r: tuple(r)"
    if comp.ctx.errors:
        raise PlanError
    ns = comp.ctx.namespace
    pred = eval(pred_src, ns)  # noqa: S307 - generated code
    look = eval(lookup_src, ns)  # noqa: S307 - generated code
    make: Any = eval(make_src, ns) if make_src else None  # noqa: S307 - generated code
    new_row: Any = eval(new_row_src, ns) if new_row_src else None  # noqa: S307 - generated code

    if isinstance(out, UpdateOrInsert) and _only_primary_key_equality(cond_expr, target, info, store):
        return lambda chunk: store.overwrite(chunk.rows)
    if isinstance(out, DeleteFrom):
        return lambda chunk: store.delete(chunk.rows, look, pred)
    if isinstance(out, UpdateTable):
        return lambda chunk: store.update(chunk.rows, look, pred, make)
    return lambda chunk: store.update_or_insert(chunk.rows, look, pred, make, new_row)


def _only_primary_key_equality(cond: Expr | None, table: str, info: StreamInfo, store: Table) -> bool:
    """The whole condition is `T.pk == <the output's own pk attribute>` (all key columns)."""
    if cond is None or not store.primary_key:
        return False
    seen: set[int] = set()
    for conj in _conjuncts(cond):
        if not (isinstance(conj, BinaryOp) and conj.op == "=="):
            return False
        pair = None
        for col_side, other in ((conj.left, conj.right), (conj.right, conj.left)):
            col = _table_column(col_side, table, info)
            if (
                col is not None
                and isinstance(other, Variable)
                and other.stream in (None,)
                and other.index is None
            ):
                if other.attribute == info.names[col]:
                    pair = col
        if pair is None or pair not in store.primary_key:
            return False
        seen.add(pair)
    return seen == set(store.primary_key)


def _make_row(
    out: UpdateTable | UpdateOrInsert,
    names: list[str],
    types: list[AttrType],
    info: StreamInfo,
    target: str,
    scope: Scope,
    comp: ExpressionCompiler,
) -> str:
    """Code for `lambda t, r: <new table row>` from the set clause, or by attribute name."""
    columns = [f"t[{i}]" for i in range(len(info.names))]
    if out.set is None:
        for n, kind in zip(names, types, strict=True):
            if n not in info.names or info.types[info.names.index(n)] != kind:
                comp.error(
                    f"attribute '{n} {kind}' of the select is not a column of table '{target}'",
                    out.target_span,
                    hint="use 'set Table.column = expression' to map it",
                )
                continue
            columns[info.names.index(n)] = f"r[{names.index(n)}]"
    else:
        set_scope = Scope(scope.sources, qualified_only=scope.qualified_only, event_ts="_et")
        for assignment in out.set:
            v = assignment.variable
            # Siddhi takes only the attribute name of a set target (InMemoryTable and
            # AbstractRecordTable read getTableVariable().getAttributeName()): a qualifier that
            # is not the table's name, as in WSO2's API Manager analytics, is not checked.
            if v.attribute not in info.names:
                comp.error(f"'set' must assign a column of table '{target}'", v.span)
                continue
            col = info.names.index(v.attribute)
            value = comp.compile(assignment.expr, set_scope)
            if value.type != info.types[col] and not (value.const and value.value is None):
                comp.error(
                    f"cannot set column '{v.attribute}' ({info.types[col]}) to a {value.type}",
                    assignment.expr.span,
                )
            columns[col] = value.safe
    return "lambda t, r: (" + ", ".join(columns) + ",)"


def _signature(pairs: list[tuple[str, AttrType]]) -> str:
    return "(" + ", ".join(f"{n} {t}" for n, t in pairs) + ")"

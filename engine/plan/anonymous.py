"""`from (from S ... return [events]) select ...`: the inner query writes into a private
stream that the outer query reads."""

from __future__ import annotations

from typing import Any

from engine.plan.context import Env, StreamInfo
from engine.plan.query import Built, PlanQuery, QueryTemplate
from engine.query.queries import AnonymousInput, InsertInto, Query, SingleInput


def plan_anonymous_query(
    plan_query: PlanQuery, query: Query, name: str, inner: dict[str, StreamInfo] | None, stream: str
) -> QueryTemplate:
    """`stream` names the private stream between the inner and the outer query."""
    anon = query.input
    assert isinstance(anon, AnonymousInput)
    in_partition = inner is not None
    inner_query = Query(
        anon.query.input,
        InsertInto(anon.query.output.event_type, stream, in_partition, span=anon.query.output.span),
        anon.query.selector,
        anon.query.output_rate,
        [],
        span=anon.query.span,
    )
    first = plan_query(inner_query, inner)
    outer_query = Query(
        SingleInput(stream, inner=in_partition, span=anon.span, stream_span=anon.span),
        query.output,
        query.selector,
        query.output_rate,
        query.annotations,
        span=query.span,
    )
    second = plan_query(outer_query, inner)

    def build(env: Env) -> Built:
        a = first.build(env)
        b = second.build(env)
        states: dict[str, Any] = {f"inner/{k}": v for k, v in a.states.items()}
        states.update(b.states)
        return Built(a.inputs + b.inputs, states, a.start + b.start)

    return QueryTemplate(
        name, second.output_stream, second.output_inner, build, first.input_streams + second.input_streams
    )

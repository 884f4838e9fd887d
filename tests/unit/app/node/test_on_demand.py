"""`OnDemandQueries`: the node's side of `plans/<name>/query`: reads on any deployed plan,
changes refused on a plan with an input log or in redundant mode, a query compiled again
when the plan was redeployed between compiling and running it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import engine
from app.console.errors import OnDemandRefused
from app.node.on_demand import OnDemandQueries

PLAN = (
    "define stream In (k string, v long); @PrimaryKey('k') define table T (k string, v long);"
    "from In insert into T;"
)


@dataclass
class Plan:
    distributed_mode: str = "none"


@dataclass
class Plans:
    """What `OnDemandQueries` reads of a `PlanManager`."""

    runtimes: dict[str, engine.Runtime] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)
    journals: dict[str, object] = field(default_factory=dict)

    def deployment(self, name: str) -> tuple[Plan, engine.Runtime] | None:
        rt = self.runtimes.get(name)
        return None if rt is None else (Plan(self.modes.get(name, "none")), rt)

    def runtime(self, name: str) -> engine.Runtime | None:
        return self.runtimes.get(name)

    def journal(self, name: str) -> Any:
        return self.journals.get(name)


def runtime() -> engine.Runtime:
    rt = engine.compile(PLAN, start_time=0)
    rt.send("In", [("a", 1), ("b", 2)], timestamps=0)
    return rt


def queries(plans: Plans) -> OnDemandQueries:
    return OnDemandQueries(plans)  # type: ignore[arg-type]


def test_reads_and_changes_a_plain_plan() -> None:
    plans = Plans({"p": runtime()})
    ask = queries(plans)
    assert ask("p", "from T on v > 1 select k") == (["k"], [["b"]])
    assert ask("p", "delete T on T.k == 'a'") == ([], [])
    assert ask("p", "from T") == (["k", "v"], [["b", 2]])


@pytest.mark.parametrize(("mode", "journal"), [("none", object()), ("redundant", None)])
def test_a_logged_or_redundant_plan_takes_reads_only(mode: str, journal: object) -> None:
    plans = Plans({"p": runtime()}, {"p": mode}, {"p": journal} if journal else {})
    ask = queries(plans)
    assert ask("p", "from T select count() as n") == (["n"], [[2]])
    with pytest.raises(OnDemandRefused, match="on-demand changes are not logged"):
        ask("p", "delete T")
    assert ask("p", "from T select count() as n") == (["n"], [[2]])


def test_unknown_plan_and_bad_query() -> None:
    ask = queries(Plans({"p": runtime()}))
    with pytest.raises(LookupError, match="'q' is not deployed"):
        ask("q", "from T")
    with pytest.raises(engine.QueryError):
        ask("p", "from T select nope")


def test_a_redeploy_in_between_runs_the_query_on_the_new_runtime() -> None:
    old, new = runtime(), runtime()
    new.query("delete T on T.k == 'b'")
    plans = Plans({"p": old})
    real_prepare = old.prepare_query

    def prepare_then_redeploy(text: str) -> engine.PreparedQuery:
        prepared = real_prepare(text)
        old.shutdown()
        plans.runtimes["p"] = new
        return prepared

    old.prepare_query = prepare_then_redeploy  # type: ignore[method-assign]
    assert queries(plans)("p", "from T select k") == (["k"], [["a"]])

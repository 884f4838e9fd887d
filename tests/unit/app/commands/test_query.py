"""`cepheus query`'s printing: the table of rows, and a refusal's errors with the query's line
marked (the command against a real node: tests/integration/console/test_on_demand_node.py)."""

from __future__ import annotations

from app.commands.node_client import NodeRefused
from app.commands.query import _refusal, table


def test_table() -> None:
    assert table(["symbol", "v"], [["IBM", 1.5], [None, True]]) == (
        "symbol  v\n------  ----\nIBM     1.5\nnull    true\n(2 rows)"
    )
    assert table(["n"], []) == "n\n-\n(0 rows)"


def test_refusal_marks_the_position() -> None:
    reply = {"error": "query: 2:8: unknown attribute 'nope'", "errors": [{"line": 2, "col": 8, "end_line": 2, "end_col": 12, "message": "unknown attribute 'nope'"}]}  # fmt: skip
    text = "from T\nselect nope"
    assert _refusal(NodeRefused(reply["error"], reply), text) == (
        "query:2:8: unknown attribute 'nope'\n    select nope\n           ^^^^"
    )
    assert _refusal(NodeRefused("plan 'x' is not deployed on this node", {"error": "..."}), text) == (
        "error: plan 'x' is not deployed on this node"
    )

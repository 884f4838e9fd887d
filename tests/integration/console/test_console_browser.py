"""The console in a real browser (headless chromium) against a real `cepheus server` with a
MariaDB registry: an operator sets the pizza-shop scenario up purely through the pages (streams,
plan, data source, MySQL adapter, formatter), sends the seed's events from the simulator and
sees the three rows reach MariaDB; the editor marks a SiddhiQL error at its line; a graceful
restart from the server page brings the node back with its state. Every page visited is saved as
a screenshot (`tests.support.browser.Shots`). No page may log a script error or a CSP violation.

The plan is the seed's, with the order window shortened from 30 s to 4 s (orders become overdue
4 s after they are taken) so the journey does not wait half a minute.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, expect

from tests.support.browser import Shots, chromium
from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.mysql]

PLAN = (Path(__file__).resolve().parents[3] / "samples" / "pizza" / "plan.siddhi").read_text(encoding="utf-8")
PLAN = PLAN.replace("window.time(30 seconds)", "window.time(4 sec)")
EXPECTED = [(1, "Tom"), (2, "John"), (3, "Ratha")]  # the seed's: orders 4 and 5 are never delivered in time

ORDERS = [
    ["Order1", "Tom", "0122", "Info1", "Test"],
    ["Order2", "John", "07878", "Info1", "test"],
    ["Order3", "Ratha", "0784", "Info1", "test"],
    ["Order4", "Isabelle", "09921", "Info1", "test"],
    ["Order5", "Paul", "0989", "Info1", "test"],
]
DELIVERIES = [
    ["Delivery1", "Order1", "Colombo", 100, 50.0, "Mohan"],
    ["Delivery2", "Order2", "Kandy", 50, 70.0, "Rajeev"],
    ["Delivery3", "Order3", "Galle", 20, 700.0, "Lasantha"],
]


def rows(url: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("delivered_orders"):
                return []
            result = conn.execute(sa.text("SELECT sum_order_id, customer_name FROM delivered_orders"))
            return sorted((int(r[0]), str(r[1])) for r in result)
    finally:
        engine.dispose()


class Journey:
    def __init__(self, page: Page, base: str, shots: Shots) -> None:
        self.page = page
        self.base = base
        self.shots = shots
        self.problems: list[str] = []
        self.allowed: list[tuple[str, ...]] = []
        page.on("pageerror", lambda exc: self.problems.append(f"script error: {exc}"))
        page.on(
            "console",
            lambda m: (
                self.problems.append(f"console {m.type}: {m.text} at {m.location}")
                if m.type == "error"
                else None
            ),
        )

    def unexpected(self) -> list[str]:
        """The problems reported, but for those `allowed` (every part in the text: an expected error page)."""
        return [
            p for p in self.problems if not any(all(part in p for part in parts) for parts in self.allowed)
        ]

    def go(self, path: str, shot: str) -> None:
        self.page.goto(self.base + path)
        self.shots.take(self.page, shot)

    def ok(self, text: str) -> None:
        expect(self.page.locator(".flash.ok")).to_contain_text(text)

    def stream(self, name: str, payload: str, meta: str = "") -> None:
        self.go("/streams", f"streams before {name}")
        form = self.page.locator("form.grid")
        form.locator('input[name="name"]').fill(name)
        form.locator('textarea[name="meta"]').fill(meta)
        form.locator('textarea[name="payload"]').fill(payload)
        form.locator('button[type="submit"]').click()
        self.ok("stream created")

    def connector(self, kind: str, definition: dict[str, Any]) -> None:
        self.go(f"/{kind}", kind)
        self.page.locator('textarea[name="definition"]').fill(json.dumps(definition, indent=2))
        self.page.get_by_role("button", name="Create").click()
        self.ok("saved")

    def simulate(self, stream: str, events: list[list[Any]]) -> None:
        self.go("/simulator", f"simulator {stream}")
        self.page.locator('select[name="stream"]').select_option(stream)
        self.page.locator('textarea[name="events"]').fill(json.dumps(events))
        self.page.get_by_role("button", name="Send").click()
        self.ok(f"{len(events)} event(s) sent to {stream}")


def test_the_pizza_scenario_set_up_and_run_purely_through_the_console(tmp_path: Path, mysql_url: str) -> None:
    with (
        isolated_database(mysql_url, "cep_console") as registry,
        isolated_database(mysql_url, "cep_pizza") as sink,
        chromium() as browser,
    ):
        node = NodeProcess(tmp_path, registry)
        node.start()
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            journey = Journey(page, f"http://127.0.0.1:{node.console_port}", Shots("pizza"))
            try:
                run(journey, node, sink)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n(the pages reported: {journey.unexpected()})") from None
            assert journey.unexpected() == [], "\n".join(journey.unexpected())
        finally:
            node.stop()


def run(journey: Journey, node: NodeProcess, sink: str) -> None:
    page = journey.page
    # log in (a wrong password first)
    journey.go("/plans", "login")
    assert "/login" in page.url
    page.locator('input[name="username"]').fill("admin")
    page.locator('input[name="password"]').fill("not-the-password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("wrong user name or password")
    journey.allowed.append(("status of 401", "/login?next=/plans"))  # the refusal is a 401 page
    page.locator('input[name="password"]').fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(journey.base + "/plans")  # back where it was sent from
    journey.shots.take(page, "plans after login")

    # the streams
    journey.stream(
        "orderStream",
        "orderNo STRING\ncustomerName STRING\ntelephoneNo STRING\norderInfo STRING\norderedTime STRING",
    )
    journey.stream(
        "deliveryStream",
        "orderNo STRING\nareaName STRING\ntime LONG\ntotalBill DOUBLE\ndeliveredBy STRING",
        meta="deliveryNo STRING",
    )
    journey.stream("deliveredOrders", "sumOrderId LONG\ncustomerName STRING")
    journey.go("/streams/deliveryStream:1.0.0", "a stream")

    # the plan: an error is marked at its line as it is typed, then the right text is saved
    journey.go("/plans/new", "new plan")
    editor = page.locator("#plan-text")
    broken = PLAN.replace("from deliveryStream select", "from deliveryStream selec")
    editor.fill(broken)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "selec time" in text)
    col = broken.splitlines()[line - 1].index("selec") + 1
    expect(page.locator("#plan-errors li").first).to_contain_text(f"{line}:{col}: ")  # at the word 'selec'
    first = page.locator("#plan-errors li").first
    assert (first.get_attribute("data-line"), first.get_attribute("data-col")) == (str(line), str(col))
    first.click()  # selects the error's span in the text
    assert (
        page.evaluate(
            "(() => { const t = document.getElementById('plan-text'); return t.value.slice(t.selectionStart, t.selectionEnd); })()"
        )
        == "selec"
    )
    expect(page.locator(f'#plan-gutter span[data-line="{line}"]')).to_have_class("error")
    journey.shots.take(page, "editor marks the error")
    editor.fill(PLAN)
    expect(page.locator("#plan-valid")).to_have_text("The plan is valid.")
    expect(page.locator("#plan-errors li")).to_have_count(0)
    page.locator('input[name="snapshot_interval_minutes"]').fill("60")
    page.get_by_role("button", name="Save").click()
    journey.ok("plan pizzaOrderProcessingPlan saved")
    journey.shots.take(page, "plan saved")

    # output: data source (tested), MySQL adapter, formatter with its mappings
    journey.connector("datasources", {"name": "pizzaDB", "url": sink})
    page.get_by_role("button", name="Test connection").click()
    journey.ok("connected")
    journey.connector(
        "adapters",
        {
            "name": "deliveredOrdersTable", "type": "rdbms", "datasource": "pizzaDB", "table": "delivered_orders",
            "mode": "insert-or-update", "key_columns": ["customer_name"], "create_table": True,
            "columns": [{"name": "sum_order_id", "type": "BIGINT"}, {"name": "customer_name", "type": "VARCHAR(20)"}],
        },
    )  # fmt: skip
    journey.connector(
        "formatters",
        {
            "name": "deliveredOrdersToTable", "stream": "deliveredOrders:1.0.0", "adapter": "deliveredOrdersTable",
            "type": "map", "mappings": {"sum_order_id": "sumOrderId", "customer_name": "customerName"},
        },
    )  # fmt: skip
    wait_for(
        lambda: node.health()["plans"].get("pizzaOrderProcessingPlan", {}).get("state") == "running",
        20,
        "the plan to run",
    )
    journey.go("/", "dashboard")
    expect(page.locator("table").first).to_contain_text("pizzaOrderProcessingPlan")

    # the seed's events from the simulator; orders 1-3 are delivered before they become overdue
    journey.simulate("orderStream:1.0.0", ORDERS)
    journey.simulate("deliveryStream:1.0.0", DELIVERIES)
    wait_for(lambda: rows(sink) == EXPECTED, 20, f"the three rows in MariaDB (have {rows(sink)})")
    journey.go("/", "dashboard")
    expect(page.locator("#rates-legend li", has_text="in deliveryStream:1.0.0")).to_be_visible(timeout=10_000)
    expect(page.locator("#rates-legend li", has_text="out deliveredOrders:1.0.0")).to_be_visible()
    expect(page.locator("#rates-chart polyline")).to_have_count(3)
    expect(page.locator("#received")).to_have_text("8")
    journey.shots.take(page, "dashboard with its chart")

    # every other page renders
    for path, shot in (
        ("/plans", "plans"), ("/plans/pizzaOrderProcessingPlan", "plan"), ("/receivers", "receivers"),
        ("/adapters/deliveredOrdersTable", "an adapter"), ("/cluster", "cluster"), ("/users", "users"), ("/server", "server"),
    ):  # fmt: skip
        journey.go(path, shot)
        expect(page.locator("main h1")).to_be_visible()

    # the plan's page: its queries and streams; a snapshot taken now, then restored (the same state)
    journey.go("/plans/pizzaOrderProcessingPlan", "plan page")
    expect(page.locator("main")).to_contain_text("insert into overdueDeliveries for expired-events")
    page.get_by_role("button", name="Take a snapshot now").click()
    expect(page.locator(".flash.ok")).to_contain_text("taken")
    expect(page.locator("#snapshots tbody tr")).to_have_count(1)
    page.locator("#snapshots").get_by_role("button", name="Restore").click()
    journey.ok("restored into plan pizzaOrderProcessingPlan")
    journey.shots.take(page, "plan page with a snapshot restored")

    # a graceful restart: confirmation step, then the same node comes back with its state
    journey.go("/server", "server before restart")
    page.get_by_role("button", name="Restart gracefully").click()
    journey.shots.take(page, "restart confirmation")
    page.locator("#confirm-restart").click()
    expect(page.locator("#going")).to_contain_text("Restarting")
    journey.shots.take(page, "restarting")
    wait_for(lambda: "restarting (requested from the console)" in node.log(), 30, "the restart")
    wait_for(lambda: _running(node), 60, f"the node to come back\n{node.log()[-3000:]}")
    journey.go("/", "dashboard after restart")  # the session survives the restart
    expect(page.locator("table").first).to_contain_text("pizzaOrderProcessingPlan")
    # the count of delivered orders continues from 3: the plan kept its state across the restart
    journey.go("/tracer", "tracer")
    with page.expect_response(lambda r: "/api/v1/streams/orderStream%3A1.0.0/trace" in r.url):
        page.locator("#trace-stream").select_option("orderStream:1.0.0")  # kept from now on
    journey.simulate("orderStream:1.0.0", [["Order6", "Kim", "0111", "Info1", "test"]])
    journey.go("/tracer", "tracer with an event")
    page.locator("#trace-stream").select_option("orderStream:1.0.0")
    expect(page.locator("#trace tbody tr")).to_have_count(1)
    expect(page.locator("#trace tbody")).to_contain_text('"customerName":"Kim"')
    journey.simulate("deliveryStream:1.0.0", [["Delivery6", "Order6", "Galle", 30, 40.0, "Mohan"]])
    wait_for(lambda: (4, "Kim") in rows(sink), 20, f"Kim's row after the restart (have {rows(sink)})")


def _running(node: NodeProcess) -> bool:
    try:
        return node.health()["plans"]["pizzaOrderProcessingPlan"]["state"] == "running"
    except Exception:
        time.sleep(0.2)
        return False

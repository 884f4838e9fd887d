"""The plan journal: a snapshot plus a replay of the input log after it gives exactly the
outputs of a run that never stopped, whatever the wall clock reads during the replay."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine
from app.persistence.input_log import Events, InputLog
from app.persistence.journal import NotLeading, PlanJournal
from ha.ports import LogPosition
from tests.support.journals import OPS, Run, Wall


def test_a_snapshot_and_the_log_after_it_give_the_uninterrupted_outputs(tmp_path: Path) -> None:
    whole = Run(tmp_path / "whole")
    whole.do(OPS)
    assert {s for s, _ in whole.out} == {"Sums", "Batches", "Rises"}  # every operator had a say

    for cut in range(0, len(OPS), 3):
        for crash in range(cut, len(OPS) + 1, 4):
            first = Run(tmp_path / f"cut{cut}-{crash}")
            first.do(OPS[:cut])
            emitted_before_cut = len(first.out)
            capture, log_id, position = first.journal.capture()
            blob = capture.encode()
            first.do(OPS[cut:crash])  # ... and the process dies here, its log left as it is

            second = Run(first.directory, Wall(OPS[max(crash - 1, 0)][0]))  # restarted at once
            second.runtime.restore(blob)
            second.wall.now = 10**12  # the replay must not read the wall clock
            assert second.journal.recover(True, log_id, position) == first.journal.position - position
            second.do(OPS[crash:])
            assert second.out == whole.out[emitted_before_cut:], f"cut {cut}, crash {crash}"


def test_without_a_snapshot_the_whole_log_replays_from_the_plans_first_start(tmp_path: Path) -> None:
    whole = Run(tmp_path / "whole")
    whole.do(OPS)
    first = Run(tmp_path / "log", Wall(OPS[0][0] - 500))  # started half a second before the first event
    first.do(OPS[:9])
    second = Run(tmp_path / "log", Wall(10**12))
    assert second.journal.clock.now == OPS[0][0] - 500  # the runtime started when the first one did
    assert second.journal.recover(restored=False) == first.journal.position
    assert second.journal.clock.now == OPS[8][0]
    second.do(OPS[9:])
    assert second.out == whole.out


def test_a_log_that_cannot_continue_the_restored_state_is_reset(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = Run(tmp_path / "log")
    first.do(OPS[:5])
    old_id = first.journal.log_id
    second = Run(tmp_path / "log")
    assert second.journal.recover(True, "another-nodes-log", 3) == 0
    assert "its input log does not continue the state restored" in caplog.text
    assert second.journal.log_id != old_id
    assert second.log.bounds("p") == (1, 1)  # only the new log's start
    second.do(OPS[5:6])
    assert second.journal.position == 2  # a new log counts from 1


def test_a_snapshot_beyond_the_end_of_the_log_resets_it(tmp_path: Path) -> None:
    first = Run(tmp_path / "log")
    first.do(OPS[:4])
    second = Run(tmp_path / "log")
    assert second.journal.recover(True, first.journal.log_id, 10) == 0  # the log lost its tail
    assert second.journal.log_id != first.journal.log_id


def test_outputs_carry_where_in_the_log_they_come_from(tmp_path: Path) -> None:
    run = Run(tmp_path / "log")
    seen: list[tuple[int, int, int]] = []

    def origin(events: list[engine.Event]) -> None:
        where = run.journal.origin("Sums", len(events))
        seen.append((where.position, where.index, len(events)))

    run.runtime.subscribe("Sums", origin)
    run.do(OPS)
    assert len(seen) > 3
    previous = (0, 0, 0)
    for position, index, n in seen:
        assert position >= previous[0]
        assert index == (previous[1] + previous[2] if position == previous[0] else 0)
        previous = (position, index, n)
    assert previous[0] <= run.journal.position


def test_a_snapshot_taken_without_the_log_is_not_replayed_over(tmp_path: Path) -> None:
    first = Run(tmp_path / "log")
    first.do(OPS[:6])
    second = Run(tmp_path / "log")
    assert second.journal.recover(True, None, None) == 0  # a snapshot with no log position
    assert second.journal.log_id != first.journal.log_id


def test_a_replay_without_a_snapshot_keeps_a_triggers_phase(tmp_path: Path) -> None:
    plan = """
    define trigger Beat at every 300 millisec;
    define stream Beats (t long);
    from Beat select triggered_time as t insert into Beats;
    """
    wall = Wall(1_000)
    log = InputLog(tmp_path / "log", "off")
    journal = PlanJournal("t", log, wall)
    live = engine.compile(plan, clock="wall", wall_time=journal.clock)
    journal.runtime = live
    fired: list[int] = []
    live.subscribe("Beats", lambda events: fired.extend(e.data[0] for e in events))
    for now in range(1_100, 2_400, 100):
        wall.now = now
        journal.tick()
    again = PlanJournal("t", InputLog(tmp_path / "log", "off"), Wall(10**12))
    replayed = engine.compile(plan, clock="wall", wall_time=again.clock)
    again.runtime = replayed
    seen: list[int] = []
    replayed.subscribe("Beats", lambda events: seen.extend(e.data[0] for e in events))
    again.recover(restored=False)
    assert fired and seen == fired


def test_a_bundle_handed_over_by_columns_is_logged_as_its_rows_with_the_clock_reading(tmp_path: Path) -> None:
    run = Run(tmp_path / "log")
    run.wall.now = 5_000
    columns = ((str, ("a", "b")), (int, (3, 4)))
    run.journal.send("In", [("a", 3), ("b", 4)], [10, 20], columns)
    position, record = list(run.log.read("p"))[-1]
    assert position == run.journal.position
    assert record == Events("In", [10, 20], [("a", 3), ("b", 4)], 5_000)


def test_a_bundle_relayed_here_is_never_passed_on(tmp_path: Path) -> None:
    """A member that no longer leads refuses a bundle another member relayed to it: passed on to
    the next notifier, it could arrive there twice (once from here, once from the relaying member
    trying again); a client's own bundle goes on to the notifier."""
    run = Run(tmp_path / "a")
    relayed: list[list[tuple[object, ...]]] = []
    run.journal.follow(lambda stream, rows, timestamps, senders=(): relayed.append(rows))
    position = run.journal.position
    run.journal.send("In", [("k", 1)], 1)
    assert relayed == [[("k", 1)]]
    with pytest.raises(NotLeading):
        run.journal.send("In", [("k", 2)], 2, forward=False)
    assert relayed == [[("k", 1)]]
    assert run.journal.position == position and not run.out


def test_the_term_whose_log_a_journal_holds_survives_a_restart_with_the_log(tmp_path: Path) -> None:
    """A member restarted with its log still holds what the lease may require of it; a log that
    was reset (or adopted anew) holds no term's records until it is told."""
    first = Run(tmp_path / "a", Wall(OPS[0][0]))
    assert first.journal.held() == LogPosition(0, first.journal.position)
    first.journal.lead(5, None)
    first.do(OPS[:4])
    first.log.close()
    again = Run(tmp_path / "a", Wall(OPS[4][0]))
    assert again.journal.held() == LogPosition(5, first.journal.position)
    again.journal.adopt("another-log", 40, OPS[4][0], 6)
    assert Run(tmp_path / "a").journal.held() == LogPosition(6, 40)
    again.journal.reset()
    assert again.journal.held().term == 0
    again.log.close()
    assert Run(tmp_path / "a").journal.held().term == 0


def test_what_is_known_written_survives_a_restart_and_a_replay_of_the_same_log_is_told_it(
    tmp_path: Path,
) -> None:
    """A restarted member's gate must hold only the outputs not known written (else a long log
    replays past its bound, and it may not take over): the journal keeps the position, at most
    once a second, for its log only, and tells a replay of that log."""
    first = Run(tmp_path / "a", Wall(OPS[0][0]))
    first.do(OPS[:6])
    first.journal.keep_delivered(3, now=100.0, leading=True)
    first.journal.keep_delivered(5, now=100.5, leading=True)  # within the second: not written
    assert first.journal.delivered == 3
    first.journal.keep_delivered(5, now=101.0, leading=True)
    first.journal.follow(None)  # it steps down: a position read while it notified is not kept
    first.journal.keep_delivered(6, now=103.0, leading=True)
    assert first.journal.delivered == 5
    first.log.close()

    told: list[int] = []
    again = Run(tmp_path / "a", Wall(10**12))
    assert again.journal.recover(restored=False, written=told.append) == 6
    assert told == [5]
    told.clear()
    elsewhere = Run(tmp_path / "a")
    assert elsewhere.journal.recover(True, "another-nodes-log", 3, written=told.append) == 0
    assert told == [] and elsewhere.journal.delivered == 0  # a new log: nothing of it known written

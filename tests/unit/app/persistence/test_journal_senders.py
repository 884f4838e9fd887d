"""A journaled plan takes each named event once, and its marks survive a restart (from the log
alone, or a snapshot and the log after it) and travel to a standby with its records."""

from __future__ import annotations

from pathlib import Path

from adapters.senders import SenderRun
from app.persistence.records import Events, decode, encode
from tests.support.journals import Run, Wall


def named(sender: str, first: int, n: int) -> tuple[SenderRun, ...]:
    return (SenderRun(sender, 0, first, n),)


def send(run: Run, values: list[int], senders: tuple[SenderRun, ...]) -> int:
    run.wall.now += 10
    return run.journal.send("In", [("k", v) for v in values], run.wall.now, senders=senders)


def sums(run: Run) -> list[int]:
    return [row[0] for stream, row in run.out if stream == "Sums"]


def test_a_record_keeps_who_sent_its_events() -> None:
    record = Events("In", [1, 2], [("a", 1), ("b", 2)], 77, senders=(SenderRun("x|log", 3, 4, 2),))
    assert decode(encode(record)) == record
    plain = Events("In", [1], [("a", 1)], 5)
    assert encode(plain)[0] == 4 and decode(encode(plain)) == plain  # unnamed bundles as before


def test_a_resent_bundle_is_taken_once_and_a_retry_cut_longer_adds_only_its_tail(tmp_path: Path) -> None:
    run = Run(tmp_path / "log", Wall(1_000))
    first = send(run, [1, 2], named("pub", 0, 2))
    assert send(run, [1, 2], named("pub", 0, 2)) == first  # nothing new: the newest position
    assert send(run, [1, 2, 3], named("pub", 0, 3)) == first + 1
    assert sums(run) == [3, 6]  # 1 and 2, then only the 3
    assert send(run, [1, 2], named("other", 0, 2)) == first + 2  # another sender's events are its own
    assert sums(run)[-1] == 9


def test_the_marks_come_back_from_the_log_after_a_restart(tmp_path: Path) -> None:
    first = Run(tmp_path / "log", Wall(1_000))
    send(first, [1, 2], named("pub", 0, 2))
    second = Run(tmp_path / "log", Wall(5_000))
    second.journal.recover(restored=False)
    position = second.journal.position
    assert send(second, [1, 2], named("pub", 0, 2)) == position  # the resend after the restart
    assert send(second, [2, 5], (SenderRun("pub", 0, 1, 2),)) == position + 1
    assert sums(second)[-1] == 5  # the 2 taken before (and out of the 1 s window now) not again


def test_the_marks_come_back_from_a_snapshot_whose_log_was_truncated(tmp_path: Path) -> None:
    first = Run(tmp_path / "log", Wall(1_000))
    send(first, [4], named("pub", 0, 1))
    capture, log_id, position = first.journal.capture()
    blob = capture.encode()
    first.log.truncate("p", position, log_id)  # the records the snapshot covers are gone

    second = Run(tmp_path / "log", Wall(1_100))
    report = second.runtime.restore(blob)
    second.journal.restore_senders(report.annex)
    second.journal.recover(True, log_id, position)
    before = second.journal.position
    assert send(second, [4], named("pub", 0, 1)) == before
    assert sums(second) == []  # the resend was not processed again


def test_a_standby_applying_records_learns_the_marks_and_adopting_a_state_takes_them(tmp_path: Path) -> None:
    leader = Run(tmp_path / "leader", Wall(1_000))
    standby = Run(tmp_path / "standby", Wall(1_000))
    standby.journal.follow(None)
    standby.journal.adopt(leader.journal.log_id, leader.journal.position, 1_000, 1)
    send(leader, [1, 2], named("pub", 0, 2))
    for position, payload in leader.log.read_payloads("p", standby.journal.position):
        standby.journal.apply(position, payload)
    assert standby.journal.senders.state() == [["pub", 0, 1]]

    joined = Run(tmp_path / "joined", Wall(1_000))
    joined.journal.follow(None)
    joined.journal.adopt(
        leader.journal.log_id, leader.journal.position, 1_000, 1, (), leader.journal.senders.state()
    )
    assert joined.journal.senders.state() == [["pub", 0, 1]]

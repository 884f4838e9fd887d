"""A log that was open when the machine went down (a power cut) may have lost its last records
whole, which its files cannot show: it continues under a new id, so that no position is used
again for other records (a sink or a downstream node that marked the lost positions delivered
would skip the new ones) and its member no longer counts as holding its old term's records.
A process killed on a running machine loses nothing, and neither does `fsync = "always"`."""

from __future__ import annotations

from pathlib import Path

from app.persistence.input_log import OPEN_FILE, InputLog
from app.persistence.records import Tick


def crashed(directory: Path, policy: str = "off") -> tuple[str, int]:
    """A log with two records and a term, left open (its process gone); its id and last position."""
    log = InputLog(directory, policy)
    log.append("p", Tick(1))
    position = log.append("p", Tick(2))
    log.set_term("p", 7)
    return log.log_id("p"), position


def test_after_the_machine_went_down_the_log_continues_under_a_new_id(tmp_path: Path) -> None:
    old, position = crashed(tmp_path)
    (tmp_path / OPEN_FILE).write_text("the-boot-before", "ascii")  # as the crashed process left it
    again = InputLog(tmp_path, "interval")
    assert again.log_id("p") != old
    assert again.term("p") == 0  # it does not hold what its term's notifier acknowledged
    assert again.bounds("p") == (1, position)  # what it has is kept, under the new id
    assert again.append("p", Tick(3)) == position + 1
    again.close()


def test_a_killed_process_keeps_the_id(tmp_path: Path) -> None:
    old, _ = crashed(tmp_path)
    assert InputLog(tmp_path, "interval").log_id("p") == old  # the same boot: the kernel wrote it all


def test_under_fsync_always_the_machine_going_down_keeps_the_id(tmp_path: Path) -> None:
    old, _ = crashed(tmp_path, "always")
    (tmp_path / OPEN_FILE).write_text("the-boot-before", "ascii")
    assert InputLog(tmp_path, "always").log_id("p") == old  # every acknowledged record was on disk


def test_a_log_closed_before_the_machine_went_down_keeps_its_id(tmp_path: Path) -> None:
    log = InputLog(tmp_path, "interval")
    log.append("p", Tick(1))
    old = log.log_id("p")
    log.close()
    assert not (tmp_path / OPEN_FILE).exists()
    assert InputLog(tmp_path, "interval").log_id("p") == old

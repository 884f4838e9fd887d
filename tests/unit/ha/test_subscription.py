"""A standby resumes only inside the notifier's log and term; anything else takes a snapshot."""

from __future__ import annotations

import pytest

from ha.messages import Subscribe
from ha.subscription import resumes


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (Subscribe("p", "log-a", 7, 3, "t", False), True),
        (Subscribe("p", "log-a", 4, 3, "t", False), True),  # just before the oldest record kept
        (Subscribe("p", "log-a", 3, 3, "t", False), False),  # the log no longer has 4
        (Subscribe("p", "log-a", 11, 3, "t", False), False),  # ahead of the notifier: another history
        (Subscribe("p", "log-a", 7, 2, "t", False), False),  # another term: its records may differ
        (Subscribe("p", "log-b", 7, 3, "t", False), False),  # another log
        (Subscribe("p", "log-a", 7, 3, "t", True), False),  # it asks for a state afresh
    ],
)
def test_a_standby_resumes_only_a_prefix_of_the_notifiers_log_in_its_term(
    request_: Subscribe, expected: bool
) -> None:
    assert resumes(request_, "log-a", 3, first=5, last=10) is expected

"""`cepheus server`'s logging set-up keeps per-request noise out of the log."""

from __future__ import annotations

import logging

import pytest

from app.commands.server import setup_logging


def test_requests_waiting_for_a_worker_are_not_logged_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging, "basicConfig", lambda **kwargs: None)  # leave pytest's handlers alone
    queue = logging.getLogger("waitress.queue")
    level = queue.level
    try:
        setup_logging("INFO")
        assert not queue.isEnabledFor(logging.WARNING)
    finally:
        queue.setLevel(level)

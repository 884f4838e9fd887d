"""`LoggerAdapter`: each record as one log line (WSO2's `logger` output adapter).

Config:
    logger = "cepheus.output.pizza"   the logger name (default `adapters.output.logger.<adapter name>`)
    prefix = "delivered: "           text before each record (default "")
    level = "INFO"                   DEBUG, INFO, WARNING or ERROR

Text records (json, xml, text formatters) are logged as they are, dict rows as JSON,
anything else with `repr`. Logging is synchronous — `publish` returns once the lines are
handed to `logging` — so there is no buffer: `flush` and `stop` return True at once.
Origins are ignored: a log cannot say what it already has, so a replay after a restart
logs its records again (at-least-once).
Imports `formatters` and sibling modules only; configures no handlers.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.output.base import AdapterStats, AdapterStopped, Fence, Origins, check_origins
from adapters.wording import counted
from formatters.config import Settings

log = logging.getLogger(__name__)

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def render(record: Any) -> str:
    if isinstance(record, str):
        return record
    if isinstance(record, Mapping):
        try:
            return json.dumps(dict(record), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            pass
    return repr(record)


class LoggerAdapter:
    """Logs every record it is given."""

    kind = "logger"

    def __init__(self, name: str, settings: Settings) -> None:
        self.name = name
        self.logger = logging.getLogger(settings.string("logger", f"{__name__}.{name}"))
        self.prefix = settings.string("prefix", "")
        level = settings.string("level", "INFO").upper()
        if level not in LEVELS:
            settings.fail("level", f"must be one of {', '.join(LEVELS)}; got {level!r}")
        self.level = logging.getLevelNamesMapping()[level]
        self._lock = threading.Lock()
        self._published = 0
        self._written = 0
        self._fenced = 0
        self._stopped = False

    def start(self) -> None:
        if self._stopped:
            msg = f"adapter {self.name} has been stopped; build a new one"
            raise AdapterStopped(msg)

    def publish(
        self, records: Sequence[Any], fence: Fence | None = None, origins: Origins | None = None
    ) -> int:
        if self._stopped:
            msg = f"adapter {self.name} has been stopped; records can no longer be published"
            raise AdapterStopped(msg)
        check_origins(self.name, records, origins)  # refuse what other adapters refuse; then ignore them
        with self._lock:
            self._published += len(records)
        if fence is not None:
            try:
                fence(None)
            except Exception as exc:
                log.warning(
                    "adapter %s: fence refused %s: %s", self.name, counted(len(records), "record"), exc
                )
                with self._lock:
                    self._fenced += len(records)
                return len(records)
        enabled = self.logger.isEnabledFor(self.level)
        for record in records:
            if enabled:
                self.logger.log(self.level, "%s%s", self.prefix, render(record))
        with self._lock:
            self._written += len(records)
        return len(records)

    def room(self, timeout: float) -> bool:
        return True  # it writes as it is given records: it holds none

    def flush(self, timeout: float | None = None) -> bool:
        return True

    def stop(self, timeout: float | None = None) -> bool:
        self._stopped = True
        return True

    @property
    def stats(self) -> AdapterStats:
        with self._lock:
            return AdapterStats(published=self._published, written=self._written, fenced=self._fenced)

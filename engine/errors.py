"""The one error tree of Cepheus; every layer subclasses from here.

```
CEPError
├─ QueryError (source, line, col, end_line, end_col, hint; .errors for all found)
│   ├─ QuerySyntaxError
│   └─ QueryValidationError
├─ ProcessingError (query name)
├─ StateError (a snapshot that cannot be restored)
├─ AdapterError, FormatError, ConfigError
├─ Busy (retry_after): not taken now, nothing of it kept; the sender tries again later
└─ HAError
    └─ NotLeader
```

Imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass


class CEPError(Exception):
    """Root of every error Cepheus raises on purpose."""


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a plan, with a 1-based span."""

    message: str
    line: int
    col: int
    end_line: int
    end_col: int
    hint: str | None = None

    def format(self, source: str | None = None, filename: str = "<plan>") -> str:
        """`file:line:col: message`, then the source line with the span marked."""
        text = f"{filename}:{self.line}:{self.col}: {self.message}"
        if self.hint:
            text += f"; {self.hint}"
        if source is None:
            return text
        lines = source.splitlines()
        if not 1 <= self.line <= len(lines):
            return text
        src = lines[self.line - 1].expandtabs(1)
        width = (self.end_col - self.col) if self.end_line == self.line else len(src) - self.col + 1
        width = max(1, width)
        return f"{text}\n    {src}\n    {' ' * (self.col - 1)}{'^' * width}"


class QueryError(CEPError):
    """A plan that cannot be compiled. `.errors` holds every problem found."""

    def __init__(self, errors: list[Diagnostic], source: str | None = None) -> None:
        if not errors:
            msg = "QueryError needs at least one diagnostic"
            raise ValueError(msg)
        self.errors = list(errors)
        self.source = source
        first = self.errors[0]
        self.line = first.line
        self.col = first.col
        self.end_line = first.end_line
        self.end_col = first.end_col
        self.hint = first.hint
        super().__init__(self.format())

    def format(self, filename: str = "<plan>", *, with_source: bool = False) -> str:
        src = self.source if with_source else None
        return "\n".join(d.format(src, filename) for d in self.errors)


class QuerySyntaxError(QueryError):
    """The text does not follow SiddhiQL's grammar."""


class QueryValidationError(QueryError):
    """The text parses but means nothing: unknown names, wrong types, bad parameters."""


class ProcessingError(CEPError):
    """A query failed while processing events."""

    def __init__(self, message: str, query: str | None = None) -> None:
        self.query = query
        super().__init__(f"query {query}: {message}" if query else message)


class StateError(CEPError):
    """A snapshot is corrupt, of another version, or of another plan."""


class AdapterError(CEPError):
    """A receiver or output adapter failed."""


class FormatError(CEPError):
    """An event could not be mapped to or from its wire or row form."""


class ConfigError(CEPError):
    """The configuration is invalid; the message names the key."""


class Busy(CEPError):
    """The events (or the request) were not taken and nothing of them was kept: the receiver
    refuses them as retryable (HTTP 503 with `Retry-After`, a Thrift error the publisher
    retries), and the sender tries again after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HAError(CEPError):
    """Membership, lease or state-transfer failure."""


class NotLeader(HAError):
    """This node does not hold the notifier lease for the plan."""

"""Output adapters: deliver formatted records to a table, a log or an HTTP endpoint.

```python
from adapters.output import build_adapter
out = build_adapter("rdbms", "pizzaOut", {"datasource": "pizzaDB", "table": "delivered_orders", ...},
                    datasources={"pizzaDB": "mysql+pymysql://root@127.0.0.1/test"})
out.start()
out.publish(rows)            # non-blocking; rows from the map formatter
out.publish(rows, origins=Origin("plan/stream/formatter", "log-1", 42, 0))
                             # replay protection: rdbms skips what it already wrote (the first
                             # record's origin; the others are indexes 1, 2, ... of position 42)
out.flush(timeout=5.0)       # True once everything published so far is written
out.stop(timeout=5.0)
out.stats                    # AdapterStats: published, written, overflow, rejected, skipped, ...
```

| type | module | records |
|---|---|---|
| `rdbms` (alias `mysql`) | `adapters.output.rdbms` | dict rows (map formatter) |
| `logger` | `adapters.output.logger` | anything (text as is) |
| `http` | `adapters.output.http_post` | JSON text / dict rows / dataclasses, or text lines |

`memory` (`adapters.output.memory`) is an in-memory double for tests. Config keys are in
each module and in `docs/adapters.md`. Imports `engine.errors` and `formatters` only —
never `ha` or `app`.
"""

from __future__ import annotations

from adapters.output.base import (
    AdapterConfigError,
    AdapterStats,
    AdapterStopped,
    Fence,
    Origin,
    Origins,
    OutputAdapter,
    RecordError,
    Run,
    per_record,
)
from adapters.output.buffered import BufferedAdapter, Buffering, FenceRaised, Refused, RetryLater
from adapters.output.factory import ADAPTER_TYPES, build_adapter
from adapters.output.http_post import HttpAdapter
from adapters.output.logger import LoggerAdapter
from adapters.output.memory import MemoryAdapter
from adapters.output.rdbms import RdbmsAdapter, RdbmsSettings

__all__ = [
    "ADAPTER_TYPES",
    "AdapterConfigError",
    "AdapterStats",
    "AdapterStopped",
    "BufferedAdapter",
    "Buffering",
    "Fence",
    "FenceRaised",
    "HttpAdapter",
    "LoggerAdapter",
    "MemoryAdapter",
    "Origin",
    "Origins",
    "OutputAdapter",
    "RdbmsAdapter",
    "RdbmsSettings",
    "RecordError",
    "Refused",
    "RetryLater",
    "Run",
    "build_adapter",
    "per_record",
]

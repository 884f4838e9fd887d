"""The registry: users, stream definitions, execution plans, receivers, data sources, output
adapters and formatters, shared by all nodes in one database (SQLite, MySQL/MariaDB, PostgreSQL).

```python
from app.registry import Registry, StreamDefinition, Attribute
with Registry("sqlite:///var/cepheus.db") as registry:
    registry.migrate()                      # or check_schema() to refuse a wrong schema
    registry.put_stream(StreamDefinition("orderStream", "1.0.0", payload=(Attribute("orderNo", "STRING"),)))
    seen = registry.revision()
    ...
    for change in registry.changes_since(seen):   # what other nodes changed since
        ...
```

Modules: `streams`, `plans`, `connectors`, `users` (values and their checks), `schema` (tables),
`kinds` (value ↔ row), `store`/`operations` (one transaction), `crud`/`registry` (the facade),
`migrate` (Alembic under a lock), `errors`. Below `app/`, reach the registry only through
interfaces that `app/` hands over.
"""

from __future__ import annotations

from app.registry.connectors import (
    ADAPTER_TYPES,
    FORMATTER_TYPES,
    RECEIVER_TYPES,
    DataSource,
    Formatter,
    OutputAdapter,
    Receiver,
)
from app.registry.errors import InUseError, InvalidPlan, RegistryError, SchemaError, ValidationError
from app.registry.operations import Store
from app.registry.plans import DISTRIBUTED_MODES, HA_MODES, ExecutionPlan
from app.registry.registry import Registry
from app.registry.store import Change, Outcome
from app.registry.streams import ATTRIBUTE_TYPES, Attribute, StreamDefinition
from app.registry.users import User

__all__ = [
    "ADAPTER_TYPES",
    "ATTRIBUTE_TYPES",
    "DISTRIBUTED_MODES",
    "FORMATTER_TYPES",
    "HA_MODES",
    "RECEIVER_TYPES",
    "Attribute",
    "Change",
    "DataSource",
    "ExecutionPlan",
    "Formatter",
    "InUseError",
    "InvalidPlan",
    "OutputAdapter",
    "Outcome",
    "Receiver",
    "Registry",
    "RegistryError",
    "SchemaError",
    "Store",
    "StreamDefinition",
    "User",
    "ValidationError",
]

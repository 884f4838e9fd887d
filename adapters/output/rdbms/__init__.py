"""The RDBMS output adapter: rows into MySQL/MariaDB, PostgreSQL or SQLite tables (SQLAlchemy).

Modules: `settings` (config keys), `schema` (identifiers, column types), `statements`
(the SQL of each mode), `failures` (outage or bad rows?), `adapter` (the adapter).
Imports `engine.errors`, `formatters` and `adapters.output` only.
"""

from __future__ import annotations

from adapters.output.rdbms.adapter import RdbmsAdapter
from adapters.output.rdbms.schema import IDENTIFIER, is_identifier
from adapters.output.rdbms.settings import Mode, RdbmsSettings

__all__ = ["IDENTIFIER", "Mode", "RdbmsAdapter", "RdbmsSettings", "is_identifier"]

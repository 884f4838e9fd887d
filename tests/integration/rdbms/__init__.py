"""The RDBMS output adapter against SQLite, MariaDB and PostgreSQL."""

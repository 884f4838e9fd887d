"""`raise_open_files_limit`: make room for the connections the configuration allows.

A node's receivers may hold `thrift.max_connections + thrift.max_tls_connections +
http.max_connections` sockets, more than the usual soft limit of 1,024 open files, and a
process out of descriptors cannot even accept a connection to refuse it. So the soft limit
is raised towards the hard one at start-up; when the hard limit is too low, one warning names
the keys to lower.
"""

from __future__ import annotations

import logging
import resource

from app.config import Config

log = logging.getLogger("cepheus.node")

SPARE = 256  # databases, log files, TLS material, the registry, adapters' connections


def needed_open_files(cfg: Config) -> int:
    return cfg.thrift.max_connections + cfg.thrift.max_tls_connections + cfg.http.max_connections + SPARE


def raise_open_files_limit(cfg: Config) -> int:
    """Raise the soft limit of open files as far as needed (and allowed); return the new one."""
    needed = needed_open_files(cfg)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ceiling = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < ceiling:
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        soft = ceiling
    if soft != resource.RLIM_INFINITY and soft < needed:
        log.warning(
            "the process may open %d files but the receivers' limits allow %d connections: lower "
            "thrift.max_connections, thrift.max_tls_connections or http.max_connections, or raise the hard "
            "limit (ulimit -Hn)",
            soft,
            needed - SPARE,
        )
    return int(soft)

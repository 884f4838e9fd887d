"""`client_key`: the unit that per-client limits count, for an address a client connected from.

An IPv4 address is one client. An IPv6 client usually controls a whole /64 (one subnet
per site), so limits keyed by its exact address would be no limit at all: IPv6 addresses
count per /64. IPv4-mapped IPv6 addresses count as their IPv4 address. Imports nothing of ours.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache


@lru_cache(maxsize=4096)
def client_key(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)

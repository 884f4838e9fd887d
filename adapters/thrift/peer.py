"""`Peer`: the client at the other end of one connection, as the dispatcher sees it.

The server makes one per connection; the dispatcher marks it `trusted` once the client has
logged in on it or shown a valid session, and the server then lifts the small limits it
keeps on connections that have done neither. Imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Peer:
    address: str = ""  # the client's IP address ("" when unknown, e.g. in tests)
    trusted: bool = False

"""Which member should be a plan's notifier: the same answer on every node with the same view.

Rendezvous (highest random weight) hashing: each member scores each plan by a hash of the
pair, and the highest score wins. Plans spread evenly over members; when a member leaves,
only its plans move, each to the member that scored second; when one joins, it takes only
the plans it now scores highest on. An operator's move (`pinned`) wins over the hash while the
member it names is alive. Membership only proposes: the registry's lease decides, so two
members with different views at worst both try, and one gets the lease.

Pure logic. Imports nothing of ours.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping


@functools.lru_cache(maxsize=65536)  # asked every role round, for every plan and member
def score(plan: str, member: str) -> int:
    digest = hashlib.blake2b(f"{plan}\x00{member}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


def notifier(plan: str, alive: Iterable[str], pinned: Mapping[str, str] | None = None) -> str | None:
    """The member that should notify for `plan` among `alive` (None when there is none)."""
    members = sorted(set(alive))
    if not members:
        return None
    chosen = (pinned or {}).get(plan)
    if chosen in members:
        return chosen
    return max(members, key=lambda member: (score(plan, member), member))


def ranking(plan: str, alive: Iterable[str]) -> list[str]:
    """Every alive member, the preferred notifier first, then who takes over from it, and so on."""
    return sorted(set(alive), key=lambda member: (score(plan, member), member), reverse=True)

"""How a count reads in a message: `counted(1, "event")` is "1 event", `counted(2, "event")`
"2 events". Shared by the adapters and the app (which may import adapters). Imports nothing.
"""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun, singular for exactly one; `plural` for nouns not made with -s."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"

"""A value partition whose only query is the sequence `every e1=S[f1], e2=S[f2]` over the
partitioned stream (no `within`), run as one keyed operator: per key at most one open
match, the key's previous event if it passed f1; the next event of that key completes it
when it passes f2, and opens the next one when it passes f1 (strict contiguity: whatever
the next event is, the open match does not outlive it).

The rest (the key test left out of f2, filters inlined with a safe fallback, selection,
merging one chunk's matches, `@purge`) is keyed_followed_by.py's. The general path stays
the reference; tests compare them.
"""

from __future__ import annotations

from typing import Any

from engine.runtime.keyed_followed_by import LOOP_HEAD, KeyedFollowedBy

_LOOP = (
    LOOP_HEAD
    + """
        o = opens.get(k)
        if o is not None:{trim}{hoist}
            r1 = o[1]
            try:
                hit = {f2}
            except (TypeError, ZeroDivisionError):
                hit = f2 is None or f2([[o], [(t, r)], t], r)
            if hit:
                completed.append((o[0], r1, t, r))
                if not merge:
                    op.emit(completed)
                    completed = []
        try:
            opened = {f1}
        except (TypeError, ZeroDivisionError):
            opened = f1 is None or f1([[(t, r)], None, t], r)
        if opened:
            opens[k] = (t, r)
        elif o is not None:
            del opens[k]
    if completed:
        op.emit(completed)
"""
)


class KeyedSequence(KeyedFollowedBy):
    """`pairs` maps a key to its one open match (opening time, row); no `within`."""

    loop = _LOOP

    def snapshot(self) -> Any:
        return {
            "open": [[k, pair[0], list(pair[1])] for k, pair in self.pairs.items()],
            "used": [[k, t] for k, t in self.last_used.items()],
            "next_sweep": self.next_sweep,
        }

    def restore(self, state: Any) -> None:
        def key(k: Any) -> Any:
            return tuple(k) if isinstance(k, list) else k

        self.pairs = {key(k): (t, tuple(row)) for k, t, row in state["open"]}  # type: ignore[misc]
        self.last_used = {key(k): t for k, t in state["used"]}
        self.next_sweep = state["next_sweep"]

"""How a notifier answers a standby that subscribes: resume its log where it stands, or send
a snapshot of the plan's state.

A standby subscribes with where its own log stands: its log id, position, and the lease epoch
it followed last (its `term`). When that is a prefix of the notifier's log in the notifier's
current term, the notifier resumes from there; otherwise (a new node, a node that restarted
or was notifier itself, another term, a position the notifier's log no longer has, or a
standby whose plan was redeployed and asks for a state afresh) it sends a snapshot of the
plan's state and the log position it covers, and the standby adopts the notifier's log from
there.

Pure logic. Imports nothing of ours but `ha.messages`.
"""

from __future__ import annotations

from ha.messages import Subscribe


def resumes(request: Subscribe, log_id: str, term: int, first: int, last: int) -> bool:
    """Whether the standby asking `request` resumes in the notifier's log `log_id` of lease
    term `term`, which holds the positions `first` to `last`."""
    return (
        not request.fresh
        and request.log_id == log_id
        and request.term == term
        and first - 1 <= request.position <= last
    )

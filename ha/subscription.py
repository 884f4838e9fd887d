"""How a notifier answers a standby that subscribes (resume its log where it stands, or send
a snapshot of the plan's state), and what the subscription means on the standby's side
(`Subscription`).

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

from typing import Protocol

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


class SubscriberGate(Protocol):
    """What a subscription does to the standby's output gate (`ha.gate.OutputGate`)."""

    def reset(self, after: int, delivered: int = 0) -> None: ...

    def carried_in(self, covers: int) -> None: ...

    def trim(self, through: int) -> None: ...


class Subscription:
    """A standby's side of one subscription to the notifier, from its `Subscribe` to its end:
    what the notifier's messages mean for the standby's output gate and for its claim to be
    able to take over. The caller applies records and installs states in its log and holds
    the carried outputs in its gate; this keeps the rest, per subscription, for the node's
    follower (`app.cluster.replication.Follower`) and the simulator alike:
    - `Record`: applied only when it follows the log (`follows`);
    - `State`: the gate forgets what it held and vouches for nothing the state covers
      (`installed`) until every output the notifier carries after it has arrived, which `Live`
      says: a subscription cut in between leaves the gate unable to vouch, and the cover a
      state named is never applied by a later subscription (that one may resume after the
      state without the carried outputs);
    - `Live`: the gate vouches from the state's cover on (`went_live`);
    - `Delivered`: the gate trims what the notifier wrote;
    - `Record`, `Live` and `Delivered` are acknowledged while live (`acknowledges`);
    - `Dropped`: it ends, not caught up (`ended(dropped=True)`); a gap ends it the same way (the
      caller stops following and no longer counts itself caught up); any other end (the notifier
      died, stopped, or the network failed) leaves the standby caught up if it was live.
    """

    def __init__(self, gate: SubscriberGate) -> None:
        self.gate = gate
        self.live = False
        self._covers: int | None = None  # after a state: what its carried outputs cover, once all came

    @staticmethod
    def follows(position: int, held: int) -> bool:
        """Whether record `position` follows the standby's log at `held` (else: a gap)."""
        return position == held + 1

    def installed(self, position: int, delivered: int, covers: int) -> None:
        """The caller installed a `State` covering `position` (the notifier's outputs are known
        written up to `delivered`, and its gate holds every output after `covers`)."""
        self.gate.reset(position, delivered)
        self._covers = covers

    def went_live(self) -> None:
        if self._covers is not None:
            self.gate.carried_in(self._covers)
            self._covers = None
        self.live = True

    def delivered(self, through: int) -> None:
        self.gate.trim(through)

    @property
    def acknowledges(self) -> bool:
        """Whether to acknowledge what it holds now (a record applied, `Live`, `Delivered`)."""
        return self.live

    def ended(self, dropped: bool = False) -> bool:
        """The subscription ended (`dropped`: by the notifier, or by a gap); whether the standby
        still counts itself caught up (it was live: it holds every record acknowledged)."""
        caught_up = self.live and not dropped
        self.live = False
        return caught_up

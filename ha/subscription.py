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

Pure logic. Imports nothing of ours but `engine.events` and `ha.messages`.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from engine.events import Event
from ha.messages import Subscribe

KEEPALIVE_SECONDS = 0.5  # a live stream with nothing to send repeats the last `Delivered`
FOLLOW_SILENCE_SECONDS = 2.0  # a live standby that hears nothing this long counts the notifier gone
JOIN_SILENCE_SECONDS = 10.0  # so does a joining one that gets no byte this long (a state is taken)

OriginT = TypeVar("OriginT")  # an output's origin, as the gate keeps it
StateT = TypeVar("StateT")  # a state as the caller installs it


def resumes(request: Subscribe, log_id: str, term: int, first: int, last: int) -> bool:
    """Whether the standby asking `request` resumes in the notifier's log `log_id` of lease
    term `term`, which holds the positions `first` to `last`."""
    return (
        not request.fresh
        and request.log_id == log_id
        and request.term == term
        and first - 1 <= request.position <= last
    )


class SubscriberGate(Protocol[OriginT]):
    """What a subscription does to the standby's output gate (`ha.gate.OutputGate`)."""

    def install(
        self, after: int, delivered: int, covers: int, carried: list[tuple[int, str, list[Event], OriginT]]
    ) -> None: ...

    def trim(self, through: int) -> None: ...


Carried = tuple[
    int, str, list[Event], OriginT
]  # an output carried with a state: position, stream, events, origin


class Subscription(Generic[OriginT, StateT]):
    """A standby's side of one subscription to the notifier, from its `Subscribe` to its end:
    what the notifier's messages mean for the standby's output gate and for its claim to be
    able to take over. The caller applies records and installs states in its log; this keeps
    the rest, per subscription, for the node's follower (`app.cluster.replication.Follower`)
    and the simulator alike:
    - `Record`: applied only when it follows the log (`follows`);
    - `State` and the `CarriedOutput`s it announces: kept (`state`, `carried`) until the last
      of them has come; then the caller installs the state (`pending`) and the gate holds
      exactly the carried outputs (`installed`). A join cut short in between changes nothing:
      the standby keeps its log, state and held outputs, so a copy it had is never replaced by
      one lacking outputs of acknowledged records;
    - `Live`: the stream is live (`went_live`);
    - `Delivered`: the gate trims what the notifier wrote;
    - `Record`, `Live` and `Delivered` are acknowledged while live (`acknowledges`);
    - `Dropped`: it ends, not caught up (`ended(dropped=True)`); a gap ends it the same way (the
      caller stops following and no longer counts itself caught up); any other end (the notifier
      died, stopped, or the network failed) leaves the standby caught up if it was live.
    """

    def __init__(self, gate: SubscriberGate[OriginT]) -> None:
        self.gate = gate
        self.live = False
        self._state: tuple[int, int, int, StateT] | None = None  # a state whose carried outputs still come
        self._count = 0  # how many outputs the notifier carries with it
        self._carried: list[Carried[OriginT]] = []

    @staticmethod
    def follows(position: int, held: int) -> bool:
        """Whether record `position` follows the standby's log at `held` (else: a gap)."""
        return position == held + 1

    def state(self, position: int, delivered: int, covers: int, carried: int, state: StateT) -> None:
        """A state covering `position` arrived (the notifier's outputs are known written up to
        `delivered`, and its gate holds every output after `covers`): kept until the `carried`
        outputs the notifier sends with it have all come."""
        self._state = (position, delivered, covers, state)
        self._count = carried
        self._carried = []

    def carried(self, output: Carried[OriginT]) -> None:
        self._carried.append(output)

    @property
    def pending(self) -> StateT | None:
        """A state whose carried outputs have all come: the caller installs it now and calls
        `installed`."""
        if self._state is None or len(self._carried) < self._count:
            return None
        return self._state[3]

    def installed(self) -> None:
        """The caller installed the pending state: the gate holds its carried outputs and
        vouches for what they cover."""
        assert self._state is not None and len(self._carried) >= self._count, "no state is pending"
        position, delivered, covers, _ = self._state
        self.gate.install(position, delivered, covers, self._carried)
        self._state, self._carried = None, []

    def went_live(self) -> None:
        self.live = True

    def delivered(self, through: int) -> None:
        self.gate.trim(through)

    @property
    def acknowledges(self) -> bool:
        """Whether to acknowledge what it holds now (a record applied, `Live`, `Delivered`)."""
        return self.live

    def ended(self, dropped: bool = False) -> bool:
        """The subscription ended (`dropped`: by the notifier, or by a gap); whether the standby
        still counts itself caught up (it was live: it holds every record acknowledged). A state
        still pending is dropped with it."""
        caught_up = self.live and not dropped
        self.live = False
        self._state, self._carried = None, []
        return caught_up

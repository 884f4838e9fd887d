"""Bundles a member gets twice: `Resends` after a takeover, `DirectCopies` in full-active-active.

(A bundle relayed again by a member whose answer was lost: `ha.relays.RelayedBundles`.)

`Resends`: bundles a client sends again because a takeover (or a lost connection) cut off their
acknowledgement.

A notifier that dies after its standbys hold a bundle but before the client got its
acknowledgement leaves the client no choice but to send the bundle again (to the next
receiver of `tcp://a|tcp://b`, or through a standby that relayed it). The new notifier already
has that bundle, sequenced in the old notifier's term. So a journal remembers the digests of
its last `keep` bundles; for `window_ms` after it takes over, a bundle identical to one of
them (same stream, same event timestamps, same values: a client's resend) takes that record
instead of being processed again, until a resend it took is answered: each remembered record
answers one resend. Likewise a bundle a standby relays
that is identical to one this notifier sequenced itself in the last `window_ms`: the client
sent it here, lost the acknowledgement, and sent it again through the other member; and a
bundle sent here that is identical to one a standby relayed in the last `window_ms`: the
standby gave up waiting for this notifier's answer (its relay's deadline) and refused its
client, which sent it again here, though this notifier took it late. And, at any time, a
bundle identical to one this member sequenced whose client was never told it was taken (its
settling was refused: the lease could not be confirmed, say; or its answer is still on its
way), for a minute: the record is in this member's log, and a takeover or the notifier itself delivers its
outputs, so the resend takes that record (`unanswered`), never a new one. A client that does
not name itself sends one bundle at a time and only resends what it was not told was taken, so
an identical bundle then is a resend. Outside those cases, or for a bundle never sequenced
before, nothing is filtered. Clients that stamp events (WSO2's do) make
two distinct bundles identical only if they repeat the same values at the same millisecond.

A bundle is known by its content digest, an int: the same for the same bundle on every member
(the node takes it from the logged payload, `app.persistence.records.content_digest`).
Pure logic: time comes in as arguments.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

Copy = tuple[str, list[tuple[Any, ...]], list[int], tuple[Any, ...]]  # stream, rows, timestamps, senders
SETTLED, WAITING, GONE = "settled", "waiting", "gone"  # what became of a direct copy (`DirectCopies`)


class Resends:
    """A redundant plan's memory of the bundles in its log that a client may send again, by
    content digest and position. `resent` and `unanswered` give the position of the record a
    resend takes: the caller settles that record and acknowledges the resend with it. A record
    stops counting once its client is told it was taken (`answered`), not when a resend is
    first seen, so a resend whose own settling is refused is still taken by the record when it
    comes yet again."""

    def __init__(self, keep: int = 4096, window_ms: int = 10_000, unanswered_ms: int = 60_000) -> None:
        self._recent: deque[tuple[int, int]] = deque(maxlen=keep)  # (bundle, position) in the log
        self._window_ms = window_ms
        self._keep = keep
        self._until = 0
        self._sequenced: deque[tuple[int, int, bool]] = deque()  # (at ms, bundle, relayed) sequenced lately
        self._sequenced_count: Counter[int] = Counter()
        self._relayed_count: Counter[int] = Counter()  # those of them a standby relayed
        # records whose client may not have been told they were taken, position → bundles,
        # oldest first: those this member sequenced (at most `keep`, for `unanswered_ms`: a
        # client that gave up must not have a later identical bundle swallowed for good), and
        # those it held when it took over (until the window ends); and bundle → their positions
        self._unanswered_ms = unanswered_ms
        self._sequenced_at: dict[int, int] = {}  # position → when this member sequenced it (ms)
        self._unanswered: dict[int, list[int]] = {}
        self._before: dict[int, list[int]] = {}
        self._at: dict[int, list[int]] = {}
        self._before_at: dict[int, list[int]] = {}

    def seen(self, bundle: int, at_ms: int | None = None, relayed: bool = False, position: int = 0) -> None:
        """A bundle is in the log at `position`: sequenced by this node at `at_ms` (its plan
        clock; `relayed`: a standby relayed it), or applied or replayed (None)."""
        self._recent.append((bundle, position))
        if at_ms is None:
            return
        if position:
            _remember(self._unanswered, self._at, position, bundle)
            self._sequenced_at[position] = at_ms
            self._expire_unanswered(at_ms)
        self._sequenced.append((at_ms, bundle, relayed))
        self._sequenced_count[bundle] += 1
        if relayed:
            self._relayed_count[bundle] += 1
        self._expire(at_ms)

    def relayed_again(self, bundle: int, now_ms: int) -> bool:
        """Whether a bundle a member relays here at `now_ms` is one this node sequenced within the
        window: a client's resend through that member of a bundle whose acknowledgement it never
        got from here (the connection cut by a stop, a reset or a timeout)."""
        self._expire(now_ms)
        return self._sequenced_count[bundle] > 0

    def sent_after_its_relay(self, bundle: int, now_ms: int) -> bool:
        """Whether a bundle a client sent here at `now_ms` is one a standby relayed here within
        the window: the standby refused its client at its relay's deadline, and the client sent
        it again here, though this node had taken it."""
        self._expire(now_ms)
        return self._relayed_count[bundle] > 0

    def unanswered(self, bundle: int, now_ms: int) -> int | None:
        """The position of a record of `bundle` this member sequenced in the last `unanswered_ms`
        whose client was never told it was taken (None: none): a resend of it takes that record."""
        self._expire_unanswered(now_ms)
        positions = self._at.get(bundle)
        return positions[0] if positions else None

    def _expire_unanswered(self, now_ms: int) -> None:
        unanswered = self._unanswered
        while unanswered:
            oldest = next(iter(unanswered))
            if (
                len(unanswered) <= self._keep
                and self._sequenced_at.get(oldest, 0) >= now_ms - self._unanswered_ms
            ):
                return
            for gone in list(unanswered[oldest]):
                _forget(unanswered, self._at, oldest, gone)
            self._sequenced_at.pop(oldest, None)

    def resent(self, bundle: int, now_ms: int) -> int | None:
        """The position of a record of `bundle` this node held when it took over, within the
        window after it and not yet answered here (None: none): a resend of it takes that record."""
        if now_ms >= self._until:
            if self._before:
                self._before.clear()
                self._before_at.clear()
            return None
        positions = self._before_at.get(bundle)
        return positions[0] if positions else None

    def answered(self, position: int, bundle: int) -> None:
        """The client of `bundle`, taken by the record at `position` (its own, or one a resend
        took), was told it was taken."""
        _forget(self._unanswered, self._at, position, bundle)
        if position not in self._unanswered:
            self._sequenced_at.pop(position, None)
        _forget(self._before, self._before_at, position, bundle)

    def _expire(self, now_ms: int) -> None:
        while self._sequenced and (
            self._sequenced[0][0] < now_ms - self._window_ms or len(self._sequenced) > self._keep
        ):
            _, gone, relayed = self._sequenced.popleft()
            self._sequenced_count[gone] -= 1
            if self._sequenced_count[gone] <= 0:
                del self._sequenced_count[gone]
            if relayed:
                self._relayed_count[gone] -= 1
                if self._relayed_count[gone] <= 0:
                    del self._relayed_count[gone]

    def recent(self) -> list[int]:
        """The digests of the last `keep` records, oldest first (a joining standby's `recent`)."""
        return [bundle for bundle, _ in self._recent]

    def recent_at(self) -> list[tuple[int, int]]:
        """The last `keep` records as (digest, position), oldest first (a snapshot keeps them)."""
        return list(self._recent)

    def replace(self, recent: Sequence[int] | Sequence[tuple[int, int]], position: int = 0) -> None:
        """This member's log is another now (it joined the notifier's from a state covering
        `position`, or restored a snapshot): `recent`, digests at or before `position`, or
        (digest, position) pairs. What it sequenced itself before is no longer in its log (a
        client's resend of one must be processed)."""
        self._recent.clear()
        for item in recent:
            self._recent.append(item if isinstance(item, tuple) else (item, position))
        for memory in (self._unanswered, self._before, self._at, self._before_at):
            memory.clear()
        self._sequenced_at.clear()
        self._sequenced.clear()
        self._sequenced_count.clear()
        self._relayed_count.clear()

    def took_over(self, now_ms: int) -> None:
        """This node sequences from now on: what its log holds may come again for a while."""
        self._before.clear()
        self._before_at.clear()
        for bundle, position in self._recent:
            if position:  # (0: where is not known)
                _remember(self._before, self._before_at, position, bundle)
        self._until = now_ms + self._window_ms


def _remember(
    by_position: dict[int, list[int]], by_bundle: dict[int, list[int]], position: int, bundle: int
) -> None:
    by_position.setdefault(position, []).append(bundle)
    by_bundle.setdefault(bundle, []).append(position)


def _forget(
    by_position: dict[int, list[int]], by_bundle: dict[int, list[int]], position: int, bundle: int
) -> None:
    bundles = by_position.get(position)
    if not bundles or bundle not in bundles:
        return
    bundles.remove(bundle)
    if not bundles:
        del by_position[position]
    positions = by_bundle[bundle]
    positions.remove(position)
    if not positions:
        del by_bundle[bundle]


class DirectCopies:
    """A full-active-active standby's own copies of the bundles clients send to every member.

    Clients send each bundle to every member, so a standby gets its own copy of what the
    notifier sequences. It holds the copy (instead of relaying it) until the notifier's record
    of the same bundle arrives; a copy that arrives after that record is not held. When the
    standby takes over, the copies the old notifier never sequenced are its to process, in the
    order they arrived: nothing a client sent is lost or processed twice.

    A copy is acknowledged to its client only once it is as safe as a record the notifier
    acknowledges, never while it rests in this memory alone (the notifier may never sequence
    it: it refused the bundle, say, because an output it feeds is full): `arrived` gives a
    ticket, and `outcome(ticket)` says when. The copy is settled once the position its bundle
    was sequenced at is settled (`settle(through)`: a notifier acknowledges a record only when
    every standby that may take over holds it and every record before it, and tells its
    standbys through `Settled`). When this member takes over it sequences the copies never
    sequenced (`take`) and they, like the copies whose record it applied but whose settling it
    had not heard of, wait for its own settling (`wait_at`). A copy known only from a
    notifier's state (no position) is gone: its client is refused and sends it again. The
    member waits a while, then `withdraw`s a copy still waiting and refuses its client. At
    most `keep` copies are held: past it the oldest are dropped (counted), their clients
    refused in the same way. `keep` sequenced bundles are remembered for late copies.
    """

    def __init__(self, keep: int = 100_000) -> None:
        self._keep = keep
        self._tickets = itertools.count(1)
        self._held: dict[int, deque[tuple[int, Copy]]] = {}  # digest → (ticket, copy), oldest first
        self._order: deque[tuple[int, int]] = deque()  # (ticket, digest) in arrival order
        self._at: dict[int, list[tuple[int, int]]] = {}  # position → (ticket, digest) of its record
        self._waiting: set[int] = set()  # tickets held or waiting at a position
        self._settled: set[int] = set()  # tickets settled and not yet collected by their waiters
        self._through = 0  # every position up to it is settled (in this member's log)
        self._early: dict[int, deque[int]] = {}  # digest → positions of records that came before their copy
        self._early_order: deque[int] = deque()  # digests of those, oldest first (the bound)
        self.dropped = 0

    def arrived(
        self,
        bundle: int,
        stream: str,
        rows: list[tuple[Any, ...]],
        timestamps: list[int],
        senders: tuple[Any, ...] = (),
    ) -> int:
        """Hold a copy of content digest `bundle`; its ticket (ask `outcome` before the client is
        acknowledged). `senders`: who sent its events (`adapters.senders`), kept with it."""
        ticket = next(self._tickets)
        early = self._early.get(bundle)
        if early:
            position = early.popleft()
            if not early:
                del self._early[bundle]
            self._wait_at(position, ticket, bundle)
            return ticket
        self._held.setdefault(bundle, deque()).append((ticket, (stream, rows, timestamps, senders)))
        self._order.append((ticket, bundle))
        self._waiting.add(ticket)
        while len(self._order) > self._keep:
            gone, gone_bundle = self._order.popleft()
            self._forget(gone_bundle, gone)
            self.dropped += 1
        return ticket

    def sequenced(self, bundle: int, position: int = 0) -> None:
        """The notifier's record of `bundle` is in this member's log at `position`, or (a recent
        bundle of a state the notifier sent) at or before it; 0: not known where (its settling is
        never heard of)."""
        copies = self._held.get(bundle)
        if copies:
            ticket, _ = copies[0]
            self._forget(bundle, ticket)
            self._order.remove((ticket, bundle))
            self._wait_at(position, ticket, bundle)
        else:
            self._came_early(bundle, position)

    def settle(self, through: int) -> None:
        """Every record up to `through` is acknowledged (`Settled`, or this member's own settling
        as the notifier)."""
        self._through = max(self._through, through)
        for position in [p for p in self._at if p <= through]:
            for ticket, _ in self._at.pop(position):
                self._waiting.discard(ticket)
                self._settled.add(ticket)

    def wait_at(self, position: int, ticket: int) -> None:
        """The copy of `ticket` was sequenced at `position` (by this member, after `take`)."""
        self._wait_at(position, ticket, 0)

    def renumbered(self) -> None:
        """This member adopted a notifier's state, another log: the positions copies waited at,
        and those of records that came before their copies, mean nothing now (the waiting
        copies' clients are refused); the state's recent bundles say again where to wait."""
        for waiting in self._at.values():
            self._waiting.difference_update(ticket for ticket, _ in waiting)
        self._at.clear()
        self._through = 0
        self._early.clear()
        self._early_order.clear()

    def take(self) -> list[tuple[int, Copy]]:
        """The copies never sequenced, oldest first, with their tickets, for this member to
        sequence now (then `wait_at` their positions); they are no longer held."""
        taken = []
        for ticket, bundle in self._order:
            copies = self._held.get(bundle)
            if copies:
                taken.append((ticket, copies.popleft()[1]))
            self._waiting.discard(ticket)
        self._held.clear()
        self._order.clear()
        self._early.clear()  # a leader's late copies are the resend filter's (`Resends`)
        self._early_order.clear()
        return taken

    def outcome(self, ticket: int) -> str:
        """`SETTLED` (acknowledge its client; said once, then forgotten), `WAITING`, or `GONE`
        (refuse its client: dropped past the bound, or its settling will never be heard of)."""
        if ticket in self._settled:
            self._settled.discard(ticket)
            return SETTLED
        return WAITING if ticket in self._waiting else GONE

    def withdraw(self, ticket: int) -> bool:
        """Its client is refused: stop holding the copy of `ticket`. True when it was settled
        after all (acknowledge it instead)."""
        if ticket in self._settled:
            self._settled.discard(ticket)
            return True
        if ticket not in self._waiting:
            return False
        self._waiting.discard(ticket)
        for i, (held, bundle) in enumerate(self._order):
            if held == ticket:
                del self._order[i]
                self._forget(bundle, ticket)
                return False
        for position, waiting in self._at.items():
            entry = next((e for e in waiting if e[0] == ticket), None)
            if entry is not None:
                waiting.remove(entry)
                if not waiting:
                    del self._at[position]
                if entry[1]:  # its record is here: the client's next copy waits for it too, not held anew
                    self._came_early(entry[1], position)
                break
        return False

    @property
    def held(self) -> int:
        return len(self._order)

    @property
    def waiting(self) -> bool:
        """Whether some copy waits for its record to be settled (its client not yet answered)."""
        return bool(self._waiting)

    def _wait_at(self, position: int, ticket: int, bundle: int) -> None:
        self._waiting.discard(ticket)
        if position and position <= self._through:  # its copy came after the news
            self._settled.add(ticket)
        elif position:
            self._at.setdefault(position, []).append((ticket, bundle))
            self._waiting.add(ticket)

    def _came_early(self, bundle: int, position: int) -> None:
        """The record of `bundle` is here at `position` before (another) copy of it: that copy
        waits for the record's settling instead of being held."""
        self._early.setdefault(bundle, deque()).append(position)
        self._early_order.append(bundle)
        while len(self._early_order) > self._keep:
            gone = self._early_order.popleft()
            positions = self._early.get(gone)
            if positions:
                positions.popleft()
                if not positions:
                    del self._early[gone]

    def _forget(self, bundle: int, ticket: int) -> None:
        self._waiting.discard(ticket)
        copies = self._held.get(bundle)
        if copies:
            for i, (held, _) in enumerate(copies):
                if held == ticket:
                    del copies[i]
                    break
            if not copies:
                del self._held[bundle]

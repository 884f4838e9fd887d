"""One seeded schedule: members, clients, faults, and the invariants checked as it runs.

A seed picks everything: 2 or 3 members, the mode (failover, active-active,
full-active-active), the fsync policy, the clients and their bundles, and a handful of faults
(kill -9 and restart with the log intact, with its unsynced tail lost, or with no log; a host
that vanishes; a pause past the lease; a live member closing its heartbeat connections; a
partition one way or both; the registry down, or its clock stepping; the sink down). Then
the faults stop, every member runs again, and the schedule goes on quietly until every
client's bundles are acknowledged.

Invariants (each a line in `violations`, with the time it was seen):
- the sink's fence never accepts two members' writes under one epoch, and an origin is never
  written (or skipped as written) with two contents;
- every bundle a client saw acknowledged is held (in its log) by every member that could take
  over now: the notifier, and every caught-up member whose log covers the lease's requirement;
- a position a bundle was acknowledged at is never appended again with another bundle in that log;
- a lease is taken over early only from a member whose process is gone;
- in the end: every acknowledged bundle's outputs are in the transactional sink exactly once
  and in the plain sink at least once (a duplicate there only under the same key), and every
  client got every bundle acknowledged (liveness, once the faults are over).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ha.lease_table import covers
from ha.ports import LogPosition
from tests.sim.member import PLAN, Bundle, Disk, Member
from tests.sim.outside import PlainSink, Registry, TransactionalSink
from tests.sim.world import Net, World
from tests.support.journals import digest

MODES = ("failover", "active-active", "full-active-active")
FAULTS = ("kill", "vanish", "pause", "heartbeats", "partition", "registry", "clock", "sink")
SLOW = (0.05, 0.35)  # seconds a slowed direction adds to each message (the "slow" fault, drawn apart)
SETTLE = 3.5  # seconds after the last fault before the end is judged (a lease, and then some)
CLIENT_TIMEOUT = 2.0


@dataclass
class Config:
    members: int = 2
    mode: str = "failover"
    fsync: str = "always"
    clients: int = 1
    bundles: int = 12
    # (at, kind, lasting, detail, whom): whom is "notifier", "standby" or "" (the notifier most
    # of the time, else any member running)
    faults: list[tuple[float, str, float, str, str]] = field(default_factory=list)
    pace: tuple[float, float] = (0.02, 0.3)  # seconds between a client's bundles, drawn per client
    client_bundles: tuple[int, ...] = ()  # bundles per client, where not `bundles` each
    client_pace: tuple[float, ...] = ()  # seconds between bundles per client, where not drawn from `pace`
    named: tuple[bool, ...] = ()  # per client: it names itself and numbers its bundles (not: a foreign one)
    answer_loss: float = 0.0  # the share of the registry's answers lost after the request took effect
    latency: tuple[float, float] = (0.0005, 0.005)  # seconds a message between members takes
    registry_latency: tuple[float, float] = (0.001, 0.01)  # each way
    client_latency: tuple[float, float] = (0.0005, 0.003)  # each way
    resend_keep: int = 4096
    copy_keep: int = 100_000
    gate_capacity: int = 1_000_000
    adapter_capacity: int = 100_000

    @classmethod
    def draw(cls, seed: int) -> Config:
        import random

        rng = random.Random(seed * 7919 + 1)
        config = cls(
            members=rng.choice((2, 2, 3)),
            mode=rng.choice(MODES),
            fsync=rng.choice(("always", "always", "never")),
            clients=rng.choice((1, 1, 2)),
            bundles=rng.randint(4, 16),
            # small buffers and memories some of the time, so that the limits are met in a short run
            resend_keep=rng.choice((4096, 4096, 6)),
            adapter_capacity=rng.choice((100_000, 100_000, 30)),
            gate_capacity=rng.choice((1_000_000, 1_000_000, 40)),
            # now and then members far apart, or a registry slow to answer
            latency=rng.choice(((0.0005, 0.005),) * 4 + ((0.005, 0.04),)),
            registry_latency=rng.choice(((0.001, 0.01),) * 4 + ((0.02, 0.15),)),
        )
        for _ in range(rng.randint(0, 3)):
            kind = rng.choice(FAULTS)
            detail = ""
            if kind == "kill":  # the kernel keeps what the process wrote: the log survives unless wiped
                detail = rng.choice(("intact", "intact", "empty"))
            if kind == "vanish":  # a power cut: what was not fsynced is gone
                detail = rng.choice(("intact", "empty"))
            if kind == "partition":
                detail = rng.choice(("one-way", "both"))
            if kind == "clock":
                detail = str(rng.choice((-3.0, -1.0, 0.5, 2.5)))
            config.faults.append((rng.uniform(1.2, 3.5), kind, rng.uniform(0.3, 3.5), detail, ""))
        config.named = tuple(rng.random() < 0.5 for _ in range(config.clients))  # drawn last: the rest stays
        config.answer_loss = rng.choice((0.0, 0.0, 0.0, 0.1))
        if rng.random() < 0.25:  # drawn after the rest, which stays as it was drawn before
            direction = rng.choice(("one-way", "both"))
            config.faults.append((rng.uniform(1.2, 3.5), "slow", rng.uniform(0.3, 3.5), direction, ""))
        return config


class Sim:
    def __init__(self, seed: int, config: Config | None = None, trace: bool = False) -> None:
        self.seed = seed
        self.config = config = config or Config.draw(seed)
        self.world = World(seed, trace)
        self.net = Net(self.world, config.latency)
        self.registry = Registry(self.world, config.registry_latency, config.answer_loss)
        self.tx_sink = TransactionalSink()
        self.plain_sink = PlainSink()
        self.fsync = config.fsync
        self.resend_keep = config.resend_keep
        self.copy_keep = config.copy_keep
        self.gate_capacity = config.gate_capacity
        self.adapter_capacity = config.adapter_capacity
        self.names = [f"m{i}" for i in range(config.members)]
        self.disks = {name: Disk(f"{name}-log1", logs=1) for name in self.names}
        self.members: dict[str, Member] = {}
        self.everyone: list[Member] = []  # every incarnation of every member
        self.incarnations = Counter[str]()
        for name in self.names:
            self._start(name)
        self.bundles: dict[int, Bundle] = {}
        self.acked: dict[int, float] = {}
        self.refused: set[int] = set()  # bundles a notifier sequenced, then refused to acknowledge
        # bundles a client sent again while an earlier attempt was still on its way (its timeout)
        self.overlapped: set[int] = set()
        # foreign bundles processed more than once outside what their clients are promised
        self.outside_contract: set[int] = set()
        self.appended: set[int] = set()  # bundles some member appended
        # foreign bundles appended again when the resend memory was full and no longer had them
        self.beyond_memory: set[int] = set()
        self.copies_acked: set[int] = set()
        # acknowledged bundles no disk holds any more (fsync off and power cuts, or wiped disks,
        # on every member): accepting that loss is an operator's call, so the end is not judged
        self.destroyed: set[int] = set()
        self.requirement_destroyed = False  # acknowledged by a full-active-active standby holding its copy
        self.acked_at: dict[tuple[str, int], tuple[int, int]] = {}  # (log, position) → (bundle, term)
        self.violations: list[str] = []
        self.faults_seen = Counter[str]()
        self.checks = 0
        self.clients_done = 0
        self.last_fault_end = 0.0
        next_id = 1
        self.pace = [
            config.client_pace[c] if c < len(config.client_pace) else self.world.rng.uniform(*config.pace)
            for c in range(config.clients)
        ]
        for c in range(config.clients):
            bundles = []
            count = config.client_bundles[c] if c < len(config.client_bundles) else config.bundles
            sender = f"client-{c}" if c < len(config.named) and config.named[c] else None
            for k in range(count):
                events = self.world.rng.randint(1, 3)
                b = Bundle(next_id, events, digest("S", [0], [(next_id, events)]), sender, k)
                self.bundles[next_id] = b
                bundles.append(b)
                next_id += 1
            self.world.at(1.0 + 0.1 * c, self._client_send, c, bundles, 0, 0, 0)
        for at, kind, lasting, detail, whom in config.faults:
            self.world.at(at, self._fault, kind, lasting, detail, whom)
            self.last_fault_end = max(self.last_fault_end, at + lasting)
        self.world.at(0.1, self._sweep)

    # ---- members -------------------------------------------------------------------------------

    def _start(self, name: str) -> None:
        self.incarnations[name] += 1
        member = Member(self, name, self.disks[name], self.config.mode, self.incarnations[name])
        self.members[name] = member
        self.everyone.append(member)

    def _restart(self, name: str, disk_state: str) -> None:
        disk = self.disks[name]
        if disk_state == "empty":
            disk.logs += 1
            self.disks[name] = Disk(f"{name}-log{disk.logs}", logs=disk.logs)
        elif disk_state == "power cut":
            self._power_cut(name, disk)
        self.world.trace(
            f"{name} restarts ({disk_state}, log {self.disks[name].log_id} at {self.disks[name].position})"
        )
        on_disk = {b.id for disk in self.disks.values() for b in disk.entries if b is not None}
        self.destroyed |= {b for b in self.acked if b not in on_disk}
        lease = self.registry.table.current(PLAN, self.registry.now_ms())
        if lease is not None and lease.required is not None:
            if not any(covers(LogPosition(d.term, d.position), lease.required) for d in self.disks.values()):
                self.requirement_destroyed = True  # no disk holds what the lease requires: an operator's call
        self._start(name)

    def _power_cut(self, name: str, disk: Disk) -> None:
        """What was not fsynced is gone; a log that may have lost records whole (fsync not
        "always") goes on under a new id and no term, as `app.persistence.input_log` does."""
        del disk.entries[disk.durable :]
        if self.fsync != "always":
            disk.logs += 1
            self.disks[name] = Disk(f"{name}-log{disk.logs}", 0, disk.entries, disk.durable, disk.logs)

    def note_notifier(self, member: Member, epoch: int) -> None:
        """`member` took over under `epoch`: early (the old lease not expired) only from a dead process."""
        self.world.trace(f"{member.name} takes over at epoch {epoch}")

    def note_take_over(self, member: Member, dead: str) -> None:
        old = self.members[dead]
        if old.up and old.leading:
            self._violation(
                f"{member.name} took the lease over from {dead}, whose process is alive and notifying"
            )

    def note_ungranted(self, member: Member) -> None:
        self._violation(
            f"{member.name} notifies under a lease the store did not grant it (an expired answer)"
        )

    def note_append(self, member: Member, position: int, bundle: Bundle | None) -> None:
        if bundle is not None:
            self.appended.add(bundle.id)
        acked = self.acked_at.get((member.disk.log_id, position))
        # a stale notifier (paused, then woken) may append in its own older term: harmless, it can
        # release nothing; the same term or a later one must not replace what was acknowledged
        if acked is not None and (bundle is None or bundle.id != acked[0]) and member.disk.term >= acked[1]:
            self._violation(
                f"{member.name} appended {bundle.id if bundle else 'a tick'} at position {position} of log "
                f"{member.disk.log_id} in term {member.disk.term}, where bundle {acked[0]} was acknowledged "
                f"in term {acked[1]}"
            )

    def _outside_the_contract(self, bundle_id: int) -> bool:
        """Whether a foreign client's bundle processed more than once is outside what such a
        client is promised (docs/high-availability.md, "Clients that do not name themselves"):
        it has no identity, so its resend is told by content only while the record it repeats
        is within the resend memory, and only when the client sent it again after an answer
        (a refusal, or a failed connection), not while an earlier attempt was still in a member
        (its own timeout fired first). A client that names itself is promised exactly once,
        always."""
        bundle = self.bundles[bundle_id]
        return bundle.sender is None and (bundle_id in self.overlapped or bundle_id in self.beyond_memory)

    def note_acked(self, member: Member, position: int, bundle: Bundle) -> None:
        self.acked_at.setdefault((member.disk.log_id, position), (bundle.id, member.disk.term))

    # ---- clients -------------------------------------------------------------------------------

    def _client_send(self, c: int, bundles: list[Bundle], k: int, attempt: int, target: int) -> None:
        if k >= len(bundles):
            self.clients_done += 1
            return
        bundle = bundles[k]
        mode = self.config.mode
        names = self.names
        targets = (
            list(names)
            if mode == "full-active-active"
            else [names[(target + c * (mode == "active-active")) % len(names)]]
        )
        state = {"answers": 0, "ok": False, "done": False}

        def answered(ok: bool, why: str) -> None:
            if state["done"]:
                return
            state["answers"] += 1
            if ok and not state["ok"]:
                state["ok"] = True
                self._acknowledged(bundle)
            if state["answers"] >= len(targets) or ok and mode != "full-active-active":
                state["done"] = True
                if state["ok"]:
                    self.world.after(self.pace[c], self._client_send, c, bundles, k + 1, 0, target)
                else:
                    self.world.after(0.05, self._client_send, c, bundles, k, attempt + 1, target + 1)

        def timeout() -> None:
            if not state["done"]:
                state["done"] = True
                if state["answers"] < len(targets):
                    self.overlapped.add(bundle.id)
                if state["ok"]:
                    self.world.after(self.pace[c], self._client_send, c, bundles, k + 1, 0, target)
                else:
                    self.world.after(0.0, self._client_send, c, bundles, k, attempt + 1, target + 1)

        for name in targets:
            member = self.members[name]
            if not member.up:
                self.world.after(0.001, answered, False, "connection refused")
                continue

            def reply(ok: bool, why: str, member: Member = member) -> None:
                self.world.after(self.world.rng.uniform(*self.config.client_latency), answered, ok, why)

            self.world.after(
                self.world.rng.uniform(*self.config.client_latency), member.receive, bundle, reply
            )
        self.world.after(CLIENT_TIMEOUT, timeout)

    def _acknowledged(self, bundle: Bundle) -> None:
        if bundle.id in self.acked:
            return
        self.acked[bundle.id] = self.world.now
        self.world.trace(f"client saw bundle {bundle.id} acknowledged")
        self._check_held(bundle.id)

    # ---- faults --------------------------------------------------------------------------------

    def _fault(self, kind: str, lasting: float, detail: str, whom: str) -> None:
        rng = self.world.rng
        up = [n for n in self.names if self.members[n].up]
        if not up:
            return
        notifier = self._notifier()
        if whom == "notifier" and notifier is not None:
            name = notifier
        elif whom == "standby" and [n for n in up if n != notifier]:
            name = rng.choice([n for n in up if n != notifier])
        else:
            name = notifier or rng.choice(up)
            if rng.random() < 0.3:
                name = rng.choice(up)
        self.faults_seen[kind] += 1
        self.world.trace(f"fault: {kind} {name} for {lasting:.2f} s {detail}")
        if kind in ("kill", "vanish"):
            self.members[name].die(orderly=kind == "kill")
            self.world.after(
                lasting,
                self._restart,
                name,
                "power cut" if detail == "intact" and kind == "vanish" else detail,
            )
        elif kind == "pause":
            member = self.members[name]
            member.paused_until = self.world.now + lasting
            self.world.after(lasting, member.resume)
        elif kind == "heartbeats":
            self.members[name].drop_heartbeats()
        elif kind == "partition":
            cut = self._directions(name, detail)
            self.net.blocked |= cut
            self.world.after(lasting, self._heal, cut)
        elif kind == "slow":  # as `tc netem delay 50ms 300ms`: what crosses it lands late, out of step
            slowed = self._directions(name, detail)
            for direction in slowed:
                self.net.slow[direction] = SLOW
            self.world.after(lasting, self._quicken, slowed)
        elif kind == "registry":
            self.registry.down_until = self.world.now + lasting
        elif kind == "clock":
            self.registry.skew += float(detail)
        elif kind == "sink":
            self.tx_sink.down_until = self.world.now + lasting

    def _directions(self, name: str, detail: str) -> set[tuple[str, str]]:
        """From `name` to another member drawn at random, and back unless `detail` is one-way."""
        other = self.world.rng.choice([n for n in self.names if n != name])
        return {(name, other)} if detail == "one-way" else {(name, other), (other, name)}

    def _heal(self, cut: set[tuple[str, str]]) -> None:
        self.net.blocked -= cut

    def _quicken(self, slowed: set[tuple[str, str]]) -> None:
        for direction in slowed:
            self.net.slow.pop(direction, None)

    def _notifier(self) -> str | None:
        for name, member in self.members.items():
            if member.up and member.leading:
                return name
        return None

    # ---- invariants ----------------------------------------------------------------------------

    def _violation(self, text: str) -> None:
        line = f"{self.world.now:.3f}: {text}"
        self.violations.append(line)
        self.world.trace(f"VIOLATION {text}")

    def _may_take_over(self) -> list[Member]:
        """The members a takeover could make notifier now: the lease's holder, and every other
        running member that is caught up and whose log the store would accept."""
        lease = self.registry.table.current(PLAN, self.registry.now_ms())
        required = lease.required if lease is not None else None
        holder = lease.holder if lease is not None and lease.ttl_ms > 0 else None
        now = self.world.now
        return [
            m
            for m in self.members.values()
            if m.up
            and (
                (m.name == holder and m.role.holder.holds(now))  # granted to this process, not a predecessor
                or (not m.leading and m.caught_up and covers(m.held(), required))
            )
        ]

    def _check_held(self, bundle_id: int) -> None:
        self.checks += 1
        if bundle_id in self.destroyed:
            return
        for member in self._may_take_over():
            if not any(b is not None and b.id == bundle_id for b in member.disk.entries):
                how = " (as a standby's direct copy)" if bundle_id in self.copies_acked else ""
                self._violation(
                    f"bundle {bundle_id} was acknowledged{how}, and {member.name} could take over without it"
                )

    def _sweep(self) -> None:
        """Every 250 ms: every acknowledged bundle held where a takeover could happen."""
        self.checks += 1
        if self.acked:
            for member in self._may_take_over():
                held = {b.id for b in member.disk.entries if b is not None}
                missing = [b for b in self.acked if b not in held and b not in self.destroyed]
                if missing:
                    copies = (
                        " (acknowledged as a standby's direct copy)"
                        if set(missing) <= self.copies_acked
                        else ""
                    )
                    self._violation(
                        f"{member.name} could take over without acknowledged bundles {sorted(missing)[:5]}{copies}"
                    )
        for text in self.tx_sink.violations:
            self._violation(text)
        self.tx_sink.violations.clear()
        self.world.after(0.25, self._sweep)

    def run(self, max_time: float | None = None) -> list[str]:
        """Run the schedule; the violations seen (empty: it passed)."""
        world = self.world
        if max_time is None:
            max_time = self.last_fault_end + 15.0
        world.run(self.last_fault_end + 0.5)
        for name in self.names:  # the faults are over: every member runs again
            if not self.members[name].up:
                self._restart(name, "intact")
        self.net.blocked.clear()
        self.registry.down_until = self.tx_sink.down_until = 0.0
        end = world.now + SETTLE
        while world.now < max_time and not self.violations:
            world.run(world.now + 0.25)
            if (
                world.now >= end
                and self.clients_done == self.config.clients
                and self._drained()
                and self._notifying()
            ):
                break
        self._final()
        return self.violations

    @property
    def judged(self) -> bool:
        """False when the faults destroyed every copy of an acknowledged record (or of what the
        lease requires): the end is then an operator's call (`cepheus cluster accept-loss`)."""
        return not (self.destroyed or self.requirement_destroyed)

    def _notifying(self) -> bool:
        """Whether a member notifies now (a renewal's lost answer lapses a lease on its holder's
        clock for a moment: the end is judged when it holds again, or at the time limit)."""
        now = self.world.now
        return any(m.up and m.leading and m.role.holder.holds(now) for m in self.members.values())

    def _drained(self) -> bool:
        """Every adapter flushed, and every notifier released what its log holds (a takeover
        settles its inherited log before it delivers: the end is not judged in between)."""
        return all(
            m.tx.flushed and m.plain.flushed and (not m.leading or m.gate.released >= m.disk.position)
            for m in self.members.values()
            if m.up
        )

    def _final(self) -> None:
        if self.violations or self.destroyed or self.requirement_destroyed:
            return
        lease = self.registry.table.current(PLAN, self.registry.now_ms())
        required = lease.required if lease is not None else None
        why = []
        for m in self.members.values():
            dead = m.follow_conn is not None and not m.follow_conn.open
            if m.up and (dead or (m.live and m.follow_conn is None)):
                why.append(f"{m.name} is following a notifier whose host vanished (its connection is dead)")
            elif not m.caught_up and covers(m.held(), required):
                why.append(
                    f"{m.name} holds what the lease requires but "
                    + (
                        "does not count itself caught up"
                        if m.gate.complete
                        else f"cannot vouch for the outputs it dropped past its bound ({m.gate.dropped})"
                        if m.gate.dropped
                        else "cannot vouch for the outputs before its state (a join cut short)"
                    )
                )
        if not self._notifying():
            self._violation(
                f"no notifier at the end (the lease requires {required}): {'; '.join(why) or '?'}"
            )
            return
        if self.clients_done < self.config.clients:
            able = [m.name for m in self.members.values() if covers(m.held(), required)]
            self._violation(
                f"liveness: {len(self.acked)} of {len(self.bundles)} bundles acknowledged at the end; "
                f"the lease requires {required}, which {' and '.join(able) or 'no member'} holds"
                + (f": {'; '.join(why)}" if why else "")
            )
            return
        tx = Counter(w.content for w in self.tx_sink.rows)
        plain = Counter(w.content for w in self.plain_sink.rows)
        for bundle_id in sorted(self.acked):
            for i in range(self.bundles[bundle_id].events):
                if tx[(bundle_id, i)] == 0:
                    overflow = sum(m.tx.overflow for m in self.everyone)
                    dropped = sum(m.gate.dropped for m in self.everyone)
                    how = (
                        ", acknowledged as a standby's direct copy" if bundle_id in self.copies_acked else ""
                    )
                    self._violation(
                        f"output ({bundle_id}, {i}) of an acknowledged bundle never reached the sink "
                        f"({overflow} outputs refused by full adapter buffers, {dropped} dropped by full gates{how})"
                    )
                    return
                if tx[(bundle_id, i)] > 1 and self._outside_the_contract(bundle_id):
                    self.outside_contract.add(bundle_id)
                elif tx[(bundle_id, i)] > 1:
                    cause = (
                        "processed again after a refusal"
                        if bundle_id in self.refused
                        else "a resend taken again"
                    )
                    if bundle_id in self.overlapped:
                        cause += ", two attempts at once"
                    elif bundle_id in self.beyond_memory:
                        cause += ", beyond the resend memory"
                    if self.bundles[bundle_id].sender is not None:
                        cause += ", though its client names itself"
                    self._violation(
                        f"output ({bundle_id}, {i}) is {tx[(bundle_id, i)]} times in the sink ({cause})"
                    )
                    return
                if plain[(bundle_id, i)] < 1:
                    self._violation(f"output ({bundle_id}, {i}) never reached the plain sink")
                    return
        duplicated = [
            content for content, n in tx.items() if n > 1 and content[0] not in self.outside_contract
        ]
        if duplicated:
            self._violation(f"outputs written twice to the transactional sink: {duplicated[:5]}")
            return
        keys: dict[tuple[int, int], set[tuple[str, int, int]]] = {}
        for w in self.plain_sink.rows:
            keys.setdefault(w.content, set()).add(w.key)
        rekeyed = [
            content
            for content, seen in keys.items()
            if len(seen) > 1 and not self._outside_the_contract(content[0])
        ]
        if rekeyed:  # a plain sink may get an output twice, but only under its one key
            refused = all(content[0] in self.refused for content in rekeyed)
            named = any(self.bundles[content[0]].sender is not None for content in rekeyed)
            overlapped = all(content[0] in self.overlapped for content in rekeyed)
            self._violation(
                f"outputs reached the plain sink under two keys: {rekeyed[:5]}"
                + (" (processed again after a refusal" if refused else "")
                + (", two attempts at once" if refused and overlapped else "")
                + (", though its client names itself" if refused and named else "")
                + (")" if refused else "")
            )

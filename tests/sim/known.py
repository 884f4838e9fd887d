"""The loss and duplicate paths the simulator knows of, each with a schedule that shows it.

`OPEN`: paths read in the code (issue #24) or found by the simulator, still to be closed
(issue #25). Each has a schedule (seed and configuration) on which the simulator reports it,
and the pattern of what it reports. Until its fix lands, a random schedule may meet it too:
`classify` names the path of a violation, and the long runs count what they meet by path, so
that anything *else* they find fails the suite. When a fix lands, its entry moves to `FIXED`,
where its schedule must pass; `tests/sim/test_sim.py` also runs it with the fix undone, where
it must fail: a regression test that cannot pass by missing the path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tests.sim.scenario import Config


@dataclass(frozen=True)
class Path:
    name: str
    pattern: str  # what the simulator reports when a schedule meets it
    seed: int
    config: Config
    clean: bool = True  # with the fix, its schedule meets nothing (False: at most open paths of others)

    def matches(self, violation: str) -> bool:
        return re.search(self.pattern, violation) is not None


RESEND_AFTER_4096 = Config(
    members=2,
    mode="active-active",
    clients=2,
    # one client streams on through the pause of the other's member
    client_bundles=(6000, 10),
    client_pace=(0.0008, 0.5),
    latency=(0.00005, 0.0001),
    registry_latency=(0.00005, 0.0001),
    client_latency=(0.00005, 0.0001),
    faults=[(2.5, "pause", 7.0, "", "standby")],
)
REFUSED_AFTER_PROCESSED = Config(
    members=2,
    mode="active-active",
    bundles=12,
    pace=(0.05, 0.1),
    faults=[(1.8, "kill", 3.0, "intact", "standby"), (2.0, "registry", 1.5, "", "")],
)

# A foreign client (one that does not name itself: WSO2's Data Bridge clients) has no identity
# on the wire, so its resend is told by content (`ha.resends`) only while the record it repeats
# is in the digest's memory (4,096 records, 10 s after a takeover, a minute after a refusal),
# and only when it sent the bundle again after an answer, not while an earlier attempt was still
# in a member. Past that it is at least once: the simulator counts such duplicates apart
# (`Sim.outside_contract`, "outside a foreign client's contract" in a long run's figures) and
# judges every other duplicate. A client that names itself (`adapters.senders`) is exactly once
# always (the `FIXED` paths of its resends). `RESEND_AFTER_4096` shows the memory's bound.
OPEN: tuple[Path, ...] = ()

FIXED: tuple[Path, ...] = (
    Path(
        "a member restarted with its log replays every output of it into its gate, past the gate's "
        "bound: it drops the oldest, cannot vouch for them, and when no other member can take over "
        "neither can it (met by two members killed together)",
        r"(no notifier at the end|liveness:) .*cannot vouch for the outputs it dropped past its bound",
        14599,
        Config.draw(14599),  # both members killed, both replay 23 records into gates of 40 outputs
    ),
    Path(
        "a standby installs the notifier's state as it arrives: a join cut before the outputs carried "
        "with it came leaves a member that holds acknowledged records but not their outputs (and "
        "replaced any whole copy it had), and the plan waits for an operator",
        r"(no notifier at the end|liveness:) .*cannot vouch for the outputs before its state",
        3015,
        Config.draw(
            3015
        ),  # with the fix, the cut join leaves the standby nothing: the record's one copy is gone
    ),
    Path(
        "a standby joining a notifier whose host vanished stays on that dead connection for the "
        "join's 10 s after a new notifier took over: in full-active-active its clients wait for its "
        "answers, and the schedule ends before they all got one",
        r"liveness: \d+ of \d+ bundles acknowledged at the end; the lease requires [^:]* holds$",
        192139,
        Config.draw(192139),  # met once by a run of 200,000 schedules at 95adc16
    ),
    Path(
        "a standby joining a notifier whose host vanished reads the lease only once the join's "
        "silence deadline ends it: the plan has no notifier for 10 s",
        r"liveness: \d+ of \d+ bundles acknowledged at the end; the lease requires [^:]* holds$",
        120457,
        Config.draw(120457),
    ),
    Path(
        "a foreign client's bundle refused after it was logged and processed is processed again when resent",
        r"output \(\d+, \d+\) is \d+ times in the sink \(processed again after a refusal\)"
        r"|under two keys: .*\(processed again after a refusal\)",
        1,
        REFUSED_AFTER_PROCESSED,
    ),
    Path(
        "a standby granted the lease while it joins from the notifier's state, before the outputs "
        "the notifier carries after it have arrived, notifies without them",
        r"never reached the sink \(0 outputs refused by full adapter buffers, 0 dropped by full gates\)$",
        137262,
        Config.draw(137262),  # the store's clock steps 2.5 s ahead: the notifier's lease expires
    ),
    Path(
        "a new notifier delivers the outputs of records it inherited before the lease requires them: "
        "a member lacking them is granted the lease next and processes the client's resend again",
        r"\(processed again after a refusal(, two attempts at once)?, though its client names itself\)",
        73768,
        Config.draw(73768),
    ),
    Path(
        "a notifier's fence that refused a write while its lease lapsed lets later outputs pass once "
        "it holds again: the sink's marks then skip the refused ones when they are delivered again",
        r"never reached the sink \(0 outputs refused by full adapter buffers, 0 dropped by full gates\)$",
        28371,
        Config.draw(28371),
    ),
    Path(
        "outputs of records refused after they were appended hold the gate until a later record "
        "settles: with the gate full none comes, and the plan refuses every bundle for good",
        r"liveness: \d+ of \d+ bundles acknowledged at the end; the lease requires [^:]* holds$",
        12524,
        Config(
            members=2,
            mode="failover",
            fsync="always",
            clients=2,
            bundles=16,
            named=(False, True),
            answer_loss=0.1,
            latency=(0.005, 0.04),
            resend_keep=6,
            gate_capacity=40,
            faults=[
                (1.3406104845272508, "vanish", 1.3771880992042183, "empty", ""),
                (3.4382401227379535, "heartbeats", 2.3268939716213124, "", ""),
                (2.4350925328145183, "kill", 0.5767504897648184, "intact", ""),
            ],
        ),
    ),
    Path(
        "a notifier that renewed its own lapsed lease forgets which standbys of the term may lack "
        "what it acknowledges next",
        r"bundle \d+ was acknowledged, and m\d could take over without it"
        r"|m\d could take over without acknowledged bundles",
        3506,
        replace(Config.draw(3506), answer_loss=0.0),  # drawn before lost answers were
    ),
    Path(
        "a member holding every acknowledged record never asks for the lease if its last subscription "
        "ended before it was live",
        r"(no notifier at the end|liveness:) .*holds what the lease requires but does not count itself caught up",
        178,
        replace(Config.draw(178), answer_loss=0.0),  # drawn before lost answers were
    ),
    Path(
        "standbys stay subscribed to a notifier whose host vanished without FIN and came back",
        r"(no notifier at the end|liveness:) .*following a notifier whose host vanished",
        838,
        Config(
            members=3,
            mode="failover",
            bundles=5,
            adapter_capacity=30,
            faults=[
                (2.9993961387781884, "vanish", 0.6070361599326923, "empty", ""),
                (1.2342260235146119, "sink", 2.0593173225147012, "", ""),
                (1.7910535219013801, "heartbeats", 3.175532297834863, "", ""),
            ],
        ),
    ),
    Path(
        "a resend of a client that names itself is processed twice, after 4,096 other bundles",
        r"is \d+ times in the sink \(a resend taken again(, two attempts at once)?, though its client names itself\)",
        1,
        replace(RESEND_AFTER_4096, named=(True, True)),
    ),
    Path(
        "a bundle of a client that names itself, refused after it was processed, is processed again when resent",
        r"\(processed again after a refusal(, two attempts at once)?, though its client names itself\)",
        1,
        replace(REFUSED_AFTER_PROCESSED, named=(True,)),
    ),
    Path(
        "a log that lost its unsynced tail in a power cut keeps its id and term: its member counts as "
        "holding what it lost, and positions are used again",
        r"m\d could take over without acknowledged bundles \[[\d, ]+\]$"
        r"|appended \d+ at position \d+ of log .*, where bundle \d+ was acknowledged",
        2723,
        replace(Config.draw(2723), answer_loss=0.0),  # drawn before lost answers were
    ),
    Path(
        "a notifier whose writes the fence refused while its lease lapsed on its own clock, and who "
        "then renewed the same lease, never delivers those outputs again",
        r"never reached the sink \(0 outputs refused by full adapter buffers, 0 dropped by full gates",
        295,
        Config(
            members=3,
            mode="failover",
            bundles=12,
            registry_latency=(0.02, 0.15),
            faults=[
                (3.2606434597186187, "registry", 1.0117310017877346, "", ""),
                (1.7652163095318008, "heartbeats", 0.5829385008773424, "", ""),
            ],
        ),
    ),
    Path(
        "an output buffer (an adapter's, or a gate's held outputs) overflows: outputs are lost",
        r"never reached the sink \(([1-9]\d* outputs refused|\d+ outputs refused by full adapter buffers, "
        r"[1-9]\d* dropped)",
        1,
        Config(
            members=2,
            mode="failover",
            bundles=16,
            pace=(0.02, 0.05),
            adapter_capacity=20,
            faults=[(1.2, "sink", 2.0, "", "")],
        ),
    ),
    Path(
        "a full-active-active standby acknowledges a copy it holds only in memory",
        r"acknowledged \(as a standby's direct copy\), and m\d could take over without it"
        r"|acknowledged as a standby's direct copy\)$|\(acknowledged as a standby's direct copy\)$",
        1,
        Config(
            members=2,
            mode="full-active-active",
            bundles=40,
            pace=(0.05, 0.1),
            faults=[(2.5, "pause", 1.0, "", "notifier")],
        ),
    ),
    Path(
        "a member's death is held against its next process: a lease it took after restarting is taken over early",
        r"took the lease over from m\d, whose process is alive and notifying",
        2,
        Config(
            members=3,
            mode="full-active-active",
            fsync="always",
            clients=2,
            bundles=14,
            named=(False, True),
            # the member that dies comes back and notifies; a partition then hides it from another
            faults=[
                (1.6740942275286705, "kill", 2.272965460633371, "intact", ""),
                (2.4792884359845426, "partition", 3.366978121191063, "both", ""),
            ],
        ),
    ),
    Path(
        "a live notifier is deposed by its own heartbeat connection closing (FIN)",
        r"took the lease over from m\d, whose process is alive and notifying",
        1,
        Config(
            members=2,
            mode="failover",
            bundles=30,
            pace=(0.05, 0.1),
            faults=[(2.5, "heartbeats", 0.1, "", "notifier")],
        ),
    ),
    Path(
        "a member restarted with a log that lost acknowledged records takes over",
        r"m\d could take over without acknowledged bundles|where bundle \d+ was acknowledged"
        r"|notifies under a lease the store did not grant it",
        42,
        Config(
            members=2,
            mode="failover",
            fsync="never",
            bundles=30,
            pace=(0.05, 0.1),
            faults=[(2.64, "vanish", 0.27, "intact", "notifier")],
        ),
    ),
)


def classify(violation: str) -> str | None:
    """The open path a violation is an instance of, or None: something new."""
    for path in OPEN:
        if path.matches(violation):
            return path.name
    return None

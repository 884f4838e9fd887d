"""The messages cluster members send each other, as values.

Each is a frozen dataclass with its wire `TAG`; `app.cluster.peers` encodes them (a JSON
header of the non-`body` fields, the `body` bytes after it) and decodes and checks what
arrives, in one place. A field's `wire` metadata names its key in the header where that is
shorter than the field's name (the hot messages: `rec`, `ack`, `out`).

Per connection purpose (`hello` names it):
- `heartbeat`: `Heartbeat`, one way, every `heartbeat_ms`;
- `relay`: a standby relays a bundle clients sent it (`RelayedEvents`); the notifier answers
  `Ok` or `Refused`;
- `replicate`: a standby subscribes (`Subscribe`); the notifier answers `NotNotifier`,
  `OtherText`, or `State` (with `CarriedOutput`s) or `Resume`, then `Record`s, `Live`, more
  `Record`s, `Delivered` and (full-active-active) `Settled` as they come, or `Dropped`; the
  standby answers `Ack`.
- `probe`: nothing after the handshake: a member whose heartbeat connection from another
  closed asks whether that member's process still runs.
The handshake (`Hello`, `Challenge`, `Proof`, `Welcome`, `Refused`) opens every connection.

Pure data: imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar


def wire(key: str) -> dict[str, str]:
    """A field's metadata: its key in the wire header."""
    return {"wire": key}


# ---- the handshake -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    TAG: ClassVar[str] = "hello"
    name: str  # the connecting member
    purpose: str  # heartbeat, relay or replicate
    nonce: str


@dataclass(frozen=True, slots=True)
class Challenge:
    TAG: ClassVar[str] = "challenge"
    name: str  # the accepting member
    nonce: str
    proof: str  # HMAC over both nonces, its name and the purpose


@dataclass(frozen=True, slots=True)
class Proof:
    TAG: ClassVar[str] = "proof"
    proof: str


@dataclass(frozen=True, slots=True)
class Welcome:
    TAG: ClassVar[str] = "welcome"


@dataclass(frozen=True, slots=True)
class Refused:
    """The handshake, or a relayed bundle, refused: `why` is for the operator's log."""

    TAG: ClassVar[str] = "refused"
    why: str


# ---- membership ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Heartbeat:
    TAG: ClassVar[str] = "hb"
    address: str = field(metadata=wire("addr"))  # where the sender's cluster port is
    knows: Mapping[str, str | None] = field(default_factory=dict)  # members it hears, and their address


# ---- relaying a bundle to the notifier -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class RelayedEvents:
    TAG: ClassVar[str] = "events"
    plan: str
    relay_id: str = field(metadata=wire("id"))  # the same on every attempt at one bundle
    body: bytes = b""  # the encoded `Events` record


@dataclass(frozen=True, slots=True)
class Ok:
    TAG: ClassVar[str] = "ok"


# ---- replication ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Subscribe:
    """A standby asks for a plan's ordered input from where its own log stands."""

    TAG: ClassVar[str] = "sub"
    plan: str
    log_id: str
    position: int
    term: int  # the lease epoch it followed last
    text: str | None  # the plan text it runs (the notifier must run the same; None: none yet)
    fresh: bool  # it wants a snapshot, not a resume (its plan was redeployed)


@dataclass(frozen=True, slots=True)
class Resume:
    TAG: ClassVar[str] = "resume"
    log_id: str
    position: int
    term: int
    clock: int


@dataclass(frozen=True, slots=True)
class State:
    """The notifier's state at `position` of log `log_id` (body: the state blob); its
    unwritten outputs follow as `carried` `CarriedOutput`s."""

    TAG: ClassVar[str] = "state"
    log_id: str
    position: int
    term: int
    clock: int
    recent: tuple[int, ...]  # digests of the last bundles sequenced (`ha.resends.Resends`)
    delivered: int  # outputs of every position up to this one are written
    covers: int  # the outputs carried cover every position after this one
    carried: int = 0  # how many `CarriedOutput`s follow
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class CarriedOutput:
    """Outputs `index`, ... of the record at `position` the notifier holds unwritten (body: an
    encoded `Events`); `expired` lists the indexes of expired events."""

    TAG: ClassVar[str] = "out"
    log_id: str = field(metadata=wire("log"))
    position: int = field(metadata=wire("p"))
    index: int = field(metadata=wire("i"))
    expired: tuple[int, ...] = field(default=(), metadata=wire("x"))
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Record:
    TAG: ClassVar[str] = "rec"
    position: int = field(metadata=wire("p"))
    body: bytes = b""  # the input log's payload of the record


@dataclass(frozen=True, slots=True)
class Live:
    """From now on every record is pushed as it is appended: the standby may take over."""

    TAG: ClassVar[str] = "live"


@dataclass(frozen=True, slots=True)
class Delivered:
    TAG: ClassVar[str] = "delivered"
    position: int = field(metadata=wire("p"))  # outputs of every position up to it are written


@dataclass(frozen=True, slots=True)
class Settled:
    """Every record up to `position` is acknowledged (every standby that may take over holds
    them): a full-active-active standby may acknowledge its own copies of those bundles."""

    TAG: ClassVar[str] = "settled"
    position: int = field(metadata=wire("p"))


@dataclass(frozen=True, slots=True)
class Ack:
    TAG: ClassVar[str] = "ack"
    position: int = field(metadata=wire("p"))  # the standby holds every record up to it
    ready: bool = False  # and the outputs a takeover must deliver


@dataclass(frozen=True, slots=True)
class NotNotifier:
    TAG: ClassVar[str] = "not_notifier"


@dataclass(frozen=True, slots=True)
class OtherText:
    TAG: ClassVar[str] = "other_text"


@dataclass(frozen=True, slots=True)
class Dropped:
    TAG: ClassVar[str] = "dropped"
    why: str


Message = (
    Hello
    | Challenge
    | Proof
    | Welcome
    | Refused
    | Heartbeat
    | RelayedEvents
    | Ok
    | Subscribe
    | Resume
    | State
    | CarriedOutput
    | Record
    | Live
    | Delivered
    | Settled
    | Ack
    | NotNotifier
    | OtherText
    | Dropped
)

KINDS: tuple[type[Message], ...] = (
    Hello,
    Challenge,
    Proof,
    Welcome,
    Refused,
    Heartbeat,
    RelayedEvents,
    Ok,
    Subscribe,
    Resume,
    State,
    CarriedOutput,
    Record,
    Live,
    Delivered,
    Settled,
    Ack,
    NotNotifier,
    OtherText,
    Dropped,
)

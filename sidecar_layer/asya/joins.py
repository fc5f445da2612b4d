"""Fan-in: the branches of a fan-out gathered into one envelope for a join actor (docs/routing.md,
"Joining branches").

An actor whose mesh entry says `join: {branches_of: [split], on_failure: ...}` receives, instead of
each branch of `split`'s fan-out, one envelope whose payload is the list of the branches' results in
branch order, once every branch has ended (or at once, when more have failed than `on_failure`
tolerates: the join fails).

- **Frames.** When a source (an actor that some join names in `branches_of`) produces its outputs,
  every output whose remaining route reaches such a join carries a frame in `x-asya-join`: the fan (an
  id derived from the hop, the same when the hop runs again), the join, the output's slot (its place
  among the outputs bound for that join, in the order they were produced), the width (how many there
  are, known only now) and `into`, the id the joined envelope goes on under: the first of them, which
  is the source's own id when its own output is one. Frames stack, innermost last, so a fan-out inside
  a branch is joined first. The sidecar owns the header: what a handler writes to it is ignored.
- **Arrivals.** A branch reaches its join actor, or ends before it (x-sink and x-sump send its ending
  there): either way the join actor's sidecar gathers it instead of running the handler
  (`asya.gathering`), and whichever arrival completes the join sends the joined envelope.
- **Accounting.** The branches a join gathers are not counted on their root task: the joined envelope,
  which goes on as `into`, carries the task on, so the root ends when it does. Each gathered branch's
  own record ends when it arrives (`Joined`, or how it failed).
- **Width 0 and 1.** A source that produces nothing for a join (`None`, or a generator that yields
  nothing) sends its envelope straight to the join with an empty list; a source that returns one value
  makes a fan of one. An envelope that reaches a join actor without a frame of its own (a route that
  does not pass a source) is a join of one: the handler gets `[payload]`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from asya.dedup import Hop
from asya.envelope import Phase, parse_rfc3339
from asya.headers import JOIN_HEADER, JOINED_HEADER
from asya.reasons import Reason
from asya.task_record import TERMINAL

if TYPE_CHECKING:
    from asya.envelope import Envelope
    from asya.routing import Outbound

OnFailure = Literal["fail_fast", "collect", "tolerate"]


class JoinHeaderError(ValueError):
    """`x-asya-join` is not a stack of frames: the envelope cannot be gathered (x-sump, `InvalidEnvelope`)."""


@dataclass(frozen=True, slots=True)
class JoinFrame:
    """One output's place in a fan that `join` gathers."""

    fan: str
    join: str
    slot: int
    width: int
    into: str

    def to_json(self) -> dict[str, Any]:
        return {"fan": self.fan, "join": self.join, "slot": self.slot, "width": self.width, "into": self.into}

    @classmethod
    def parse(cls, raw: Any) -> JoinFrame:
        if not isinstance(raw, dict):
            raise JoinHeaderError(f"{JOIN_HEADER}: a frame must be an object, got {type(raw).__name__}")
        texts = [raw.get(name) for name in ("fan", "join", "into")]
        slot, width = raw.get("slot"), raw.get("width")
        if not all(isinstance(text, str) and text for text in texts) or not (_count(slot) and _count(width)):
            raise JoinHeaderError(f"{JOIN_HEADER}: a frame needs text fan, join and into, and integer slot and width")
        if not 0 <= slot < width:
            raise JoinHeaderError(f"{JOIN_HEADER}: slot {slot} is outside the fan's width {width}")
        return cls(raw["fan"], raw["join"], slot, width, raw["into"])


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def frames_of(headers: Mapping[str, Any]) -> list[JoinFrame]:
    """The envelope's join frames, innermost last; `JoinHeaderError` if the header is not a stack of them."""
    raw = headers.get(JOIN_HEADER)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise JoinHeaderError(f"{JOIN_HEADER} must be a list of frames, got {type(raw).__name__}")
    return [JoinFrame.parse(item) for item in raw]


def innermost(headers: Mapping[str, Any], join: str | None = None) -> JoinFrame | None:
    """The innermost frame (of `join`, when named): the fan an arrival at that join, or an ending,
    belongs to."""
    for frame in reversed(frames_of(headers)):
        if join is None or frame.join == join:
            return frame
    return None


def bound_for(headers: Mapping[str, Any]) -> JoinFrame | None:
    """The join an envelope that ends is gathered by (its innermost frame), if any: x-sink and x-sump
    send its ending there. A header that cannot be read binds it to none."""
    try:
        return innermost(headers)
    except JoinHeaderError:
        return None


def one_output(actor: str, given: int, why: str) -> str:
    """Why a branch that gave its join several outputs failed: said alike for a fixed route
    (`crowded`) and a flow program's map or parallel (`asya.flows`)."""
    return f"a branch gives its join one output: {actor} gave {given} ({why})"


def crowded(headers: Mapping[str, Any], outputs: Sequence[Outbound]) -> JoinFrame | None:
    """The fan of the branch `headers` belong to, when more than one of `outputs` would still arrive
    at its join as that branch (each on its way there, or handed there as an ending): they would share
    its one place in the list, the join would keep one of them and the task wait on the others until
    its deadline. An output framed anew (a fan-out joined on the way) arrives as one of its own fan."""
    frame = bound_for(headers)
    if frame is None:
        return None
    sharing = sum(bound_for(output.wire["headers"]) == frame for output in outputs)
    return frame if sharing > 1 else None


def without(headers: Mapping[str, Any], frame: JoinFrame) -> dict[str, Any]:
    """`headers` with the frame of `frame`'s fan taken off the stack (no header once it was the last)."""
    rest = [other.to_json() for other in frames_of(headers) if other.fan != frame.fan]
    kept = {name: value for name, value in headers.items() if name != JOIN_HEADER}
    return {**kept, JOIN_HEADER: rest} if rest else kept


def alone(envelope: Envelope) -> None:
    """An envelope at a join actor without a frame of that join (its route passed no source): a join
    of one, whose handler gets `[payload]`."""
    envelope.payload = [envelope.payload]
    envelope.headers = {**envelope.headers, JOINED_HEADER: {"width": 1, "failed": []}}


def gathered_here(envelope: Envelope) -> bool:
    """Whether an envelope with a frame of this join is one of its branches arriving (gathered, not
    run): anything but a joined envelope on its way into the join's handler, which runs first even
    when it is itself a branch of an outer fan the same actor joins further on. A joined envelope
    that ended (its handler failed, its join gave up) and was handed on by x-sink or x-sump is an
    ending again: gathered."""
    if JOINED_HEADER not in envelope.headers:
        return True
    return envelope.status is not None and envelope.status.phase.value in TERMINAL


def first_join(route: Iterable[str], joins: frozenset[str]) -> str | None:
    """The first actor of `route` that is one of `joins`."""
    return next((actor for actor in route if actor in joins), None)


def fan_id(envelope: Envelope, join: str) -> str:
    """A fan's id, derived from the source's hop (as a fan-out child's id is), so that the hop run again
    stamps the same fan."""
    hop = Hop.of(envelope)
    seed = "\x1f".join(str(part) for part in (hop.envelope_id, hop.position, hop.attempt, hop.redrives, join))
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def stamp(envelope: Envelope, outputs: Sequence[Outbound], joins: frozenset[str]) -> None:
    """Frame the outputs of a source's hop that are bound for one of `joins` (the first of them on
    each output's remaining route); each join's outputs are one fan. A branch that is not `into` is
    marked `joined` on its decision: the join accounts for it, not the root."""
    bound: dict[str, list[Outbound]] = {}
    for output in outputs:
        join = first_join((output.decision.curr, *output.decision.next), joins)
        if join is not None:
            bound.setdefault(join, []).append(output)
    outer = envelope.headers.get(JOIN_HEADER) or []
    for join, members in bound.items():
        fan, into = fan_id(envelope, join), members[0].decision.task_id
        for slot, output in enumerate(members):
            frame = JoinFrame(fan, join, slot, len(members), into)
            output.wire["headers"] = {**output.wire["headers"], JOIN_HEADER: [*outer, frame.to_json()]}
            output.decision.joined = output.decision.task_id != into


# -- what a join does with failed branches ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinPolicy:
    """A join's `on_failure`: when failed branches make it give up, and what its handler gets.

    - `fail_fast` (the default): the first failed branch fails the join;
    - `tolerate: n` or `tolerate: "p%"`: up to n failed branches (or p % of the width) are left out of
      the list, one more fails the join;
    - `collect`: the join never fails for its branches; a failed branch's place in the list holds its
      error payload `{error, details, original_payload}`.

    A canceled branch counts as failed. `x-asya-joined.failed` lists the failed branches' slots."""

    on_failure: OnFailure = "fail_fast"
    tolerate: float = 0
    percent: bool = False

    def gives_up(self, failed: int, width: int) -> bool:
        if self.on_failure == "collect":
            return False
        return failed > (self.tolerate * width / 100 if self.percent else self.tolerate)

    def describe(self) -> str:
        if self.on_failure != "tolerate":
            return self.on_failure
        return f"tolerate {self.tolerate:g}{'%' if self.percent else ''}"

    @classmethod
    def of(cls, value: Any) -> JoinPolicy:
        """`on_failure` as the mesh file (and, as JSON, `ASYA_JOIN`) writes it; `ValueError` says what is wrong."""
        if value in ("fail_fast", "collect"):
            return cls(value)
        tolerate = value.get("tolerate") if isinstance(value, dict) and set(value) == {"tolerate"} else None
        if _count(tolerate) and tolerate >= 0:
            return cls("tolerate", float(tolerate))
        if isinstance(tolerate, str) and tolerate.endswith("%"):
            try:
                share = float(tolerate[:-1])
            except ValueError:
                share = -1.0
            if 0 <= share <= 100:
                return cls("tolerate", share, percent=True)
        expected = 'fail_fast, collect, {tolerate: <count>} or {tolerate: "<0-100>%"}'
        raise ValueError(f"on_failure must be {expected}, got {value!r:.100}")


# -- gathering ----------------------------------------------------------------------------------------


def arrival_outcome(envelope: Envelope) -> Phase:
    """How a branch ended for its join: failed or canceled as its status says, else succeeded (it
    reached the join, or ended early with a result)."""
    phase = envelope.status.phase if envelope.status else Phase.PROCESSING
    return phase if phase in (Phase.FAILED, Phase.CANCELED) else Phase.SUCCEEDED


@dataclass(frozen=True, slots=True)
class Gathered:
    """One branch as its join kept it: its slot, how it ended, and its envelope (payload restored)."""

    slot: int
    outcome: Phase
    document: dict[str, Any]


def joined_payload(gathered: Sequence[Gathered], policy: JoinPolicy) -> tuple[list[Any], list[int]]:
    """The joined envelope's payload, in slot order, and the failed branches' slots: under `collect`
    a failed branch's place holds its error payload, otherwise it is left out."""
    failed = [branch.slot for branch in gathered if branch.outcome is not Phase.SUCCEEDED]
    keep_failed = policy.on_failure == "collect"
    payload = [
        branch.document.get("payload") for branch in gathered if keep_failed or branch.outcome is Phase.SUCCEEDED
    ]
    return payload, failed


def given_up_hop(document: Mapping[str, Any]) -> list[int] | None:
    """A join's failure (`JoinFailed`) as a hop of its task, `[position, attempt, epoch ms]`: the join's
    place on the route and when it gave up. Its gathering claims no hop, so without it the task's hops
    would end at the actor before the join, as if the task had failed there."""
    status, route = document.get("status") or {}, document.get("route") or {}
    given_up = parse_rfc3339(status.get("updated_at"))
    if status.get("reason") != Reason.JOIN_FAILED or given_up is None:
        return None
    return [len(route.get("prev") or []), int(status.get("attempt") or 1), int(given_up.timestamp() * 1000)]

"""A task run by a flow program (docs/flows.md): where its envelopes go after each actor.

The envelope carries the compiled program, its place in it and its loops' counts in one reserved
header (`x-asya-flow`). After an actor returns, its own sidecar takes the program's next step on the
output (`continue_flow`); after it fails for good, the program's `except` may take the failure
(`caught`); the gateway takes the first step on the task's input (`start`). Each step becomes the
output's route: the actor called next, then the shortest way on to the end, so a decision costs no
hop of its own and the route still says what lies ahead. The header goes when the program returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asya.abi import Frame
from asya.envelope import Envelope
from asya.flow_expressions import FlowError
from asya.flow_program import Call, End, Fan, Program, Step, digest
from asya.headers import CAUGHT_HEADER, FLOW_HEADER
from asya.joins import innermost, one_output
from asya.reasons import Reason

# the reasons a flow's `except` may name besides the handler's exception types: retries used up, and
# a handler that overran its time (which otherwise goes to x-sump)
CATCHABLE_REASONS = frozenset({Reason.POLICY_EXHAUSTED.value, Reason.HANDLER_TIMEOUT.value})

__all__ = [
    "CATCHABLE_REASONS",
    "FlowError",
    "FlowHeaderError",
    "FlowPlace",
    "UnknownProgramError",
    "caught",
    "continue_flow",
    "out_of_program",
    "progress_floor",
    "start",
]


class FlowHeaderError(FlowError):
    """The envelope's `x-asya-flow` is not a program's place: a corrupt envelope, not a flow that
    failed on its payload (the gateway writes the header, a handler cannot change it)."""

    reason = Reason.INVALID_ENVELOPE


class UnknownProgramError(FlowHeaderError):
    """The header's program is not one the mesh deployed: written by whoever sent the envelope (a
    producer may send to an actor's queue), so it is not run at all."""

    reason = Reason.UNKNOWN_PROGRAM


@dataclass(slots=True)
class FlowPlace:
    """Where an envelope is in its flow's program: the call `at` that sent it to its current actor."""

    program: Program
    at: int
    loops: dict[str, int]
    floor: float = 0.0  # the most progress the task has reported (docs/flows.md, "Progress")

    @classmethod
    def of(cls, headers: Mapping[str, Any], deployed: frozenset[str] | None = None) -> FlowPlace | None:
        """The envelope's place, or None when no program runs it. A header the sidecar cannot read is
        a `FlowHeaderError`: the envelope cannot be taken on without it, and taken on with a program
        that points nowhere it would fail half-way, at a hop that cannot say why. Where an envelope
        enters a function (`deployed` given: the versions the mesh deployed), a program of another
        version, or whose nodes are not the ones its version was computed from, is an
        `UnknownProgramError`."""
        header = headers.get(FLOW_HEADER)
        if header is None:
            return None
        try:
            program = Program(header["program"])
            at = int(header["at"])
            loops = {str(loop): int(count) for loop, count in dict(header.get("loops") or {}).items()}
            program.check()
            if at < 0 or "call" not in program.nodes[at]:
                raise ValueError(f"node {at} is not a call")
            floor = float(header.get("floor", 0.0))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise FlowHeaderError(f"{FLOW_HEADER} is not a flow program's place: {exc!r}") from None
        if deployed is not None:
            _deployed(program.document, deployed)
        return cls(program, at, loops, floor)

    @classmethod
    def of_envelope(cls, envelope: Envelope) -> FlowPlace | None:
        """The place of an envelope at its current actor (`Program.reaching`)."""
        place = cls.of(envelope.headers)
        if place is not None:
            place.at = place.program.reaching(place.at, envelope.route.curr)
        return place

    def header(self, at: int, loops: dict[str, int], floor: float = 0.0) -> dict[str, Any]:
        placed: dict[str, Any] = {"program": self.program.document, "at": at}
        if loops:
            placed["loops"] = loops
        if floor:
            placed["floor"] = floor
        return placed

    def frames(self, step: Step, base: Frame, loops: dict[str, int], done: int) -> list[Frame]:
        """The outputs `step` makes of `base`, `done` actors into the task: one to the actor called,
        one per parallel branch, or one that ends the route (x-sink) without the header, each with the
        payload as the program's edits left it. Each carries the task's progress floor: what its route
        means, or more if the task reported more before."""
        if isinstance(step, End):
            return [Frame(step.payload, [], _without_flow(base.headers), base.status)]
        calls = step.branches if not isinstance(step, Call) else [step]
        return [
            Frame(
                call.payload,
                list(call.route),
                {**base.headers, FLOW_HEADER: self.header(call.node, loops, self._floor(done, call))},
                base.status,
            )
            for call in calls
        ]

    def _floor(self, done: int, call: Call) -> float:
        return max(self.floor, round(100.0 * done / (done + len(call.route)), 2))


def _deployed(program: Mapping[str, Any], deployed: frozenset[str]) -> None:
    """Refuse a header program the mesh did not deploy: its version unknown, or not its own digest."""
    version = program.get("version")
    if version not in deployed:
        raise UnknownProgramError(f"{FLOW_HEADER} carries program version {version!r}, not one this mesh deployed")
    if digest(program) != version:
        raise UnknownProgramError(f"{FLOW_HEADER} carries a program that is not version {version!r} as deployed")


def start(program: Mapping[str, Any], payload: Any) -> tuple[list[str], dict[str, Any], Any]:
    """A new task's route, flow header and payload: the program's first step on its input (the
    payload as the edits before the first actor left it). A program whose first step is not one actor
    was refused when it was compiled; a condition or edit it cannot compute on this payload is a
    `FlowError`, for the caller to refuse the task with."""
    running = Program(program)
    loops: dict[str, int] = {}
    step = running.advance(running.start, payload, loops)
    if not isinstance(step, Call):
        raise FlowError(f"{running.where(running.start)}: a flow must call an actor before anything else")
    return list(step.route), FlowPlace(running, step.node, loops).header(step.node, loops), step.payload


def continue_flow(envelope: Envelope, frames: Sequence[Frame]) -> list[Frame]:
    """The outputs of a hop of a flow, each taken through the program's next step: a handler's output
    goes on to what the program calls next. A frame whose route the handler changed leaves the
    program (the handler routed it: the header goes); one the handler fanned out into goes on each
    the same way. A condition or loop bound that fails is a `FlowError`."""
    place = FlowPlace.of_envelope(envelope)
    if place is None:
        return list(frames)
    after = place.program.after(place.at)
    outputs: list[Frame] = []
    for frame in frames:
        if frame.next != envelope.route.next:
            outputs.append(_frame_out_of_program(frame))
            continue
        loops = dict(place.loops)
        try:
            step = place.program.advance(after, frame.payload, loops)
            if isinstance(step, Fan) and step.mapped and len(frames) > 1:
                raise FlowError(
                    f"a map follows one output of an actor: {envelope.route.curr} gave {len(frames)} "
                    "(its join would gather the branches of all of them as one list)"
                )
            if isinstance(step, Call) and len(frames) > 1 and _bound_for_its_join(envelope, step):
                why = "a map's item or a parallel(…) branch has one place in the joined list"
                raise FlowError(one_output(str(envelope.route.curr), len(frames), why))
        except FlowError as exc:  # of several outputs, the failure keeps the one it failed on
            exc.payload = frame.payload
            raise
        outputs.extend(place.frames(step, frame, loops, len(envelope.route.prev) + 1))
    return outputs


def _bound_for_its_join(envelope: Envelope, step: Call) -> bool:
    """Whether the outputs `step` takes on are a branch of a fan on their way to the join that gathers
    it: each would arrive in the branch's one slot, and the join would keep one of them."""
    frame = innermost(envelope.headers)
    return frame is not None and frame.join in step.route


def caught(envelope: Envelope, error: Mapping[str, Any], reason: str, actor: str) -> list[Frame] | None:
    """The outputs of a failure the program's `except` takes, if one does: the program goes on at the
    handler with the payload the failing actor was given (in Python, `p` before the call that
    raised), and the error in `x-asya-caught`. `error` is the failure's details (`type`, `mro`,
    `message`); an `except` names a type of the error's class or one of its bases, or a reason of
    `CATCHABLE_REASONS`."""
    place = FlowPlace.of_envelope(envelope)
    if place is None:
        return None
    names = {str(name).rsplit(".", 1)[-1] for name in error.get("mro") or []}
    if reason in CATCHABLE_REASONS:
        names.add(reason)
    target = place.program.handler_for(place.at, names)
    if target is None:
        return None
    loops = dict(place.loops)
    step = place.program.advance(target, envelope.payload, loops)
    report = {"actor": actor, "type": error.get("type"), "message": error.get("message"), "reason": reason}
    headers = {**envelope.headers, CAUGHT_HEADER: report}
    base = Frame(envelope.payload, list(envelope.route.next), headers, envelope.status_wire())
    return place.frames(step, base, loops, len(envelope.route.prev) + 1)


def out_of_program(envelope: Envelope) -> Envelope:
    """The envelope out of its flow program, as a route the resiliency policy gave it (`on_exhausted`)
    runs: to its end, as in a flow of a fixed route, the program no longer deciding."""
    return envelope.model_copy(update={"headers": _without_flow(envelope.headers)})


def _frame_out_of_program(frame: Frame) -> Frame:
    return Frame(frame.payload, frame.next, _without_flow(frame.headers), frame.status)


def _without_flow(headers: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in headers.items() if name != FLOW_HEADER}


def progress_floor(headers: Mapping[str, Any]) -> float:
    """The least progress a task of a flow program may report now: the most it reported before (a loop
    going round again finds more ahead than the shortest way said, and progress never goes down)."""
    header = headers.get(FLOW_HEADER)
    floor = header.get("floor") if isinstance(header, dict) else None
    return float(floor) if isinstance(floor, int | float) and not isinstance(floor, bool) else 0.0

"""A task run by a flow program (docs/flows.md): where its envelopes go after each actor.

The envelope carries the compiled program, its place in it and its loops' counts in one reserved
header (`x-asya-flow`). After an actor returns, its own sidecar takes the program's next step on the
output (`continue_flow`); after it fails for good, the program's `except` may take the failure
(`caught`); the gateway takes the first step on the task's input (`start`). Each step becomes the
output's route: the actor called next, then the shortest way on to the end, so a decision costs no
hop of its own and the route still says what lies ahead. The header goes when the program returns.

A route set back to the shortest way out of a loop at each round would show the task less far along
than the round before (docs/status.md: progress never goes back), so the header also keeps the
progress the task showed at its last hop, and a hop reports no less (`progress`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asya.abi import Frame
from asya.envelope import Envelope
from asya.flow_program import Call, End, FlowError, Program, Step
from asya.headers import CAUGHT_HEADER, FLOW_HEADER
from asya.reasons import Reason
from asya.task_record import progress_of

# the reasons a flow's `except` may name besides the handler's exception types: retries used up, and
# a handler that overran its time (which otherwise goes to x-sump)
CATCHABLE_REASONS = frozenset({Reason.POLICY_EXHAUSTED.value, Reason.HANDLER_TIMEOUT.value})

__all__ = ["CATCHABLE_REASONS", "FlowError", "FlowPlace", "caught", "continue_flow", "progress", "start"]
PROGRESS = "progress"  # in the header: the progress the task showed at the hop that sent the envelope


@dataclass(slots=True)
class FlowPlace:
    """Where an envelope is in its flow's program: the call `at` that sent it to its current actor."""

    program: Program
    at: int
    loops: dict[str, int]
    progress: float = 0.0  # what the task showed at the hop that sent the envelope here

    @classmethod
    def of(cls, headers: Mapping[str, Any]) -> FlowPlace | None:
        """The envelope's place, or None when no program runs it. A header the sidecar cannot read is
        a `FlowError`: the envelope cannot be taken on without it."""
        header = headers.get(FLOW_HEADER)
        if header is None:
            return None
        try:
            program = Program(header["program"])
            at = int(header["at"])
            loops = {str(loop): int(count) for loop, count in dict(header.get("loops") or {}).items()}
            program.nodes[at]["call"]
            shown = float(header.get(PROGRESS) or 0)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise FlowError(f"{FLOW_HEADER} is not a flow program's place: {exc!r}") from None
        return cls(program, at, loops, shown)

    def header(self, at: int, loops: dict[str, int]) -> dict[str, Any]:
        placed: dict[str, Any] = {"program": self.program.document, "at": at}
        if loops:
            placed["loops"] = loops
        if self.progress:
            placed[PROGRESS] = self.progress
        return placed

    def frames(self, step: Step, base: Frame, loops: dict[str, int]) -> list[Frame]:
        """The outputs `step` makes of `base`: one to the actor called, one per parallel branch, or one
        that ends the route (x-sink) without the header."""
        if isinstance(step, End):
            headers = {name: value for name, value in base.headers.items() if name != FLOW_HEADER}
            return [Frame(base.payload, [], headers, base.status)]
        calls = step.branches if not isinstance(step, Call) else [step]
        return [
            Frame(
                base.payload,
                list(call.route),
                {**base.headers, FLOW_HEADER: self.header(call.node, loops)},
                base.status,
            )
            for call in calls
        ]


def start(program: Mapping[str, Any], payload: Any) -> tuple[list[str], dict[str, Any]]:
    """A new task's route and flow header: the program's first step on its input. A program whose
    first step is not one actor was refused when it was compiled; a condition it cannot read on this
    payload is a `FlowError`, for the caller to refuse the task with."""
    running = Program(program)
    loops: dict[str, int] = {}
    step = running.advance(running.start, payload, loops)
    if not isinstance(step, Call):
        raise FlowError(f"{running.where(running.start)}: a flow must call an actor before anything else")
    return list(step.route), FlowPlace(running, step.node, loops).header(step.node, loops)


def continue_flow(envelope: Envelope, frames: Sequence[Frame]) -> list[Frame]:
    """The outputs of a hop of a flow, each taken through the program's next step: a handler's output
    goes on to what the program calls next. A frame whose route the handler changed leaves the
    program (the handler routed it: the header goes); one the handler fanned out into goes on each
    the same way. A condition or loop bound that fails is a `FlowError`."""
    place = FlowPlace.of(envelope.headers)
    if place is None:
        return list(frames)
    place.progress = progress(envelope)
    after = place.program.after(place.at)
    outputs: list[Frame] = []
    for frame in frames:
        if frame.next != envelope.route.next:
            outputs.append(_left(frame))
            continue
        loops = dict(place.loops)
        step = place.program.advance(after, frame.payload, loops)
        outputs.extend(place.frames(step, frame, loops))
    return outputs


def caught(envelope: Envelope, error: Mapping[str, Any], reason: str, actor: str) -> list[Frame] | None:
    """The outputs of a failure the program's `except` takes, if one does: the program goes on at the
    handler with the payload the failing actor was given (in Python, `p` before the call that
    raised), and the error in `x-asya-caught`. `error` is the failure's details (`type`, `mro`,
    `message`); an `except` names a type of the error's class or one of its bases, or a reason of
    `CATCHABLE_REASONS`."""
    place = FlowPlace.of(envelope.headers)
    if place is None:
        return None
    names = {str(name).rsplit(".", 1)[-1] for name in error.get("mro") or []}
    if reason in CATCHABLE_REASONS:
        names.add(reason)
    target = place.program.handler_for(place.at, names)
    if target is None:
        return None
    place.progress = progress(envelope)
    loops = dict(place.loops)
    step = place.program.advance(target, envelope.payload, loops)
    report = {"actor": actor, "type": error.get("type"), "message": error.get("message"), "reason": reason}
    headers = {**envelope.headers, CAUGHT_HEADER: report}
    status = envelope.status.model_dump(mode="json", exclude_none=True) if envelope.status else {}
    return place.frames(step, Frame(envelope.payload, list(envelope.route.next), headers, status), loops)


def progress(envelope: Envelope) -> float:
    """The task's progress at the envelope's hop: its route's (`progress_of`), and for an envelope of
    a flow program no less than the task showed at the hop before."""
    route = envelope.route
    shown = progress_of({"prev": route.prev, "curr": route.curr, "next": route.next})
    header = envelope.headers.get(FLOW_HEADER)
    before = header.get(PROGRESS) if isinstance(header, dict) else None
    return max(shown, float(before)) if isinstance(before, int | float) and not isinstance(before, bool) else shown


def _left(frame: Frame) -> Frame:
    headers = {name: value for name, value in frame.headers.items() if name != FLOW_HEADER}
    return Frame(frame.payload, frame.next, headers, frame.status)

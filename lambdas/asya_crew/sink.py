"""x-sink: every terminal envelope ends here (docs/routing.md).

It keeps the whole envelope at `results/<ns>/<id>/<succeeded|failed|canceled|paused>.json`, records
the task's final status (with that result's location, or the error), sends a
copy to each configured hook actor whose phases match, and forwards failures to x-sump. A copy sent to
a hook carries `x-asya-hook`; when the hook actor finishes, its envelope is kept under
`hooks/<actor>` beside the task's result and dispatches nothing, so hooks never loop.

A branch bound for a join (`asya.joins`) that ends before reaching it is kept in S3 too, but its
ending goes to the join actor instead, which records it and counts it for its join: its failure is
the join's to judge (`on_failure`), and x-sump sees it only if the join fails.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from asya.envelope import EnvelopeError, Phase, parse_envelope, visited
from asya.headers import HOOK_HEADER
from asya.joins import bound_for
from asya.names import SINK, SUMP
from asya.routing import sump_body
from asya.telemetry import Telemetry
from asya_crew.crew import CrewSettings, Decide, Keep, crew_handler, rejected

OUTCOMES = (Phase.SUCCEEDED, Phase.FAILED, Phase.CANCELED, Phase.PAUSED)


def parse_hooks(raw: str) -> list[tuple[str, frozenset[str]]]:
    """`ASYA_SINK_HOOKS`: JSON `[{"actor": name, "phases": [..]}]`, as written by the mesh config."""
    return [(hook["actor"], frozenset(hook["phases"])) for hook in json.loads(raw or "[]")]


class Sink:
    def __init__(self, hooks: list[tuple[str, frozenset[str]]]) -> None:
        self.hooks = hooks

    def decide(self, record: SQSRecord, _telemetry: Telemetry) -> Keep:
        try:
            envelope = parse_envelope(record.body)
        except EnvelopeError as exc:
            wire = rejected(record, SINK, exc)
            return Keep(wire["id"], "rejected", wire, [(SUMP, sump_body(wire, record.body))], final=Phase.FAILED.value)
        document = envelope.to_dict()
        phase = envelope.status.phase if envelope.status else Phase.SUCCEEDED
        outcome = phase.value if phase in OUTCOMES else Phase.SUCCEEDED.value
        hook = envelope.headers.get(HOOK_HEADER)
        if isinstance(hook, str):
            return Keep(envelope.id, f"hooks/{hook}.{outcome}", document)
        join = bound_for(envelope.headers)
        if join is not None and outcome != Phase.PAUSED.value:  # a branch its join gathers: the join ends it
            return Keep(envelope.id, outcome, document, [(join.join, record.body)], final=outcome, recorded=False)
        follow_ups = [(actor, self._hook_copy(document, actor)) for actor, phases in self.hooks if outcome in phases]
        if outcome == Phase.FAILED.value:
            follow_ups.append((SUMP, record.body))
        final = None if outcome == Phase.PAUSED.value else outcome  # a paused task stays paused
        return Keep(envelope.id, outcome, document, follow_ups, final=final)

    @staticmethod
    def _hook_copy(document: dict[str, Any], actor: str) -> str:
        copy = {**document, "route": {"prev": visited(document["route"]), "curr": actor, "next": []}}
        copy["headers"] = {**document["headers"], HOOK_HEADER: actor}
        return orjson.dumps(copy).decode()


def decider(settings: CrewSettings) -> Decide:
    return Sink(parse_hooks(settings.sink_hooks)).decide


lambda_handler = crew_handler(SINK, decider)

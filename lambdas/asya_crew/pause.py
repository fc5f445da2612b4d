"""x-pause: a human in the loop (docs/status.md). A route that names `x-pause` stops here until resumed.

The envelope is kept at `results/<ns>/<id>/pause.json` exactly as it arrived, and the task becomes
`paused` with the pause metadata: header `x-asya-pause` if an earlier actor set one (for instance
`("SET", ".headers.x-asya-pause", {"prompt": "Approve?", "fields": {...}})`), otherwise a default
prompt. The deadline clock stops while paused. The gateway's resume call merges the human input into
the kept envelope's payload and sends it on through x-resume.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from asya.envelope import EnvelopeError, Phase, parse_envelope, utc_now
from asya.flows import progress_floor
from asya.headers import PAUSE_HEADER
from asya.names import PAUSE
from asya.task_store import TaskStore
from asya.telemetry import Telemetry
from asya_crew.crew import CrewSettings, Decide, Keep, crew_handler, pass_to_sump, rejected

KEPT_AS = "pause"  # results/<ns>/<id>/pause.json: what a resume continues from
DEFAULT_PAUSE = {"prompt": "Waiting for input to continue.", "fields": {}}


def pause_metadata(headers: dict[str, Any]) -> dict[str, Any]:
    """What the task shows while paused: the prompt and the fields a human is asked for."""
    given = headers.get(PAUSE_HEADER)
    return {**DEFAULT_PAUSE, **given} if isinstance(given, dict) else dict(DEFAULT_PAUSE)


class Pause:
    def __init__(self, tasks: TaskStore | None) -> None:
        self.tasks = tasks

    def decide(self, record: SQSRecord, telemetry: Telemetry) -> Keep:
        try:
            envelope = parse_envelope(record.body)
        except EnvelopeError as exc:
            return pass_to_sump(rejected(record, PAUSE, exc), record)
        document = envelope.to_dict()
        pause = pause_metadata(envelope.headers)
        if (
            self.tasks is not None
            and self.tasks.pause(envelope.id, pause, utc_now(), envelope.route, progress_floor(envelope.headers))
            is None
        ):
            telemetry.log_failure("task not paused: it is unknown, already paused or ended", task=envelope.id)
        telemetry.count("TasksPaused")
        document.setdefault("status", {})["phase"] = Phase.PAUSED.value
        return Keep(envelope.id, KEPT_AS, document)


def decider(settings: CrewSettings) -> Decide:
    return Pause(TaskStore(settings.tasks_table, settings.task_ttl) if settings.tasks_table else None).decide


lambda_handler = crew_handler(PAUSE, decider)

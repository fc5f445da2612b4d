"""The person `asya demo` stands in for: a flow that pauses a task for a person (`pause(p)` in a
program, docs/flows.md) would leave the demo's task paused, and the demo would end with no sight of
what the pause is for. An example that keeps a person's answer beside its mesh file (`person.json`, a
JSON object) has the demo answer each of its paused tasks once, with it, through the gateway's resume
call as `asya resume` makes it, and say so on screen: the task then goes on as a person would have it.
Without that file a paused task stays paused, and the demo ends saying so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya.task_record import TaskStatus
from asya_local.arguments import json_object
from asya_local.gateway_client import GatewayClient

PERSON_FILE = "person.json"  # beside the mesh file, as the demo's inputs.json is
LOOK_EVERY_SECONDS = 1.0  # how often the demo asks the gateway for its paused tasks


def person_answer(mesh_file: Path) -> dict[str, Any] | None:
    """The answer kept beside the mesh file, or None when the example keeps none."""
    file = mesh_file.parent / PERSON_FILE
    return json_object(f"@{file}") if file.exists() else None


@dataclass
class DemoPerson:
    """Called while the demo waits (`LocalStack.wait_until_idle`'s `on_tick`): resumes each of the
    demo's tasks (`ids`) found paused, once, and `say`s so."""

    gateway: GatewayClient
    ids: set[str]
    answer: dict[str, Any]
    say: Callable[[str], None]
    answered: set[str] = field(default_factory=set)
    _looked: float = 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._looked < LOOK_EVERY_SECONDS:
            return
        self._looked = now
        for task in self.gateway.tasks(status=TaskStatus.PAUSED.value, limit=100):
            task_id = str(task["id"])
            if task_id in self.ids and task_id not in self.answered:
                self.answered.add(task_id)
                shown = json.dumps(self.answer, ensure_ascii=False)
                self.say(f"task {task_id[:8]} paused for a person; a person answers: {shown}")
                self.gateway.resume(task_id, self.answer)

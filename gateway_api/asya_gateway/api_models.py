"""The gateway API's requests as its routes declare them: bodies (strict: a boolean is not a number,
a number is not a string) and path, query and header parameters, with the limits Powertools' validation
applies and the OpenAPI document shows."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from asya.live import CURSOR_PATTERN
from asya.variables import WAIT_MAX_SECONDS

MAX_TASK_ID = 256
TaskId = Annotated[str, Path(min_length=1, max_length=MAX_TASK_ID, description="The task's (envelope's) id")]
EVENT_CURSOR = re.compile(CURSOR_PATTERN)  # an event's id as the event log hands it out
EventCursor = Annotated[str | None, Query(pattern=CURSOR_PATTERN, max_length=64)]
WaitSeconds = Annotated[
    float | None, Query(gt=0, le=WAIT_MAX_SECONDS, description="Seconds to wait for the task to end")
]

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="a key of the client's for this create: retried with it, the create answers with "
        "the task it made the first time (`replayed`), never a second one",
    ),
]


class _Model(BaseModel):
    """Request bodies are strict: a boolean is not a number, a number is not a string (docs/status.md)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class TaskFailure(_Model):
    """Why a task outside the mesh failed, in the shape the mesh's own failures have."""

    type: str | None = Field(default=None, max_length=256)
    message: str | None = Field(default=None, max_length=4096)
    ancestors: list[Annotated[str, Field(max_length=256)]] | None = Field(default=None, max_length=50, alias="mro")
    traceback: str | None = Field(default=None, max_length=32_768)


class CreateTask(_Model):
    """Either `flow` (a named route of the mesh) or `route` (actor names), and the payload."""

    flow: str | None = Field(default=None, max_length=128)
    route: list[Annotated[str, Field(max_length=80)]] | None = Field(default=None, max_length=100)
    payload: Any = Field(description="Any JSON value; validated against the flow's input schema")
    headers: dict[str, Any] = Field(default_factory=dict, description="Travel with the envelope on every hop")
    timeout: float | None = Field(default=None, gt=0, le=30 * 86_400, description="Seconds until the deadline")


class StatusEvent(_Model):
    type: Literal["status"]
    status: Literal["running", "succeeded", "failed", "canceled"]
    actor: str | None = Field(default=None, max_length=80)
    phase: str | None = Field(default=None, max_length=40)
    progress: float | None = Field(default=None, ge=0, le=100)
    reason: str | None = Field(default=None, max_length=80)
    error: TaskFailure | None = None
    result: str | None = Field(default=None, max_length=2048)


class FlyEvent(_Model):
    type: Literal["fly"]
    actor: str | None = Field(default=None, max_length=80)
    data: Any


class ResumeTask(_Model):
    input: dict[str, Any] = Field(default_factory=dict, description="Merged into the paused envelope's payload")


class RerunTask(_Model):
    """Without `payload`, the task runs again with the input it was started with."""

    payload: Any = Field(default=None, description="A new input instead (JSON null is an input: give it)")


class RedriveRequest(_Model):
    """All optional: by default the envelope goes back where it failed, with the payload it had there."""

    to: str | None = Field(default=None, max_length=80, description="The actor to send it to instead")
    payload: Any = Field(default=None, description="A new payload (JSON null is no payload: give `{}` or a value)")
    envelope: dict[str, Any] | None = Field(
        default=None, description="The fixed envelope, for a message that never parsed"
    )

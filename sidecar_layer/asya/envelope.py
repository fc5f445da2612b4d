"""The envelope: the unit of work that travels through the mesh carrying its own route (docs/spec/envelope.md).

Parsing is the input boundary of every actor, so it is strict (ids, route and payload are checked)
and it is the one place where the older route shapes (`{actors|steps, current}`) are converted:
everything downstream sees only `route {prev, curr, next}`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any

import orjson
from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from asya.names import SINK, SUMP
from asya.reasons import Reason

NonEmptyStr = Annotated[StrictStr, StringConstraints(min_length=1)]
# The envelope's format (`version`, docs/spec/envelope.md). One without it is version 1, so envelopes of
# older producers keep working; one of a later version goes to x-sump with its body kept (`NewerVersion`)
# rather than be misread, to be redriven once the mesh's sidecars read it.
ENVELOPE_VERSION = 1
_QUEUE_NAME_PART = re.compile(r"[A-Za-z0-9_-]+")


def actor_name_problem(name: Any) -> str | None:
    """Why `name` cannot be an actor still to visit, or `None`. Each becomes the queue
    `asya-<namespace>-<name>`, so it must be a name SQS accepts; and x-sink and x-sump end every route:
    the sidecar sends to them, a route never names them (docs/spec/envelope.md, "The route"). Shared by
    the envelope parser and the ABI, so that a handler cannot write a route the next actor would refuse."""
    if name in (SINK, SUMP):
        return f"{name} may not be named in a route: the sidecar adds it"
    if not isinstance(name, str) or _QUEUE_NAME_PART.fullmatch(name) is None:
        return f"{name!r:.100} is not an actor name (letters, digits, '-' and '_', as in a queue name)"
    return None


# `actor_name_problem` of a name in a route's `next` (a string: the field's type is checked first),
# remembered: every envelope names the mesh's few actors again
_visit_problem = lru_cache(maxsize=1024)(actor_name_problem)


def _timestamp_text(value: Any) -> Any:
    """Timestamps are RFC 3339 text (docs/spec/envelope.md): a number would otherwise be taken for Unix seconds."""
    if isinstance(value, str | dt.datetime):
        return value
    raise ValueError(f"must be an RFC 3339 timestamp string, got {type(value).__name__}")


Timestamp = Annotated[AwareDatetime, BeforeValidator(_timestamp_text)]


class Phase(StrEnum):
    """Lifecycle phase carried in `status.phase`."""

    PENDING = "pending"
    PROCESSING = "processing"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    PAUSED = "paused"
    CANCELED = "canceled"


class Route(BaseModel):
    """Where the envelope has been (`prev`), is (`curr`) and goes (`next`)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    prev: list[StrictStr] = Field(default_factory=list)
    curr: StrictStr
    next: list[StrictStr] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _convert_legacy_shapes(cls, data: Any) -> Any:
        """Accept `{actors, current}` and `{steps, current}` from the two older generations."""
        if not isinstance(data, dict) or "current" not in data:
            return data
        legacy_key = "actors" if "actors" in data else "steps" if "steps" in data else None
        if legacy_key is None or set(data) != {legacy_key, "current"}:
            return data
        actors, current = data[legacy_key], data["current"]
        if not isinstance(actors, list) or not isinstance(current, int) or isinstance(current, bool):
            raise ValueError(f"legacy route needs a list '{legacy_key}' and an integer 'current'")
        if not 0 <= current <= len(actors):
            raise ValueError(f"legacy route 'current'={current} is outside '{legacy_key}' (length {len(actors)})")
        return {
            "prev": actors[:current],
            "curr": actors[current] if current < len(actors) else "",
            "next": actors[current + 1 :],
        }

    @field_validator("next")
    @classmethod
    def _actors_to_visit(cls, actors: list[str]) -> list[str]:
        """Every actor still to visit must be one a queue can be named after (`actor_name_problem`)."""
        if not any(map(_visit_problem, actors)):  # every hop: the few names of a mesh, each checked once
            return actors
        problems = [f"[{index}] {problem}" for index, name in enumerate(actors) if (problem := _visit_problem(name))]
        raise ValueError("; ".join(problems))

    @property
    def position(self) -> int:
        """Index of `curr` in the full route; stable while handlers rewrite `next`."""
        return len(self.prev)


class Status(BaseModel):
    """Lifecycle information stamped by the gateway and updated by the sidecar at every hop."""

    model_config = ConfigDict(extra="allow")

    phase: Phase = Phase.PENDING
    actor: StrictStr | None = None
    attempt: Annotated[StrictInt, Field(ge=1)] = 1
    max_attempts: Annotated[StrictInt, Field(ge=1)] | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    deadline_at: Timestamp | None = None
    reason: StrictStr | None = None
    error: dict[str, Any] | None = None

    @field_serializer("created_at", "updated_at", "deadline_at")
    def _one_timestamp_format(self, moment: dt.datetime | None) -> str | None:
        return None if moment is None else rfc3339(moment)


class Envelope(BaseModel):
    """An envelope as it travels between actors. Unknown top-level fields are kept, not dropped."""

    model_config = ConfigDict(extra="allow")

    version: Annotated[StrictInt, Field(ge=1)] = 1
    id: NonEmptyStr
    parent_id: StrictStr | None = None
    route: Route
    headers: dict[str, Any] = Field(default_factory=dict)
    status: Status | None = None
    payload: Any

    def status_wire(self) -> dict[str, Any]:
        """The status as the wire carries it (`{}` without one), what a hop's outputs stamp theirs on
        (`model_dump(mode="json", exclude_none=True)`, through the serializer itself)."""
        if self.status is None:
            return {}
        wire: dict[str, Any] = _dump_status(self.status, mode="json", exclude_none=True)
        return wire

    def to_dict(self, **replacing: Any) -> dict[str, Any]:
        """The wire form, with the fields in `replacing` in place of the envelope's own. Built by hand
        so that `null`s inside the payload survive untouched; and a hop's output replaces most fields,
        so what it replaces is not built only to be thrown away (dumping the status is the dearest)."""
        wire: dict[str, Any] = {"version": ENVELOPE_VERSION, "id": self.id}  # what this sidecar writes
        if self.parent_id is not None:
            wire["parent_id"] = self.parent_id
        if "route" in replacing:
            wire["route"] = replacing.pop("route")
        else:
            wire["route"] = {"prev": self.route.prev, "curr": self.route.curr, "next": self.route.next}
        wire["headers"] = replacing.pop("headers") if "headers" in replacing else self.headers
        if "status" in replacing:
            wire["status"] = replacing.pop("status")
        elif self.status is not None:
            wire["status"] = self.status_wire()
        wire["payload"] = replacing.pop("payload") if "payload" in replacing else self.payload
        if self.model_extra:
            wire.update(self.model_extra)
        wire.update(replacing)  # id, parent_id
        return wire


# The models' own validator and serializer, called directly on every hop: `model_validate` and
# `model_dump` only pass their defaults on, in a Python frame that cost a third of the dump's time
_validate_envelope = Envelope.__pydantic_validator__.validate_python
_dump_status = Status.__pydantic_serializer__.to_python


class EnvelopeError(ValueError):
    """The input could not become an envelope. `reason` tells a parse error from an invalid one."""

    def __init__(self, reason: Reason, message: str, raw: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.raw = raw


def parse_envelope(body: str | bytes) -> Envelope:
    """Parse and validate an SQS message body; every failure becomes an `EnvelopeError`."""
    try:
        raw = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise EnvelopeError(Reason.PARSE_ERROR, f"message body is not valid JSON: {exc}", body) from exc
    if not isinstance(raw, dict):
        raise EnvelopeError(Reason.INVALID_ENVELOPE, f"envelope must be a JSON object, got {type(raw).__name__}", raw)
    version = raw.get("version")
    # before the fields: a later format's may mean what this sidecar cannot know (`true` is no version)
    if type(version) is int and version > ENVELOPE_VERSION:
        raise EnvelopeError(
            Reason.NEWER_VERSION,
            f"version: envelope version {version} is newer than this sidecar reads (up to version "
            f"{ENVELOPE_VERSION}); upgrade asya-aws, then redrive it from x-sump",
            raw,
        )
    try:
        envelope: Envelope = _validate_envelope(raw)
    except ValidationError as exc:
        raise EnvelopeError(Reason.INVALID_ENVELOPE, describe_validation_error(exc), raw) from exc
    return envelope


def validation_problems(exc: ValidationError, document: Any = None) -> list[str]:
    """One problem a line, each naming the field path, so a user can fix the input: `<field>: <what is
    wrong>`. A check of the whole (located at the root) names its own fields, one problem a line. Given
    the `document` validated, the path is the fields as its author wrote them (`written_location`)."""
    return [line for error in exc.errors(include_url=False) for line in error_problems(error, document)]


def error_problems(error: ErrorDetails, document: Any = None) -> list[str]:
    """One error of a `ValidationError`, said as `validation_problems` says each."""
    path = field_path(written_location(error["loc"], document, missing=error["type"] == "missing"))
    problems = []
    for line in error_message(error).splitlines():
        item = re.match(r"(\[\d+\]): ", line)  # a list's validator names the item it refuses: path too
        location, said = (path + item.group(1), line[item.end() :]) if item else (path, line)
        problems.append(f"{location}: {said}" if location else said)
    return problems


def error_message(error: ErrorDetails) -> str:
    """What is wrong, without where: a validator's own words, else pydantic's."""
    cause = error.get("ctx", {}).get("error")
    return str(cause) if error["type"] == "value_error" and cause is not None else error["msg"]


def written_location(location: Sequence[int | str], document: Any = None, *, missing: bool = False) -> list[int | str]:
    """Where a problem is, as the document's author wrote it. pydantic's location also names what the
    author never wrote: the member of a union it tried (`statement`), a validator's wrapper
    (`function-after[…]`). Given the `document`, a part it does not hold is such a name and left out,
    unless it is the field found `missing`."""
    written: list[int | str] = []
    value = document
    for index, part in enumerate(location):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(part, int):  # an item of a list: pydantic's own names are text
            value = value[part] if isinstance(value, list) and -len(value) <= part < len(value) else None
        elif document is not None and not (missing and index == len(location) - 1):
            continue
        else:
            value = None
        written.append(part)
    return written


def field_path(location: Sequence[int | str]) -> str:
    """`actors.a.permissions[0].actions`: a field's place, an item of a list in brackets."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def describe_validation_error(exc: ValidationError, document: Any = None) -> str:
    """The problems on one line (an envelope's reason, a variable's error)."""
    return "; ".join(validation_problems(exc, document))


def new_envelope(
    envelope_id: str,
    route: Sequence[str],
    payload: Any,
    headers: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A new envelope on the wire, at the first actor of `route`: what a producer (the gateway, the
    in-process mesh) puts on that actor's queue. The one place a route starts."""
    document: dict[str, Any] = {
        "version": ENVELOPE_VERSION,
        "id": envelope_id,
        "route": {"prev": [], "curr": route[0], "next": list(route[1:])},
        "headers": dict(headers or {}),
    }
    if status is not None:
        document["status"] = dict(status)
    document["payload"] = payload
    return document


def visited(route: Mapping[str, Any]) -> list[str]:
    """The actors a route has been through, the current one included while there is one."""
    return [*route["prev"], route["curr"]] if route["curr"] else list(route["prev"])


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@lru_cache(maxsize=8)
def rfc3339(moment: dt.datetime) -> str:
    """RFC 3339 UTC with millisecond precision and a `Z`, the one timestamp format on the wire.
    Cached: one hop stamps the same moment into several fields."""
    utc = moment if moment.tzinfo is dt.UTC else moment.astimezone(dt.UTC)  # `utc_now`'s already is
    return utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_rfc3339(text: Any) -> dt.datetime | None:
    """Parse a timestamp from a header or a record; anything else, or a naive one, counts as absent."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo is not None else None

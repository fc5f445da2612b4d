"""The handler ABI: how a handler reads and changes the envelope around its payload (docs/actors.md).

A generator handler yields verbs as tuples:

    value = yield ("GET", ".route.next")            # a deep copy, sent back into the generator
    yield ("SET", ".route.next[:0]", ["audit"])     # prepend an actor
    yield ("SET", ".headers.priority", "high")
    yield ("DEL", ".status.note")
    yield ("FLY", {"token": "Hel"})                 # ephemeral event for live watchers

Everything else it yields is an output payload, which captures the route and headers as they are at
that moment. `.id`, `.parent_id`, `.route.prev` and `.route.curr` are read-only; writing them (or any
path outside `.route.next`, `.headers.<key>`, `.status.<key>`) raises `AbiError` inside the handler
at the offending `yield`, so the handler sees exactly which line broke the contract.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import ValidationError

from asya.envelope import Status, actor_name_problem, describe_validation_error

VERBS = frozenset({"GET", "SET", "DEL", "FLY"})
READ_ONLY_PATHS = (".id", ".parent_id", ".route.prev", ".route.curr")
_SEGMENT = re.compile(r'\.([^.\[\]]+)|\[(-?\d+)\]|\[(-?\d*):(-?\d*)\]|\["([^"]*)"\]')


class AbiError(Exception):
    """A handler broke the ABI contract (bad verb, bad path, read-only field)."""


Key = str | int | slice


def parse_path(path: str) -> list[Key]:
    """`.route.next[1:]` → `["route", "next", slice(1, None)]`; anything malformed is an `AbiError`."""
    if not isinstance(path, str) or not path.startswith((".", "[")):
        raise AbiError(f"path must be a string starting with '.', got {path!r}")
    keys: list[Key] = []
    position = 0
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if match is None:
            raise AbiError(f"cannot parse path {path!r} at {path[position:]!r}")
        name, index, start, stop, quoted = match.groups()
        if name is not None or quoted is not None:
            keys.append(name if name is not None else quoted)
        elif index is not None:
            keys.append(int(index))
        else:
            keys.append(slice(int(start) if start else None, int(stop) if stop else None))
        position = match.end()
    return keys


def deep_copy(value: Any) -> Any:
    """A JSON deep copy: what a handler gets back is data, never a live reference into the envelope."""
    return orjson.loads(orjson.dumps(value))


def _json_copy(value: Any, what: str) -> Any:
    """A deep copy of a value a handler hands over; a value that is not JSON (a set, an object, nested
    past 254 levels) is refused at the `yield` that gave it, where the handler can see it."""
    try:
        return deep_copy(value)
    except TypeError as exc:
        raise AbiError(f"{what}: the value is not JSON the envelope can carry ({exc})") from None


@dataclass(slots=True)
class Frame:
    """One output of a handler: a payload plus the route/headers/status it was emitted with."""

    payload: Any
    next: list[str]
    headers: dict[str, Any]
    status: dict[str, Any]


@dataclass(slots=True)
class EnvelopeState:
    """The mutable part of the envelope that a handler may touch while it runs."""

    id: str
    parent_id: str | None
    prev: list[str]
    curr: str
    next: list[str]
    headers: dict[str, Any]
    status: dict[str, Any]
    payload: Any
    on_fly: Callable[[Any], None]
    flies: list[Any] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "route": {"prev": self.prev, "curr": self.curr, "next": self.next},
            "headers": self.headers,
            "status": self.status,
            "payload": self.payload,
        }

    def capture(self, payload: Any) -> Frame:
        """Freeze the route and headers as they are now for this output payload."""
        return Frame(payload=payload, next=list(self.next), headers=dict(self.headers), status=dict(self.status))

    def apply(self, item: tuple[Any, ...]) -> Any:
        """Carry out one verb; returns what is sent back into the generator."""
        verb, args = item[0], item[1:]
        if verb == "FLY":
            _expect_args(verb, args, 1)
            event = _json_copy(args[0], "FLY")
            self.flies.append(event)
            self.on_fly(event)
            return None
        if verb == "GET":
            _expect_args(verb, args, 1)
            return deep_copy(_get(self.as_dict(), parse_path(args[0]), args[0]))
        if verb == "SET":
            _expect_args(verb, args, 2)
            keys = parse_path(args[0])
            self._write(args[0], keys, _json_copy(args[1], f"SET {args[0]}"))
            return None
        _expect_args(verb, args, 1)
        self._write(args[0], parse_path(args[0]), _DELETE)
        return None

    def _write(self, path: str, keys: list[Key], value: Any) -> None:
        for read_only in READ_ONLY_PATHS:
            if path == read_only or path.startswith((read_only + ".", read_only + "[")):
                raise AbiError(f"{path} is read-only")
        if keys[:2] == ["route", "next"]:
            self.next = _write_next(self.next, keys[2:], value, path)
        elif len(keys) == 2 and keys[0] in ("headers", "status") and isinstance(keys[1], str):
            target = dict(self.headers if keys[0] == "headers" else self.status)
            if value is _DELETE:
                target.pop(keys[1], None)
            else:
                target[keys[1]] = value
            if keys[0] == "headers":
                self.headers = target
            else:
                self.status = checked_status(target, path)
        else:
            raise AbiError(f"{path} is not writable: only .route.next, .headers.<key> and .status.<key> are")


_DELETE = object()


def checked_status(status: dict[str, Any], what: str) -> dict[str, Any]:
    """`status` as a handler left it, if it is one the envelope allows (docs/spec/envelope.md: `attempt`
    a positive integer, timestamps RFC 3339 text, a known `phase`…): an output whose status the next actor would refuse
    is refused here instead, naming the field."""
    try:
        Status.model_validate(status)
    except ValidationError as exc:
        raise AbiError(f"{what}: status {describe_validation_error(exc, status)}") from None
    return status


def _expect_args(verb: str, args: tuple[Any, ...], count: int) -> None:
    if len(args) != count:
        raise AbiError(f"{verb} takes {count} argument(s), got {len(args)}")


def _get(document: Any, keys: list[Key], path: str) -> Any:
    value = document
    for key in keys:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise AbiError(f"GET {path}: nothing at {key!r}") from exc
    return value


def _write_next(current: list[str], keys: list[Key], value: Any, path: str) -> list[str]:
    updated = list(current)
    if len(keys) > 1:
        raise AbiError(f"{path}: .route.next holds actor names; there is nothing below them")
    key = keys[0] if keys else slice(None)
    if isinstance(key, str):
        raise AbiError(f"{path}: .route.next is a list; index it with [n] or [start:stop]")
    if value is _DELETE:
        try:
            del updated[key]
        except (IndexError, TypeError) as exc:
            raise AbiError(f"DEL {path}: {exc}") from exc
        return updated
    if isinstance(key, slice):
        if not isinstance(value, list):
            raise AbiError(f"SET {path} needs a list of actor names, got {_preview(value)}")
        for actor in value:
            _check_actor(path, actor, "a list of actor names")
        updated[key] = value
        return updated
    _check_actor(path, value, "an actor name")
    try:
        updated[key] = value
    except (IndexError, TypeError) as exc:
        raise AbiError(f"SET {path}: {exc}") from exc
    return updated


def _check_actor(path: str, name: Any, expected: str) -> None:
    problem = actor_name_problem(name)
    if problem is not None:
        raise AbiError(f"SET {path} needs {expected}: {problem}")


def _preview(value: Any) -> str:
    """`repr` cut short: an error message quoting a megabyte-long value helps nobody."""
    text = repr(value)
    return text if len(text) <= 200 else f"{text[:200]}… ({len(text)} characters)"


def as_verb(item: Any) -> tuple[Any, ...] | None:
    """A yielded tuple whose first element is a verb name is a verb; anything else is a payload."""
    if isinstance(item, tuple) and item and isinstance(item[0], str) and item[0] in VERBS:
        return item
    return None


def frame_from_envelope(state: EnvelopeState, returned: Any) -> Frame:
    """Envelope mode: a handler returned a whole envelope; check it kept the read-only fields."""
    if not isinstance(returned, dict):
        raise AbiError(f"an envelope-mode handler must return an envelope object, got {type(returned).__name__}")
    route = returned.get("route")
    if not isinstance(route, dict):
        raise AbiError("the returned envelope has no 'route' object")
    for field_name, expected, actual in (
        (".id", state.id, returned.get("id")),
        (".parent_id", state.parent_id, returned.get("parent_id")),
        (".route.prev", state.prev, route.get("prev")),
        (".route.curr", state.curr, route.get("curr")),
    ):
        if actual != expected:
            raise AbiError(f"{field_name} is read-only: changed from {expected!r} to {actual!r}")
    if "payload" not in returned:
        raise AbiError("the returned envelope has no 'payload'")
    next_actors = _write_next([], [], _json_copy(route.get("next", []), ".route.next"), ".route.next")
    headers = returned.get("headers") or {}
    status = returned.get("status") or {}
    if not isinstance(headers, dict) or not isinstance(status, dict):
        raise AbiError("'headers' and 'status' of the returned envelope must be objects")
    status = checked_status(_json_copy(status, ".status"), "the returned envelope's .status")
    return Frame(payload=returned["payload"], next=next_actors, headers=dict(headers), status=status)

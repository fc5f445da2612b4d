"""A resume's input checked against what its pause asked for (docs/status.md, "Pause and resume").

x-pause shows the person the fields an actor named (`x-asya-pause`: `{"prompt", "fields": {name:
{"type": ...}}}`, or `{name: type}`). The input is merged over the kept payload, so a field the pause
did not ask for would overwrite what an actor computed (a score, an amount) before the route decides
on it: a pause that names fields takes those only, each of its type when it has one. A pause that
names none (the default one) asks for anything, and takes any object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from asya_gateway.task_error import TaskError

_IS: dict[str, Callable[[Any], bool]] = {
    "boolean": lambda value: isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "string": lambda value: isinstance(value, str),
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
}


def check_input(pause: Mapping[str, Any] | None, given: Mapping[str, Any]) -> None:
    """Refuse (400, naming the field) an input the pause did not ask for, or of another type."""
    fields = (pause or {}).get("fields")
    if not isinstance(fields, dict) or not fields:
        return
    for name, value in given.items():
        if name not in fields:
            asked = ", ".join(sorted(fields))
            raise TaskError(400, f"input.{name[:80]}: the pause asks for {asked} only")
        kind = _type_of(fields[name])
        if kind in _IS and not _IS[kind](value):
            raise TaskError(400, f"input.{name}: the pause asks for a {kind}, got {type(value).__name__}")


def _type_of(spec: Any) -> str | None:
    """A field's type: `{"type": name}`, or the name itself; None when it names none."""
    kind = spec.get("type") if isinstance(spec, dict) else spec
    return kind if isinstance(kind, str) else None

"""A mesh file's field problems, with an unknown field said as its author would fix it: most are a
typo of a field the file may hold there (`handlr:` for `handler:`), found among the fields its JSON
Schema allows at that place. What the typo caused is said on the same line, not apart: the field it
meant, found missing (`handler: Field required`), and the check of the object it was written in (a
flow left with neither `route` nor `program`)."""

from __future__ import annotations

import re
from difflib import get_close_matches
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from asya.envelope import error_message, error_problems, field_path, written_location

Location = tuple[int | str, ...]
Path = list[int | str]

_LISTED = 8  # an object with this many fields or fewer lists them when none is close to the unknown one


def field_problems(
    exc: ValidationError, document: dict[str, Any], schema: dict[str, Any], checks: list[ErrorDetails]
) -> list[str]:
    """`asya.envelope.validation_problems`, each unknown field's line saying which field it likely
    means; `checks` are the problems of the document once its wrong fields are left out
    (`asya_cdk.loading`), of which those of an object that held an unknown field are said on that line."""
    errors = exc.errors(include_url=False)
    missing = {error["loc"] for error in errors if error["type"] == "missing"}
    unknown = [error["loc"] for error in errors if error["type"] == "extra_forbidden"]
    meant = {loc: _meant(loc, document, schema) for loc in unknown}
    explained = {(*loc[:-1], field) for loc, field in meant.items() if field is not None}
    required = explained & missing
    problems = []
    for error in errors:
        loc = error["loc"]
        if loc in meant:
            caused = [error_message(check) for check in checks if check["loc"] == loc[:-1]]
            problems.append(_unknown(loc, document, schema, meant=meant[loc], required=required, caused=caused))
        elif loc not in explained:
            problems += error_problems(error, document)
    return problems


def _unknown(
    loc: Location,
    document: dict[str, Any],
    schema: dict[str, Any],
    *,
    meant: str | None,
    required: set[Location],
    caused: list[str],
) -> str:
    """An unknown field's line: what it `caused` (the checks it kept from passing), then the field it
    likely means (and that it is `required`, when found missing), or, when none is close, the fields of
    a small object."""
    where = written_location(loc[:-1], document)
    said = [f"{field_path([*where, loc[-1]])}: not a field", *caused]
    if meant is not None:
        said.append(f"did you mean `{meant}`{', which is required' if (*loc[:-1], meant) in required else ''}?")
    elif 0 < len(known := sorted(_fields(schema, schema, where))) <= _LISTED:
        said[0] += f" (its fields: {', '.join(known)})"
    return "; ".join(said)


def _meant(loc: Location, document: dict[str, Any], schema: dict[str, Any]) -> str | None:
    """The field the schema allows where `loc` is, and the document does not already hold, closest to
    its last part; None when none is close."""
    where = written_location(loc[:-1], document)
    held = _value_at(document, where)
    present = set(held) if isinstance(held, dict) else set()
    close = get_close_matches(str(loc[-1]), sorted(_fields(schema, schema, where) - present), n=1, cutoff=0.6)
    return close[0] if close else None


def _value_at(document: Any, where: Path) -> Any:
    for part in where:
        if isinstance(document, list) and isinstance(part, int) and -len(document) <= part < len(document):
            document = document[part]
        else:
            document = document.get(part) if isinstance(document, dict) else None
    return document


def _fields(schema: dict[str, Any], node: Any, where: Path) -> set[str]:
    """The fields a JSON Schema allows at `where` (every member's, under a union)."""
    if not isinstance(node, dict):
        return set()
    if "$ref" in node:
        return _fields(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]], where)
    members = [member for key in ("anyOf", "oneOf", "allOf") for member in node.get(key, [])]
    if members:
        return set().union(*(_fields(schema, member, where) for member in members))
    if not where:
        return set(node.get("properties", {}))
    part, rest = where[0], where[1:]
    if isinstance(part, int):
        return _fields(schema, node.get("items"), rest)
    named = node.get("properties", {}).get(part)
    patterned = (value for pattern, value in node.get("patternProperties", {}).items() if re.search(pattern, part))
    return _fields(schema, named or next(patterned, None) or node.get("additionalProperties"), rest)

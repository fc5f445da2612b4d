"""Actors of the Spark integration mesh."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any


def split(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for n in payload["numbers"]:
        yield {"n": n}


def crunch(payload: dict[str, Any]) -> dict[str, Any]:
    """Runs in the Spark job, with a library its actor declares; 13 is refused, as a handler error."""
    from inflection import ordinalize  # here: split and post share this module and do not declare it

    if payload["n"] == 13:
        raise ValueError("13 is unlucky")
    return {**payload, "square": payload["n"] ** 2, "ordinal": ordinalize(payload["n"])}


def post(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "label": "even" if payload["n"] % 2 == 0 else "odd"}


def box(payload: dict[str, Any]) -> dict[str, Any]:
    """A container actor's: runs in a consumer (`asya.consumer`), between a Lambda and a Spark actor."""
    return {**payload, "boxed": True}


def crash(payload: dict[str, Any]) -> None:
    """Kills the Spark worker that runs it: the whole job fails."""
    os._exit(3)

"""Imports a library that is not in the Lambda runtime: it works only where it is declared."""

from __future__ import annotations

from typing import Any

import yaml


def dump(payload: dict[str, Any]) -> dict[str, Any]:
    return {"yaml": yaml.safe_dump(payload, sort_keys=True)}

"""Actors of the hostile-queue mesh: whatever reaches the handler is what the sidecar must send on."""

from __future__ import annotations

from typing import Any


def echo(payload: Any) -> Any:
    return payload

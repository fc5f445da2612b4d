"""The function both sides of `bench.cold_start` run: the actor's handler (`ASYA_HANDLER`) and the one the
hand-written Powertools hop calls. Its own module, so each side imports it the same way, at the same cost."""

from __future__ import annotations

from typing import Any


def work(payload: Any) -> Any:
    """Does nothing: what is measured is what runs around a handler, not the handler."""
    return payload

"""The actor of the wide fan-out bench: `parts` branches, each carrying its part number."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def split(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for part in range(payload["parts"]):
        yield {"part": part}

"""A batch of support tickets, one envelope each (fan-out): `report` joins them again at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def split(batch: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for ticket in batch["tickets"]:
        yield {"id": ticket["id"], "customer": ticket.get("customer", ""), "text": ticket["text"].strip()}

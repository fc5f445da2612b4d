"""Every time the console shows is in the reader's zone, a time inside a message too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.topology import Topology
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats

DEADLINE = "2026-11-28T20:22:44.791Z"
LOCAL = f'<time datetime="{DEADLINE}" title="{DEADLINE} UTC" data-local>{DEADLINE}</time>'


class PastDeadline(FakeGateway):
    """x-sump kept an envelope whose task's deadline passed, the deadline in its message."""

    def sump(self, **filters: str) -> Iterator[dict[str, Any]]:
        message = f"the task's deadline {DEADLINE} passed <before> it got here"
        yield {"id": "e9", "reason": "Timeout", "actor": "score", "arrived_at": DEADLINE, "message": message}

    def sump_entry(self, envelope_id: str) -> dict[str, Any]:
        return {"entry": next(self.sump()), "kept": {"id": envelope_id}}


def test_a_utc_time_in_an_x_sump_message_is_shown_in_local_time() -> None:
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), PastDeadline(), "here")  # type: ignore[arg-type]
    client = console_client(console)
    for page in (client.get("/sump").get_data(as_text=True), client.get("/sump/e9").get_data(as_text=True)):
        assert f"the task&#39;s deadline {LOCAL} passed &lt;before&gt; it got here" in page

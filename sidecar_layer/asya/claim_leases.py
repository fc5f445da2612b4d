"""Short claims on a hop, renewed while it runs: a container hop cut short runs again soon.

A Lambda hop's claim (`TaskStore.claim_hop`) holds until its invocation's timeout, which is never
more than 15 minutes. A container hop has no invocation: its batch may run for hours, so a claim
that held for its whole time limit would keep a killed hop's redelivery waiting that long. A
container consumer therefore claims a tracked hop for one lease (its queue's visibility timeout)
and its heartbeat (`asya.consumer.holding`) renews the lease with each visibility extension. A
renewal is conditioned on the claim still being the one this delivery wrote, so it never takes
over or revives a claim another delivery holds; a process that dies stops renewing, and its claim
lapses as its message becomes visible again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

LOG = logging.getLogger("asya.consumer")

Renew = Callable[[int, int], bool]  # (held until, new held until), epoch ms -> whether it was still ours


class ClaimLeases:
    """The claims one consumer process holds, each with the write that renews it."""

    def __init__(self, lease_ms: int) -> None:
        self.lease_ms = lease_ms
        self._held: dict[int, tuple[int, Renew]] = {}  # lease id -> (held until, renewal)
        self._lock = threading.Lock()
        self._next = 0

    def hold_ms(self, remaining_ms: int | None) -> int:
        """How long a claim made now holds: one lease, or less if the batch has less time left."""
        return self.lease_ms if remaining_ms is None else min(remaining_ms, self.lease_ms)

    def add(self, held_until_ms: int, renew: Renew) -> None:
        with self._lock:
            self._next += 1
            self._held[self._next] = (held_until_ms, renew)

    def clear(self) -> None:
        """The batch is over: its claims are left to lapse within one lease (or were moved past)."""
        with self._lock:
            self._held.clear()

    def renew(self) -> None:
        """Push every held claim one lease on; a claim lapsed or no longer ours is dropped."""
        with self._lock:
            held = dict(self._held)
        now_ms = int(time.time() * 1000)
        for lease, (until, renew) in held.items():
            new_until = now_ms + self.lease_ms
            try:
                kept = until > now_ms and renew(until, new_until)
            except Exception as exc:  # noqa: BLE001 - the next beat tries again, as it does for visibility
                LOG.warning("a hop's claim was not renewed: %s", exc)
                continue
            with self._lock:
                if lease in self._held:
                    if kept:
                        self._held[lease] = (new_until, renew)
                    else:
                        del self._held[lease]

"""The context object a container hop runs with, in place of Lambda's.

The sidecar reads an invocation's time left from `get_remaining_time_in_millis` (each hop's limit,
its claim's lifetime, whether the batch ran out) and Powertools' logger reads the function's name and
request id from the same object. A container batch has no invocation, so its clock starts when the
batch is received and runs for the configured limit (`ASYA_HOP_TIME_LIMIT_SECONDS`): the sidecar then
treats a batch past it exactly as a Lambda invocation that ran out of time. Its hops' claims are not
made for that whole limit but for one lease, renewed by the heartbeat (`claim_leases`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from asya.claim_leases import ClaimLeases


@dataclass
class BatchClock:
    function_name: str  # the actor's queue name: what its logs and metrics are told apart by
    limit_seconds: float
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = ""  # no function: a container task
    function_version: str = "container"
    memory_limit_in_mb: int = 0
    claim_leases: ClaimLeases | None = None  # the consumer's: its hops' claims are leases its heartbeat renews
    let_go: Callable[[Iterable[str]], None] | None = None  # the consumer's: stop extending these messages
    _started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._started + self.limit_seconds - time.monotonic()) * 1000))

"""The context object a container hop runs with, in place of Lambda's.

The sidecar reads an invocation's time left from `get_remaining_time_in_millis` (each hop's limit,
its claim's lifetime, whether the batch ran out) and Powertools' logger reads the function's name and
request id from the same object. A container batch has no invocation, so its clock starts when the
batch is received and runs for the configured limit (`ASYA_HOP_TIME_LIMIT_SECONDS`): the sidecar then
treats a batch past it exactly as a Lambda invocation that ran out of time.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


@dataclass
class BatchClock:
    function_name: str  # the actor's queue name: what its logs and metrics are told apart by
    limit_seconds: float
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = ""  # no function: a container task
    function_version: str = "container"
    memory_limit_in_mb: int = 0
    _started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._started + self.limit_seconds - time.monotonic()) * 1000))

"""The clock of an EventBridge schedule rule that targets a function, run as its own process.

moto stores schedule rules but never fires them. Here the function is invoked with the rule's
scheduled event (or the target's constant input) every `interval` seconds: `ASYA_LOCAL_BACKSTOP_SECONDS`
(2 s by default) rather than the rule's own rate, so that what a schedule enforces on AWS within a
minute (the gateway's deadline backstop) happens within seconds in a demo or a test. Runs that would
overlap are skipped, as a rate schedule does not queue up missed runs.

    python -m asya_local.functions.scheduler '<json spec>'
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from typing import Any

from asya_local.functions import worker
from asya_local.functions.lambda_shapes import scheduled_event


class Scheduler:
    def __init__(self, spec: dict[str, Any], handler: worker.Handler) -> None:
        self.spec = spec
        self.handler = handler
        self.interval = float(spec["interval"])
        self._stopped = threading.Event()
        self._last_result: Any = None

    def stop(self) -> None:
        self._stopped.set()

    def run(self) -> None:
        worker.say(f"every {self.interval:g} s (on AWS: {self.spec['expression']})")
        due = time.monotonic() + self.interval
        while not self._stopped.wait(max(0.0, due - time.monotonic())):
            self.fire()
            due += self.interval
            if due < time.monotonic():  # the run overran: skip the missed ones
                due = time.monotonic() + self.interval

    def fire(self) -> None:
        """One scheduled invocation; its result is printed when it differs from the last one."""
        event = json.loads(self.spec["input"]) if self.spec["input"] else scheduled_event(self.spec["rule_arn"])
        try:
            with worker.invocation(self.spec) as context:
                result = self.handler(event, context)
        except Exception:  # noqa: BLE001 - a function error: the next run comes as scheduled
            traceback.print_exc(file=sys.stdout)
            return
        if result != self._last_result:
            worker.say(json.dumps(result, default=str)[:500])
            self._last_result = result


def build(spec: dict[str, Any]) -> Scheduler:
    _, handler = worker.handler_module(spec)
    return Scheduler(spec, handler)


if __name__ == "__main__":
    worker.main(build)

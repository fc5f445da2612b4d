"""One local task of a container actor: the consumer loop (`asya.consumer`) in a worker process.

The local stack starts it as it starts a Lambda actor's worker, with the spec's environment (the task
definition's variables, a session of the task role, the local endpoint) set before anything of the
actor is imported; from there it is what the task's container runs on AWS, `python -m asya.consumer`,
SIGTERM draining included. It ends with the stack's process, however that ends.

A spec with `faults` (`asya_local.functions.faults`) gives the consumer a Lambda worker's faults, each
batch counting as an invocation: its AWS calls fail at the spec's rates, a batch may kill the process
(SIGKILL) within its first few calls, and one message of a batch may be made visible again as the
batch starts. Unlike a Lambda worker's event source, the consumer's own receives, heartbeats and
deletes get the faults too: on AWS they are calls of the container itself. With
`ASYA_CONSUMER_CONCURRENCY` above 1 the hops run in child processes (`asya.consumer.__main__`),
started by multiprocessing's spawn, which imports this module in each as `__mp_main__`: there the
faults come from the environment the child inherits (`FAULTS`), each child on a stream of its own.

    python -m asya_local.functions.consumer_worker '<json spec>'
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from asya_local.functions.faults import FaultSpec, WorkerFaults
from asya_local.functions.parent_watch import end_with_parent

# The spec's faults and stream, for the consumer's child processes: plumbing between this worker and
# its children, not a setting of the actor (so no `ASYA_` name).
FAULTS = "LOCAL_CONSUMER_FAULTS"


def main() -> int:
    spec = json.loads(sys.argv[1])
    if "parent" in spec:
        end_with_parent(spec["parent"])
    os.environ.update(spec["environment"])
    if spec.get("faults"):
        os.environ[FAULTS] = json.dumps({"faults": spec["faults"], "stream": spec["fault_stream"]})
        inject_faults(WorkerFaults(FaultSpec.model_validate(spec["faults"]), spec["fault_stream"], say))
    from asya.consumer.__main__ import main as consume  # after the environment, as in the task

    return consume()


def inject_faults(faults: WorkerFaults) -> None:
    """Every client made from now on gets the faults; each batch the sidecar is handed starts an
    invocation (the kill is armed) and may have one message released to be delivered again, as a
    Lambda worker's event source does (`asya_local.functions.esm`). The release goes through a client
    made before the faults, as the event source's own."""
    import boto3

    from asya import variables
    from asya.sidecar import Sidecar

    sqs, queue_url = boto3.client("sqs"), variables.QUEUE_URL.require(os.environ)
    faults.install()
    handle = Sidecar.handle

    def handle_with_faults(sidecar: Sidecar, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        faults.invocation_started()
        released = faults.released(event["Records"])
        if released is not None:
            say(f"fault: duplicate delivery of {released['messageId']} while its batch runs")
            sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=released["receiptHandle"], VisibilityTimeout=0
            )
        return handle(sidecar, event, context)

    Sidecar.handle = handle_with_faults  # type: ignore[method-assign, assignment]


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
elif __name__ == "__mp_main__" and FAULTS in os.environ:  # a consumer's child process: its own stream,
    # as a restarted child must not replay the decisions (a kill on its first batch) of the one it replaces
    _given = json.loads(os.environ[FAULTS])
    inject_faults(WorkerFaults(FaultSpec.model_validate(_given["faults"]), f"{_given['stream']}:{os.getpid()}", say))

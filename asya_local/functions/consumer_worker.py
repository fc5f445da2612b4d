"""One local task of a container actor: the consumer loop (`asya.consumer`) in a worker process.

The local stack starts it as it starts a Lambda actor's worker, with the spec's environment (the task
definition's variables, a session of the task role, the local endpoint) set before anything of the
actor is imported; from there it is what the task's container runs on AWS, `python -m asya.consumer`,
SIGTERM draining included. It ends with the stack's process, however that ends.

    python -m asya_local.functions.consumer_worker '<json spec>'
"""

from __future__ import annotations

import json
import os
import sys

from asya_local.functions.parent_watch import end_with_parent


def main() -> int:
    spec = json.loads(sys.argv[1])
    if "parent" in spec:
        end_with_parent(spec["parent"])
    os.environ.update(spec["environment"])
    from asya.consumer.__main__ import main as consume  # after the environment, as in the task

    return consume()


if __name__ == "__main__":
    sys.exit(main())

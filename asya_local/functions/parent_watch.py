"""A child of the local stack ends with the process that started it, however that process ends.

The endpoint and the workers run in sessions of their own (so a terminal's Ctrl-C reaches `asya up`
alone, which stops them in order), so neither that Ctrl-C nor the hang-up of a closing terminal
reaches them: if `asya up` is killed outright they would run on, holding their ports. Each child
therefore watches the pid that started it, twice a second, and once it has another parent (it was
re-parented: the first one is gone) stops as on SIGTERM, its own orderly stop (the endpoint kills its
Spark job), or at once if that has not ended it within `GRACE_SECONDS`.

Linux's `PR_SET_PDEATHSIG` would need no thread, but it fires when the *thread* that started the child
ends, not its process: the stack starts a replacement worker from the relay thread of the one that
died, and the local API starts execution environments from request threads, so healthy children
would be killed. It is Linux's alone, too. An execution environment of the local API watches its
front the same way, besides ending when the front's pipe closes (`asya_local.functions.environments`).
"""

from __future__ import annotations

import os
import signal
import time

from asya.consumer.orphans import when_orphaned

CHECK_SECONDS = 0.5
GRACE_SECONDS = 10.0


def end_with_parent(parent: int, check_seconds: float = CHECK_SECONDS, grace_seconds: float = GRACE_SECONDS) -> None:
    """Stop this process once `parent` (the pid that started it) is no longer its parent."""

    def stop() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_seconds)
        os._exit(1)

    when_orphaned(parent, stop, check_seconds)

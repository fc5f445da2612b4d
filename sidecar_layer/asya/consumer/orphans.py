"""Noticing that the process that started this one is gone.

A consumer process of a task with several is started by the task's main process
(`asya.consumer.__main__`). If that process is killed outright (the OOM killer, a local stack's
watchdog) its children would run on with no one to stop them; each therefore watches its parent and,
once re-parented, stops as on SIGTERM. The local stack's workers watch the stack the same way
(`asya_local.functions.parent_watch`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

CHECK_SECONDS = 0.5


def when_orphaned(parent: int, then: Callable[[], None], check_seconds: float = CHECK_SECONDS) -> None:
    """Call `then` (in a thread of its own) once `parent` is no longer this process's parent."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(check_seconds)
        then()

    threading.Thread(target=watch, name="asya-parent-watch", daemon=True).start()

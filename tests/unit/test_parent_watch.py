"""A child of the local stack, in a session of its own, still ends when the process that started it is
killed outright: first as on SIGTERM (its orderly stop), as `asya_local.functions.parent_watch` says."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import signal, sys, time
from asya_local.functions.parent_watch import end_with_parent
def stop(_signum, _frame):
    open(sys.argv[2], "w").write("stopped in order")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
end_with_parent(int(sys.argv[1]), check_seconds=0.05)
time.sleep(60)
"""
STARTER = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid()), sys.argv[2]], start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_child_in_its_own_session_stops_when_its_starter_is_killed(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, CHILD, str(marker)], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert starter.stdout is not None
    child = int(starter.stdout.readline())
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    assert marker.read_text() == "stopped in order"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

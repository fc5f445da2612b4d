"""Ctrl-C of `asya up` and `asya demo` as a person presses it: in a terminal, whose line discipline
signals the whole foreground process group, not the command's pid alone. The stack's children (the
endpoint, the workers, the CDK's Node.js process) are out of that group, so the command stops them in
order: no traceback, `asya up` exits 0 (`asya demo` 130: it did not end), and no process left behind."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
ROOT = Path(__file__).resolve().parents[2]
MESH = """namespace: ctrlc
actors:
  echo: {handler: actors.echo, timeout: 5}
flows:
  echo:
    route: [echo]
"""
UP = ["up", "--config", "mesh.yaml", "--port", "0"]
INTERRUPT = b"\x03"  # what the terminal sends when Ctrl-C is pressed


def test_ctrl_c_in_a_terminal_stops_asya_up_quietly_and_leaves_no_process(tmp_path: Path) -> None:
    (tmp_path / "mesh.yaml").write_text(MESH)
    (tmp_path / "actors.py").write_text("def echo(payload):\n    return payload\n")
    screen, rest, code, children = _interrupted(tmp_path, UP, until=b"Ctrl-C stops it")
    assert len(children) >= 4, "the endpoint, the CDK's Node.js, workers"
    shown = (screen + rest).decode(errors="replace")
    assert code == 0, shown[-3000:]
    assert "Traceback" not in shown, shown
    assert "is `asya up` still running" not in shown
    assert "a local stack keeps nothing once stopped" in shown
    assert shown.rstrip().endswith("stopped"), shown[-500:]
    _none_left(children)


def test_ctrl_c_in_a_terminal_stops_asya_demo_on_one_line_and_leaves_no_process(tmp_path: Path) -> None:
    """While its task runs (a handler that sleeps): one line, exit 130."""
    (tmp_path / "mesh.yaml").write_text(MESH.replace("timeout: 5", "timeout: 60"))
    (tmp_path / "actors.py").write_text("import time\n\ndef echo(payload):\n    time.sleep(50)\n    return payload\n")
    (tmp_path / "inputs.json").write_text('[{"n": 1}]')
    screen, rest, code, children = _interrupted(tmp_path, ["demo", "--config", "mesh.yaml"], until=b"created 1 tasks")
    shown = rest.decode(errors="replace")
    assert code == 130, (screen + rest).decode(errors="replace")[-3000:]
    assert "Traceback" not in shown, shown
    assert shown.rstrip().endswith("stopped before the demo ended"), shown[-500:]
    _none_left(children)


def _interrupted(folder: Path, argv: list[str], until: bytes) -> tuple[bytes, bytes, int | None, list[tuple[int, str]]]:
    """`asya argv` run in `folder` in a terminal of its own, Ctrl-C pressed once `until` is on screen
    (and 2 s later, the live view drawn): what it showed before and after, its exit code, its children."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "120", "TERM": "xterm"}
    pid, terminal = pty.fork()  # a session of its own, with the pseudo-terminal as its controlling terminal
    if pid == 0:
        os.chdir(folder)
        os.execve(sys.executable, [sys.executable, "-m", "asya_local.cli", *argv], env)
    try:
        screen, code = _read(terminal, pid, until=until, seconds=120)
        assert code is None, screen.decode(errors="replace")
        children = _descendants(pid)
        time.sleep(2)
        os.write(terminal, INTERRUPT)
        rest, code = _read(terminal, pid, until=None, seconds=60)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        os.close(terminal)
    return screen, rest, code, children


def _none_left(children: list[tuple[int, str]]) -> None:
    deadline = time.monotonic() + 10
    while (left := [child for child in children if _alive(child[0], child[1])]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, [Path(f"/proc/{child}/cmdline").read_bytes()[:120] for child, _ in left]


def _read(terminal: int, pid: int, until: bytes | None, seconds: float) -> tuple[bytes, int | None]:
    """What the terminal shows until `until` appears, or until `pid` exits (then its exit code)."""
    shown = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if select.select([terminal], [], [], 0.2)[0]:
            with contextlib.suppress(OSError):  # OSError: every holder of the terminal has closed it
                shown += os.read(terminal, 65536)
        if until is not None and until in shown:
            return shown, None
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            while select.select([terminal], [], [], 0.5)[0]:
                try:
                    shown += os.read(terminal, 65536)
                except OSError:
                    break
            return shown, os.waitstatus_to_exitcode(status)
    raise AssertionError(f"neither {until!r} nor an exit within {seconds} s: {shown.decode(errors='replace')}")


def _descendants(root: int) -> list[tuple[int, str]]:
    """Every process below `root` (pid, start time), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            fields = _stat(child)
            if fields:
                found.append((child, fields[19]))
            todo.append(child)
    return found


def _alive(pid: int, started: str | None = None) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z" and (started is None or fields[19] == started)


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command's name: state, parent, ..., start time at [19]."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None

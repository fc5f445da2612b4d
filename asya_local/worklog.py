"""What the local stack's workers print, kept where CloudWatch Logs would keep it: a file.

`asya up` and `asya demo` show the mesh as a live view (`asya_local.live_view`), not as a stream of
per-batch lines; every line goes to the log file instead (`.asya/<namespace>.log`, its path printed;
the previous runs' are kept as `.asya/<namespace>.log.1`, `.2`, `.3`), stamped with the time and the function it
came from. On screen appear only the lines a person must see: errors (a log record at `ERROR` or
above, an execution environment that died or was stopped, a function error with its traceback).

Readers of the lines (`taps`) get each as it comes: the console's activity counter reads the metric
lines among them (`asya_local.console.activity`). A console started on its own, beside a running
`asya up`, reads the same lines by following the file (`follow`).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

import orjson

from asya_local.console.wording import flattened
from asya_local.task_text import short_id

ERROR_LEVELS = ("ERROR", "CRITICAL")
# Lines of the local Lambda stand-ins that say an invocation or an execution environment failed.
FAILURE_MARKERS = ("function error", "execution environment exited", "execution environment was stopped")
SEPARATOR = " | "
KEPT_LOGS = 3  # earlier runs' logs kept beside the running one: <log>.1 (the last), .2, .3
SHOWN = 300  # characters of an error line on screen (the log file has it whole)

Tap = Callable[[str], object]


class WorkerLog:
    """`log(source, line)`: the stack's `on_line`. Writes the line to `path` and hands it to each tap;
    calls `on_error(source, line)` for the lines to show (`is_error`), a traceback's lines included."""

    def __init__(self, path: Path, on_error: Callable[[str, str], None], taps: list[Tap] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.previous = keep_previous(path)
        self.on_error = on_error
        self.taps = list(taps or [])
        self._file: TextIO = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._tracebacks: set[str] = set()  # sources in the middle of printing a traceback
        self._hushed = False

    def __call__(self, source: str, line: str) -> None:
        stamp = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        with self._lock:
            self._file.write(f"{stamp} {source}{SEPARATOR}{line}\n")
            self._file.flush()
            shown = self._shown(source, line)
        for tap in self.taps:
            tap(line)
        if shown and not self._hushed:
            self.on_error(source, line)

    def hush(self) -> None:
        """From now on lines go to the file only: the stack is stopping, and the screen says what the
        stop does rather than what the workers say as they end."""
        self._hushed = True

    def _shown(self, source: str, line: str) -> bool:
        """Errors, and every line of a traceback once it starts (until its last, unindented line)."""
        if source in self._tracebacks:
            if not line.startswith(" "):
                self._tracebacks.discard(source)
            return True
        if line.startswith("Traceback (most recent call last)"):
            self._tracebacks.add(source)
            return True
        return is_error(line)

    def close(self) -> None:
        with self._lock:
            self._file.close()


def keep_previous(path: Path) -> Path | None:
    """Move the previous run's log, if it has one, to `<path>.1` rather than let the new run overwrite
    it, the older ones each a number further, up to `<path>.<KEPT_LOGS>`: the traceback of a run just
    stopped is what a restart is often for, and one may restart twice while looking. Returns where the
    previous one went."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    for older in range(KEPT_LOGS - 1, 0, -1):
        kept = path.with_name(f"{path.name}.{older}")
        if kept.exists():
            kept.replace(path.with_name(f"{path.name}.{older + 1}"))
    previous = path.with_name(f"{path.name}.1")
    path.replace(previous)
    return previous


def is_error(line: str) -> bool:
    """A structured log record at `ERROR` or above, or a failed invocation or execution environment."""
    if line.startswith("{"):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            return False
        # Powertools' records say `level`; the Lambda runtime's own (a failed init) say `log_level`
        level = record.get("level", record.get("log_level", "")) if isinstance(record, dict) else ""
        return str(level).upper() in ERROR_LEVELS
    return any(marker in line for marker in FAILURE_MARKERS)


def shown(line: str) -> str:
    """An error line as a person reads it, on one line: a log record's message with its envelope's
    short id, then why (its reason, the actor, the error as `Type: message`), not its JSON, whose
    error carries a traceback with the machine's paths (the log file keeps the record whole)."""
    if not line.startswith("{"):
        return line
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(record, dict):
        return line
    if "errorType" in record:  # the Lambda runtime's error record
        return flattened(f"{record['errorType']}: {record.get('errorMessage', '')}", SHOWN)
    message = str(record.get("message", ""))
    envelope = record.get("envelope_id") or record.get("correlation_id")
    if envelope:
        named = f"envelope {short_id(envelope)}"
        message = message.replace("envelope", named, 1) if "envelope" in message else f"{message} ({named})"
    cause = _cause(record)
    return flattened(f"{message}: {cause}" if cause else message, SHOWN)


def _cause(record: dict[str, object]) -> str:
    """`HandlerError at score: ValueError: review 2 has no text`: the record's reason, the actor and
    its error (an `error` object's type and message, or the `error_type` and `error_message` fields)."""
    error = record.get("error")
    if isinstance(error, dict):
        kind, text = error.get("type"), error.get("message")
    else:
        kind, text = record.get("error_type"), record.get("error_message") or error
    reason = record.get("reason") if record.get("reason") != kind else None
    at = f"{reason or ''} at {record['actor']}".strip() if record.get("actor") else reason
    return ": ".join(str(part) for part in (at, kind, text) if part)


def follow(path: Path, stop: threading.Event, poll_seconds: float = 0.5, *, from_start: bool = False) -> Iterator[str]:
    """The lines written to a worker log from now on (as `tail -f`), or every line from its first
    (`from_start`), until `stop` is set; a log started anew (a new `asya up`) is followed from its
    beginning."""
    position = path.stat().st_size if path.exists() and not from_start else 0
    while not stop.is_set():
        size = path.stat().st_size if path.exists() else 0
        if size < position:
            position = 0
        if size > position:
            with path.open("rb") as log:
                log.seek(position)
                chunk = log.read(size - position)
            complete = chunk.rfind(b"\n") + 1  # a line being written is read once it ends
            position += complete
            for entry in chunk[:complete].decode("utf-8", "replace").splitlines():
                yield entry.partition(SEPARATOR)[2]
            if complete:
                continue
        time.sleep(poll_seconds)

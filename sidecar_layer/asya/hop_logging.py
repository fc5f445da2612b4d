"""Every log record made while a hop runs names the hop: its envelope's id, its task's id (the root's,
so a fan-out's branches are found with their task) and its actor.

The names are put on each record as it is made (a log record factory), so every logger's records
carry them, the handler's own `logging` calls included, whichever logger they use and wherever
their handlers sit. On Lambda, with the functions' JSON log format (`asya_cdk.actor`), the runtime
writes a record's extra attributes as fields of its JSON line, so CloudWatch Logs Insights finds a
task's lines by `task_id`; the sidecar's own Powertools logger gets them as keys for the hop's
duration. What a handler prints (`print`, a write to stdout) is not a log record and carries nothing:
log with `logging` for lines that should be found by task.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

ENVELOPE_ID = "envelope_id"
TASK_ID = "task_id"
ACTOR = "actor"
_HOP: ContextVar[dict[str, str] | None] = ContextVar("asya_hop", default=None)


def _stamping(make: Any) -> Any:
    def stamped(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = make(*args, **kwargs)
        hop = _HOP.get()
        if hop is not None:
            for name, value in hop.items():
                record.__dict__.setdefault(name, value)
        return record

    stamped.asya_hop = True  # type: ignore[attr-defined]
    return stamped


def install() -> None:
    """Stamp every record made in this process with the running hop's names (once per process)."""
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "asya_hop", False):
        logging.setLogRecordFactory(_stamping(factory))


@contextmanager
def hop_names(envelope_id: str, task_id: str, actor: str, logger: Logger | None = None) -> Iterator[None]:
    """While the block runs, the records made in it (in this thread) name this hop; `logger` (the
    sidecar's Powertools logger) has the names as keys."""
    install()
    names = {ENVELOPE_ID: envelope_id, TASK_ID: task_id, ACTOR: actor}
    token = _HOP.set(names)
    if logger is not None:
        logger.append_keys(**names)
    try:
        yield
    finally:
        _HOP.reset(token)
        if logger is not None:
            logger.remove_keys([ENVELOPE_ID, TASK_ID])  # `actor` stays: the sidecar's own key

"""Every log record made while a hop runs names the hop: its envelope's id, its task's id (the root's,
so a fan-out's branches are found with their task) and its actor.

The names are put on each record as it is made (a log record factory), so every logger's records
carry them, the handler's own `logging` calls included, whichever logger they use and wherever
their handlers sit. On Lambda, with the functions' JSON log format (`asya_cdk.actor`), the runtime
writes a record's extra attributes as fields of its JSON line, so CloudWatch Logs Insights finds a
task's lines by `task_id`; the sidecar's own Powertools logger gets them as keys for the hop's
duration. What a handler prints (`print`, a write to stdout) is not a log record and carries nothing:
log with `logging` for lines that should be found by task.

The AWS SDK's own INFO records (`botocore`, `boto3`, `urllib3`, `s3transfer`: "Found endpoint for sqs
via: environment_global.", credentials found) would carry a hop's names too, since the sidecar's
clients are made lazily during the first hop, and filled a task's lines with plumbing: those loggers
are set to WARNING when the sidecar is built (`quiet_sdk_loggers`), before the handler's module is
imported, unless the user's own configuration says otherwise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from aws_lambda_powertools.logging.formatter import BasePowertoolsFormatter

ENVELOPE_ID = "envelope_id"
TASK_ID = "task_id"
ACTOR = "actor"
_HOP_KEYS = (ENVELOPE_ID, TASK_ID)  # what a hop adds to the logger's keys and takes off again
SDK_LOGGERS = ("botocore", "boto3", "urllib3", "s3transfer")
# the function's application log level (Lambda's `LoggingConfig`) at which a user asks for the SDK's lines
_LEVEL_VARIABLE = "AWS_LAMBDA_LOG_LEVEL"
_VERBOSE = frozenset({"DEBUG", "TRACE"})
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


def quiet_sdk_loggers(env: Mapping[str, str] | None = None) -> None:
    """Set the SDK's loggers (`SDK_LOGGERS`) to WARNING: their INFO records are not what a person reads
    a task's lines for. Left as they are when the user said otherwise: a level set on one of them
    already (the handler's module sets its own at import, after this), or the function's application
    log level at DEBUG or TRACE."""
    level = (os.environ if env is None else env).get(_LEVEL_VARIABLE, "").upper()
    if level in _VERBOSE:
        return
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


class HopNames:
    """While the block runs, the records made in it (in this thread) name this hop; `logger` (the
    sidecar's Powertools logger) has the names as keys, and the envelope's id as its correlation id,
    which stays after the block (as Powertools' `set_correlation_id` leaves it).

    A class rather than a `contextmanager` generator, and the logger's keys set in one call: it runs
    on every hop, where a generator's frames and a second look-up of the logger's formatter were a
    few percent of the sidecar's time per envelope (`bench/sidecar_hop`)."""

    __slots__ = ("_keys", "_logger", "_names", "_token")

    def __init__(self, envelope_id: str, task_id: str, actor: str, logger: Logger | None = None) -> None:
        self._names = {ENVELOPE_ID: envelope_id, TASK_ID: task_id, ACTOR: actor}
        self._logger = logger

    def __enter__(self) -> None:
        install()
        self._token = _HOP.set(self._names)
        if self._logger is not None:
            # the formatter holds the logger's keys: looked up once for both ends, and on the handler
            # itself (what `registered_formatter` reaches four calls deep for a logger that is no child)
            self._keys = cast("BasePowertoolsFormatter", self._logger.logger_handler.formatter)
            self._keys.append_keys(correlation_id=self._names[ENVELOPE_ID], **self._names)

    def __exit__(self, *_exc: object) -> None:
        _HOP.reset(self._token)
        if self._logger is not None:
            self._keys.remove_keys(_HOP_KEYS)  # `actor` stays: the sidecar's own key

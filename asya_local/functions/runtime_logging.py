"""The root logger of a local execution environment, as Lambda's Python runtime sets it up for a
function whose log format is JSON (the mesh's functions' `LoggingConfig`, `asya_cdk.actor`).

On Lambda, a handler's `logging` call at or above the application log level (`AWS_LAMBDA_LOG_LEVEL`,
INFO unless the function says otherwise) is written as one JSON object: its time, level, message and
logger, the exception's type, message and stack when there is one, and every attribute the record
carries beyond the standard ones (what `extra=` gives, and the hop's names, `asya.hop_logging`). A
local environment writes the same, so what a handler logs reaches the worker log (and the console's
Logs section) as it reaches CloudWatch Logs, and nothing below the level does, here or there.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
import traceback
from typing import Any

LEVEL_VARIABLE = "AWS_LAMBDA_LOG_LEVEL"
# what every record has: not written as extra fields
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class LambdaJsonFormatter(logging.Formatter):
    """One JSON object per record, with the fields Lambda's runtime writes."""

    def format(self, record: logging.LogRecord) -> str:
        moment = dt.datetime.fromtimestamp(record.created, dt.UTC)
        line: dict[str, Any] = {
            "timestamp": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "message": record.getMessage(),
            "logger": record.name,
        }
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line["errorType"] = type(error).__name__
            line["errorMessage"] = str(error)
            line["stackTrace"] = traceback.format_tb(error.__traceback__)
        line.update((name, value) for name, value in vars(record).items() if name not in _STANDARD)
        return json.dumps(line, default=str, ensure_ascii=False)


def install_root_handler(env: dict[str, str] | None = None) -> logging.Handler:
    """Give the root logger the runtime's handler and level (once: a second call changes nothing)."""
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler.formatter, LambdaJsonFormatter):
            return handler
    level = (env if env is not None else os.environ).get(LEVEL_VARIABLE, "INFO").upper()
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(LambdaJsonFormatter())
    root.addHandler(handler)
    root.setLevel(logging.getLevelName(level) if level in logging.getLevelNamesMapping() else logging.INFO)
    return handler

"""What Lambda itself writes to a function's log group for each invocation (its platform events), and
which of them the function's system log level lets through: the cost bench prices only those.

The mesh's functions log JSON (`asya_cdk.actor.mesh_lambda`), so the platform's events are JSON lines
(`platform.start`, `platform.runtimeDone`, `platform.report`), not the plain-text START, END and
REPORT lines. Lambda gives each event a level (`LoggingConfig.SystemLogLevel` filters on it): for a
successful invocation, the start and the report are INFO and the runtime's end is DEBUG, so at INFO
(Lambda's default) an invocation writes two lines and at WARN none. A failed invocation's end and
report, a timeout's and a failed init's are WARN, written at every level; the bench's invocations all
succeed, so none of those is counted.
"""

from __future__ import annotations

import json

LOG_EVENT_OVERHEAD = 26  # bytes CloudWatch Logs adds to each event's size
LEVELS = ("DEBUG", "INFO", "WARN")  # Lambda's system log levels, most detail first
REQUEST_ID = "00000000-0000-0000-0000-000000000000"
TIME = "2026-11-27T16:40:05.123Z"
# A successful invocation's events at 512 MB, with the level Lambda gives each (typical figures)
SUCCESSFUL_INVOCATION: tuple[tuple[str, dict[str, object]], ...] = (
    ("INFO", {"type": "platform.start", "record": {"requestId": REQUEST_ID, "version": "$LATEST"}}),
    (
        "DEBUG",
        {
            "type": "platform.runtimeDone",
            "record": {
                "requestId": REQUEST_ID,
                "status": "success",
                "spans": [
                    {"name": "responseLatency", "start": TIME, "durationMs": 12.345},
                    {"name": "responseDuration", "start": TIME, "durationMs": 0.123},
                ],
                "metrics": {"durationMs": 12.789, "producedBytes": 412},
            },
        },
    ),
    (
        "INFO",
        {
            "type": "platform.report",
            "record": {
                "requestId": REQUEST_ID,
                "metrics": {"durationMs": 12.789, "billedDurationMs": 13, "memorySizeMB": 512, "maxMemoryUsedMB": 95},
                "status": "success",
            },
        },
    ),
)


def written(event_level: str, system_log_level: str) -> bool:
    """Whether an event of `event_level` reaches the log group of a function at `system_log_level`."""
    if system_log_level not in LEVELS:
        raise ValueError(f"not a Lambda system log level: {system_log_level!r} (one of {', '.join(LEVELS)})")
    return LEVELS.index(event_level) >= LEVELS.index(system_log_level)


def platform_bytes(system_log_level: str, invocations: int) -> int:
    """The bytes CloudWatch Logs ingests for `invocations` successful invocations of a function whose
    system log level is `system_log_level`: each event let through, its newline and CloudWatch's
    per-event overhead."""
    per_invocation = sum(
        len(json.dumps({"time": TIME, **event}, separators=(",", ":"))) + 1 + LOG_EVENT_OVERHEAD
        for level, event in SUCCESSFUL_INVOCATION
        if written(level, system_log_level)
    )
    return per_invocation * invocations

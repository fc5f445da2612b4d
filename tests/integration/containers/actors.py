"""Actors of the container integration mesh."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def prepare(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "prepared": True}


def long(payload: dict[str, Any]) -> dict[str, Any]:
    """Sleeps `sleep` seconds; each run adds a line to the file `runs` names, if any: a hop delivered
    twice leaves two. With `die_once`, the first run takes its whole consumer process down (as the OOM
    killer would), leaving that file behind."""
    if "runs" in payload:
        with Path(payload["runs"]).open("a") as runs:
            runs.write(f"{os.getpid()}\n")
    if "die_once" in payload and not Path(payload["die_once"]).exists():
        Path(payload["die_once"]).write_text("died")
        os._exit(9)
    time.sleep(payload.get("sleep", 0))
    return {**payload, "long": True}

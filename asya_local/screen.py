"""The terminal every `asya` command prints to, and how a task's status is coloured there."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

console = Console() if sys.stdout.isatty() else Console(width=160)  # logs and CI: no 80-column squeeze
STATUS_STYLES = {"succeeded": "green", "failed": "red", "canceled": "yellow", "paused": "magenta", "running": "cyan"}


def status_text(status: str, shown: str | None = None) -> Text:
    """`shown` (the status itself by default) in the status's colour."""
    return Text(status if shown is None else shown, style=STATUS_STYLES.get(status, ""))

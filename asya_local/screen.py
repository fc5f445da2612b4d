"""The terminal every `asya` command prints to."""

from __future__ import annotations

import sys

from rich.console import Console

console = Console() if sys.stdout.isatty() else Console(width=160)  # logs and CI: no 80-column squeeze

"""Resolve handler strings where an actor's worker would, for `asya check` (`asya_local.handler_imports`).

Started with the import path and interpreter flags of the actors' local workers (`asya_local.runtime`),
so an import that would fail an actor's init fails here. Each handler is resolved as the sidecar does
at the init (`asya.handler.load_handler`), except that a class is not created: its `__init__` may load
a model or read a secret only the deployed environment has, and what is checked is that the names
exist. Whatever a module prints while it is imported goes to stderr; stdout carries one JSON object,
handler string → null (it resolves) or `{"kind": ..., "problem": ...}`.

    python -S -m asya_local.functions.handler_probe '["module.function", "module.Class.method"]'
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

from asya.handler import HandlerConfigError, HandlerModuleError, load_handler

MODULE = "asya_local.functions.handler_probe"
BROKEN = "broken"  # the handler string names nothing usable: the actor's init fails
RAISED = "raised"  # its module's own code raised: it may need what only the deployed environment has


def probe(spec: str) -> dict[str, Any] | None:
    try:
        load_handler(spec, create=False)
    except HandlerModuleError as exc:
        return {"kind": RAISED, "problem": exc.problem}
    except HandlerConfigError as exc:
        return {"kind": BROKEN, "problem": exc.problem}
    return None


def main() -> None:
    with contextlib.redirect_stdout(sys.stderr):
        found = {spec: probe(spec) for spec in json.loads(sys.argv[1])}
    print(json.dumps(found))


if __name__ == "__main__":
    main()

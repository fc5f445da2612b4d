"""A stand-in gateway function that keeps the current event in its module, as Powertools' resolver
keeps it on the resolver: two invocations at once in one copy of this module would mix up their
answers, so the local gateway must run them in separate execution environments."""

from __future__ import annotations

import json
import time
from typing import Any

current: dict[str, Any] = {}


def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    current.clear()
    current.update(event)
    time.sleep(0.3 if event["path"].startswith("/slow") else 0)
    answer = {"path": current["path"], "environment": __name__}
    return {"statusCode": 200, "body": json.dumps(answer)}

"""The message a team's webhook receives, signed with a key only this actor reads (`secrets:`).

The key comes from Secrets Manager at the start of the execution environment, into `WEBHOOK_KEY`; it
is in no template, log, envelope or task record. The receiver checks the signature with the same key
(the `X-Signature` convention of most webhook senders: HMAC-SHA256 of the body).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any


def sign(ticket: dict[str, Any]) -> dict[str, Any]:
    message = {"ticket": ticket["id"], "team": ticket["team"], "due_in_hours": ticket["sla_hours"]}
    body = json.dumps(message, sort_keys=True, separators=(",", ":")).encode()
    signature = hmac.new(os.environ["WEBHOOK_KEY"].encode(), body, hashlib.sha256).hexdigest()
    return {**ticket, "webhook": {"body": message, "signature": f"sha256={signature}"}}

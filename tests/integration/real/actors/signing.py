"""Signs its payload with a key from Secrets Manager; proves it has the database password without
showing it."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any


def sign(payload: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(payload, sort_keys=True).encode()
    signature = hmac.new(os.environ["SIGNING_KEY"].encode(), body, hashlib.sha256).hexdigest()
    password_digest = hashlib.sha256(os.environ["DB_PASSWORD"].encode()).hexdigest()
    return {**payload, "signature": signature, "password_sha256": password_digest}

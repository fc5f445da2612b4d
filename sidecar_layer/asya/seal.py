"""The seal on every message the mesh's own functions send: what tells a hop from an envelope that
came from outside (docs/security.md, "The queue door").

A queue is a front door: whoever may `sqs:SendMessage` to it (a producer, by design) writes the whole
envelope, id, route and `x-asya-*` headers included. So every message the gateway, the sidecars and
the crew send carries an HMAC-SHA256 of its body in the message attribute `asya-seal`, under a key
derived from a Secrets Manager secret of the mesh that only its functions may read. A record whose
seal is missing or wrong is not a hop: the sidecar admits it as a new task at its route's start, or
refuses it (`asya.admission`); the crew refuses it.

Why a MAC and not the record's `SenderId`: the sender's role id is only known once the stack is
deployed, every function would need every sending role's id (the environment grows with the mesh),
and the local stack would have to imitate it. The seal is the same code everywhere, costs one secret
read per execution environment and a few microseconds a hop, and moves with the message into a
dead-letter queue (SQS keeps message attributes), so x-sump can still tell the mesh's own.

The seal is an attribute, not a field of the envelope: the envelope stays what the spec says, and a
body is sealed exactly as it is sent (after the claim check, after a branch names its bucket).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
from collections.abc import Callable, Mapping
from typing import Any

SEAL_ATTRIBUTE = "asya-seal"
# What the attribute adds to a message SQS counts against its size limit: the name, the type
# ("String") and 43 characters of base64, rounded up.
SEAL_ROOM = 64
KEY_INFO = b"asya-envelope-seal-v1"  # what the key derived from the mesh's secret is for


class EnvelopeSeal:
    """Seals and checks message bodies. The secret is read once per execution environment, at the
    first seal or check. Without a secret (`ASYA_SEAL_SECRET` unset: unit tests, an embedding that sets
    none) nothing is sealed and every record passes: the mesh behaves as before seals existed."""

    def __init__(self, secret_arn: str | None, read_secret: Callable[[str], str] | None = None) -> None:
        self.secret_arn = secret_arn
        self.read_secret = read_secret or secret_value
        self._key: bytes | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self.secret_arn)

    def _mac_key(self) -> bytes:
        if self._key is not None:  # every seal and check after the first: no lock to take
            return self._key
        with self._lock:
            if self._key is None:
                assert self.secret_arn
                secret = self.read_secret(self.secret_arn).encode()
                self._key = hmac.new(secret, KEY_INFO, hashlib.sha256).digest()
            return self._key

    def seal(self, body: str) -> str:
        digest = hmac.new(self._mac_key(), body.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def attributes(self, body: str) -> dict[str, Any]:
        """The message attributes `SendMessage` takes for `body` (none when sealing is off)."""
        if not self.enabled:
            return {}
        return {SEAL_ATTRIBUTE: {"DataType": "String", "StringValue": self.seal(body)}}

    def opens(self, body: str, message_attributes: Mapping[str, Any] | None) -> bool:
        """Whether a received body carries this mesh's seal. `message_attributes`: as a Lambda SQS
        record has them (`stringValue`) or as `ReceiveMessage` returns them (`StringValue`)."""
        if not self.enabled:
            return True
        found = (message_attributes or {}).get(SEAL_ATTRIBUTE)
        if not isinstance(found, Mapping):
            return False
        given = found.get("stringValue", found.get("StringValue"))
        return isinstance(given, str) and hmac.compare_digest(given, self.seal(body))


def secret_value(arn: str) -> str:
    """A Secrets Manager secret's text: what the mesh's generated secrets (the seal's, the gateway's
    cursors') are read with; connecting briefly, as an actor's start does (`asya.clients.init_client`)."""
    from asya.clients import init_client

    return str(init_client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])

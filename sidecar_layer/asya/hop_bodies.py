"""A hop's outputs as the bodies SQS will carry (`asya.hop`): written as JSON, their large payloads
checked in (`asya.claims`), and each within SQS's size limit, or the hop goes to x-sump instead."""

from __future__ import annotations

from typing import Any

import orjson

from asya import routing
from asya.claims import Claims
from asya.envelope import Envelope, Phase, utc_now
from asya.fans import HEADER_ROOM
from asya.reasons import Reason
from asya.routing import Kind, Outbound, error_details

TRUNCATED_PREVIEW_CHARS = 4_096
_FAILED = Phase.FAILED  # asked of every output: reached once (an Enum's member costs 0.1 µs)


class HopBodies:
    """`limit`: the largest body the actor may send (`SidecarConfig.body_limit`)."""

    def __init__(self, actor: str, limit: int, claims: Claims | None) -> None:
        self.actor = actor
        self.limit = limit
        self.claims = claims

    def written(
        self, outbound: list[Outbound], envelope: Envelope | None, original: str
    ) -> tuple[list[Outbound], list[str]]:
        """The outputs and their bodies; an unserializable or oversized output sends the hop to x-sump
        instead. What x-sump itself gets is always written (`routing.sump_body`): parsed JSON may still
        be unwritable (orjson reads 1,024 levels of nesting but writes 254), and a record whose failure
        envelope cannot be written would otherwise be redelivered until SQS gives up on it."""
        try:
            bodies = [orjson.dumps(out.wire).decode() for out in outbound]
        except TypeError as exc:
            if envelope is not None and any(out.kind is not Kind.SUMP for out in outbound):
                return self._to_sump(envelope, Reason.UNSERIALIZABLE_OUTPUT, error_details(exc), original)
            bodies = [routing.sump_body(out.wire, original) for out in outbound]
        if self.claims is not None:
            claims = self.claims
            bodies = [claims.check_in(out.wire, body) for out, body in zip(outbound, bodies, strict=True)]
        for index, body in enumerate(bodies):
            size = utf8_size(body)
            # a branch may yet name its bucket (`asya.fans`): its body leaves room for that header
            if size <= self.limit - (HEADER_ROOM if outbound[index].decision.branch else 0):
                continue
            if carries_error_payload(outbound[index]):
                bodies[index] = preview_original_payload(outbound[index].wire, size)
            elif envelope is not None:
                message = f"output {index} is {size} bytes, over the {self.limit}-byte SQS message limit"
                return self._to_sump(envelope, Reason.OVERSIZED_OUTPUT, error_details(None, message), original)
        return outbound, bodies

    def _to_sump(
        self, envelope: Envelope, reason: Reason, details: dict[str, Any], original: str
    ) -> tuple[list[Outbound], list[str]]:
        return self.written([routing.to_sump(envelope, self.actor, reason, details, utc_now())], envelope, original)


def carries_error_payload(outbound: Outbound) -> bool:
    return outbound.decision.phase is _FAILED


def preview_original_payload(wire: dict[str, Any], size: int) -> str:
    """A failure must still be delivered: keep the error, replace the original payload by a preview."""
    preview = orjson.dumps(wire["payload"].get("original_payload")).decode()[:TRUNCATED_PREVIEW_CHARS]
    wire["payload"]["original_payload"] = {"truncated": True, "size_bytes": size, "preview": preview}
    return orjson.dumps(wire).decode()


def utf8_size(text: str) -> int:
    """The bytes `text` takes in UTF-8 (a lone surrogate, which a received body may carry, as 3): SQS's
    limits count bytes. An ASCII text (most bodies) is as long as it is, which Python knows without
    encoding it (`str.isascii` reads a flag)."""
    return len(text) if text.isascii() else len(text.encode(errors="surrogatepass"))

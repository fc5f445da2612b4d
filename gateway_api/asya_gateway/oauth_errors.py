"""How OAuth's refusals read (RFC 6749's and RFC 7591's error body), in a module of its own: the gateway's
client registration and the local stand-in for the pool's hosted sign-in answer alike, and the `asya`
command, which reaches the stand-in, imports nothing more of the gateway for it."""

from __future__ import annotations


class OAuthError(Exception):
    """An OAuth request refused: `error` is the protocol's code, the message its `error_description`,
    `status` the HTTP status; the body OAuth's answers share (RFC 6749, RFC 7591)."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.status = status

    def answer(self) -> dict[str, str]:
        return {"error": self.error, "error_description": str(self)}

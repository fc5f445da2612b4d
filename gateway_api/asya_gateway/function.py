"""What the gateway's API function runs (`asya_gateway.api.lambda_handler` builds it at the first event):
its task service, x-sump's index, the follow tickets' key, what registers MCP hosts' clients, and the
steps of each event before its route: a browser's preflight, sign-in (a follow ticket, on the one route
that takes one), and the bodies refused before any route reads them (`asya_gateway.early_answers`)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from asya.cors import allowed_origin, answer_headers, preflight_headers
from asya.sump import SumpIndex
from asya_gateway.callers import Caller, caller_of
from asya_gateway.cursors import CursorKey
from asya_gateway.early_answers import answered_early, is_open, not_json, signin_refused, too_deep_body
from asya_gateway.issuers import SignInRefusedError
from asya_gateway.oauth import AuthorizationServer, Registrar
from asya_gateway.resolver import app
from asya_gateway.service import TaskService
from asya_gateway.tickets import KEY_INFO, FollowTickets, TicketRefusedError, followed_task, ticket_of


class GatewayFunction:
    """What the API function runs: the task service its routes use (each request's caller's view of it,
    `service()`), x-sump's index, the registrar of MCP hosts' clients, and the current request's caller."""

    def __init__(self, tasks: TaskService) -> None:
        self.service = tasks
        self.caller = Caller(owner=None)  # the current request's (one invocation at a time per environment)
        self.tickets = FollowTickets(CursorKey(tasks.settings.cursor_secret, info=KEY_INFO))

    @cached_property
    def sump_index(self) -> SumpIndex | None:
        """x-sump's index (None without a sump table), on the task store's DynamoDB client. Made by the
        first request that reads x-sump: the client is the store's, made at its first use, and a request
        that uses neither (`GET /health`) imports no boto3 and builds no client at all."""
        table = self.service.settings.sump_table
        return SumpIndex(table, client=self.service.tasks.client) if table else None

    @cached_property
    def registrar(self) -> Registrar | None:
        """What registers MCP hosts' clients of the mesh's pool (None where it registers none): made at
        the first registration, with its Cognito client, which no other request needs."""
        server = AuthorizationServer.of(self.service.settings.auth)
        return Registrar(server) if server is not None else None

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        origins = self.service.settings.cors_origins
        headers = event.get("headers") or {}
        preflight = preflight_headers(str(event.get("httpMethod")), headers, origins) if origins else None
        if preflight is not None:  # before sign-in: a browser sends no credentials with a preflight
            return {"statusCode": 204, "headers": preflight, "body": "", "isBase64Encoded": False}
        refused = self.sign_in(event) or not_json(event) or too_deep_body(event)
        answer = refused if refused is not None else app.resolve(event, context)
        origin = allowed_origin(headers, origins) if origins else None
        if origin is not None:  # every answer, a refusal too: the page reads why it was refused
            answer["headers"] = {**(answer.get("headers") or {}), **answer_headers(origin)}
        return answer

    def sign_in(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Take the event's caller as the current one; the proxy response refusing it, if it must be
        (`gateway.auth: jwt` without a valid token), before anything is routed."""
        signed = self.caller_of(event)
        if isinstance(signed, Caller):
            self.caller = signed
            return None
        return signed

    def caller_of(self, event: dict[str, Any]) -> Caller | dict[str, Any]:
        """The event's caller, or the proxy response refusing it; keeps nothing, so the local server's
        streams, served side by side in threads, each have their own. A stream followed with a ticket
        (`GET /follow/{id}`) is the ticket's caller's, whatever else the request carries: that route
        takes nothing but a ticket, and no other route takes one."""
        followed = followed_task(event)
        try:
            if followed is not None:
                return self.tickets.open(ticket_of(event), followed)
            return Caller(owner=None) if is_open(event) else caller_of(event, self.service.settings.auth)
        except SignInRefusedError as refusal:
            return signin_refused(event, refusal)
        except TicketRefusedError as refusal:
            return answered_early(401, str(refusal), {"reason": refusal.reason})

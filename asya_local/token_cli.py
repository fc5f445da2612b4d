"""`asya token`: a token of the local issuer, for a local gateway with sign-in (`gateway.auth: jwt`).

The token is signed with the running local stack's key pair (`asya_local.issuer`) and carries the issuer
and audience the gateway trusts, so it is taken as one of the real issuer's would be:

    curl -H "Authorization: Bearer $(asya token --subject ana)" http://127.0.0.1:PORT/api/v1/mesh
"""

from __future__ import annotations

import argparse
from typing import Any

from asya_local.arguments import command
from asya_local.issuer import DEFAULT_EXPIRES_IN, of_state
from asya_local.local_state import LocalStateError

DEFAULT_SUBJECT = "local-user"


def add_parser(commands: Any) -> None:
    token = command(
        commands,
        "token",
        "print a token of the local issuer, for the local gateway of a mesh with gateway.auth: jwt",
        "asya token --subject ana",
        "asya token --scope asya/admin --expires-in 600   # an admin's, for ten minutes",
    )
    token.add_argument("--subject", default=DEFAULT_SUBJECT, help=f"the caller (`sub`; default: {DEFAULT_SUBJECT})")
    token.add_argument("--scope", action="append", default=[], help="a scope it grants (repeatable)")
    token.add_argument("--role", action="append", default=[], help="a group it names (`groups`; repeatable)")
    token.add_argument(
        "--expires-in",
        type=int,
        default=DEFAULT_EXPIRES_IN,
        help=f"seconds it is valid for (default: {DEFAULT_EXPIRES_IN}; negative: already expired)",
    )


def run(args: argparse.Namespace, state: dict[str, str]) -> int:
    """Print the token alone, so `$(asya token)` is the token."""
    issuer = of_state(state)
    if issuer is None:
        raise LocalStateError(
            "the running stack's mesh has no sign-in (gateway.auth is not jwt): its gateway takes the API key "
            "that `asya up` prints"
        )
    print(issuer.token(subject=args.subject, scopes=args.scope, roles=args.role, expires_in=args.expires_in))
    return 0

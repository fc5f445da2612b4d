"""`asya token`: a bearer token for a gateway with sign-in (`gateway.auth: jwt`).

Without `--stack`, a token of the running local stack's issuer (`asya_local.issuer`), signed with its key
pair, carrying the issuer and audience the gateway trusts, so it is taken as one of the real issuer's
would be:

    curl -H "Authorization: Bearer $(asya token --subject ana)" http://127.0.0.1:PORT/api/v1/mesh

With `--client-credentials`, the token the mesh's Cognito pool gives its machine client instead of a
user's. With `--stack`, a deployed mesh's pool (`gateway.jwt.cognito`) is asked for that token: its
machine client's id and the token endpoint are the stack's outputs, its secret is read with
`cognito-idp:DescribeUserPoolClient` (the caller's AWS credentials), and the token endpoint answers the
client credentials grant (docs/callers.md, "Getting a token on AWS"). A stack `asya up` runs locally is
answered by the local issuer, as its pool would.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import httpx2
from botocore.exceptions import BotoCoreError, ClientError

from asya_local.arguments import command
from asya_local.discovery import DiscoveryError, stack_outputs
from asya_local.issuer import DEFAULT_EXPIRES_IN, NotGrantedError, of_state
from asya_local.local_state import LocalStateError, read_state

DEFAULT_SUBJECT = "local-user"
POOL_OUTPUTS = ("TokenUrl", "MachineClientId", "UserPoolId")
TOKEN_TIMEOUT_SECONDS = 10.0


def add_parser(commands: Any) -> None:
    token = command(
        commands,
        "token",
        "print a token for a gateway with gateway.auth: jwt: the local issuer's, or a deployed pool's",
        "asya token --subject ana",
        "asya token --role admins --expires-in 600   # a user of the admins group, for ten minutes",
        "asya token --stack asya-reviews              # the deployed pool's client credentials token",
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
    token.add_argument(
        "--client-credentials",
        action="store_true",
        help="the machine client's token (a Cognito pool's client credentials grant), not a user's",
    )
    token.add_argument("--stack", help="a deployed mesh's stack whose Cognito pool issues the client credentials token")


def run(args: argparse.Namespace, state: dict[str, str] | None) -> int:
    """Print the token alone, so `$(asya token)` is the token."""
    if args.stack:
        print(deployed_token(args.stack, args.scope, read_state()))
        return 0
    if state is None:
        raise LocalStateError("no local stack runs: `asya up` starts one, or give --stack for a deployed mesh")
    issuer = of_state(state)
    if issuer is None:
        raise LocalStateError(
            "the running stack's mesh has no sign-in (gateway.auth is not jwt): its gateway takes the API key "
            "that `asya up` prints"
        )
    try:
        if args.client_credentials:
            print(issuer.client_token(args.scope, expires_in=args.expires_in))
        else:
            print(issuer.token(subject=args.subject, scopes=args.scope, roles=args.role, expires_in=args.expires_in))
    except NotGrantedError as exc:
        raise LocalStateError(str(exc)) from None
    return 0


def deployed_token(stack: str, scopes: list[str], local: dict[str, str] | None = None, session: Any = None) -> str:
    """The access token the pool of `stack` gives its machine client (the local issuer's, for the stack
    `asya up` runs, `local`)."""
    if local and local.get("stack") == stack and os.environ.get("AWS_ENDPOINT_URL") in (None, local.get("endpoint")):
        issuer = of_state(local)
        if issuer is None:
            raise DiscoveryError(f"the local stack {stack!r} has no sign-in (gateway.auth is not jwt)")
        try:
            return issuer.client_token(scopes)
        except NotGrantedError as exc:
            raise DiscoveryError(str(exc)) from None
    if session is None:
        import boto3  # a deployed pool's token alone calls AWS

        session = boto3.Session()
    try:
        outputs = stack_outputs(session.client("cloudformation"), stack, f"region {session.region_name}")
        missing = [name for name in POOL_OUTPUTS if name not in outputs]
        if missing:
            raise DiscoveryError(
                f"stack {stack!r} has no {', '.join(missing)}: its mesh has no Cognito pool of its own "
                "(gateway.jwt.cognito: true, deployed with this release); ask your issuer for a token"
            )
        client = session.client("cognito-idp").describe_user_pool_client(
            UserPoolId=outputs["UserPoolId"], ClientId=outputs["MachineClientId"]
        )["UserPoolClient"]
    except (BotoCoreError, ClientError) as exc:
        raise DiscoveryError(f"stack {stack!r}: {exc}") from None
    form = {"grant_type": "client_credentials", **({"scope": " ".join(scopes)} if scopes else {})}
    try:
        answer = httpx2.post(
            outputs["TokenUrl"],
            data=form,
            auth=(client["ClientId"], client["ClientSecret"]),
            timeout=TOKEN_TIMEOUT_SECONDS,
        )
    except httpx2.HTTPError as exc:
        raise DiscoveryError(f"the pool's token endpoint {outputs['TokenUrl']}: {exc}") from None
    if answer.status_code != 200:
        raise DiscoveryError(f"the pool's token endpoint refused ({answer.status_code}): {answer.text[:300]}")
    return str(answer.json()["access_token"])

"""The Cognito user pool a mesh with `gateway.jwt.cognito: true` signs its callers in with
(docs/callers.md, "A Cognito user pool").

What makes it usable end to end on AWS, not only a pool the gateway trusts:

- a prefix domain (`https://<prefix>.auth.<region>.amazoncognito.com`): Cognito's `/oauth2/authorize` and
  `/oauth2/token` exist only once a pool has one, and custom scopes are granted only there;
- an app client without a secret for people (authorization code flow, PKCE, to a localhost callback),
  allowed `openid` only: Cognito grants whatever scope a client may ask for to any of the pool's users,
  so a user is an admin by being in the pool's `admins` group (`cognito:groups`), which an operator
  decides, never by asking for a scope;
- a machine client with a secret for scripts and the CLI (client credentials), allowed the resource
  server's `admin` scope: its secret is the operators', as the mesh's API key is;
- the `admins` group.

The pool keeps CDK's removal policy, RETAIN: `cdk destroy` leaves it and its users, and the next deploy
makes a new pool (a new issuer and new client ids). Its constructs are made in the gateway's scope, with
the logical ids the pool was first deployed with, so an update never replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from asya_cdk.gateway_config import COGNITO_ADMIN_SCOPE, COGNITO_ADMINS_GROUP, JwtConfig, UserPoolNames
from asya_cdk.nag import acknowledge

SIGN_IN_CALLBACK = "http://localhost:8080/callback"  # the app client's default redirect: a local client's


@dataclass(frozen=True)
class SignInPool:
    """The pool, its two clients, its domain and what the gateway is told of them (`names`)."""

    pool: cognito.UserPool
    client: cognito.UserPoolClient
    machine_client: cognito.UserPoolClient
    domain: cognito.UserPoolDomain
    names: UserPoolNames

    @property
    def token_url(self) -> str:
        return f"{self.domain.base_url()}/oauth2/token"

    @property
    def authorize_url(self) -> str:
        return f"{self.domain.base_url()}/oauth2/authorize"


def sign_in_pool(scope: Construct, *, prefix: str, jwt: JwtConfig) -> SignInPool:
    """The pool (no self sign-up: an operator adds users), its resource server, clients, group and domain."""
    pool = cognito.UserPool(
        scope,
        "UserPool",
        user_pool_name=prefix,
        self_sign_up_enabled=False,
        sign_in_aliases=cognito.SignInAliases(email=True),
        password_policy=cognito.PasswordPolicy(
            min_length=12, require_digits=True, require_lowercase=True, require_uppercase=True, require_symbols=True
        ),
        account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
    )
    admin = cognito.ResourceServerScope(scope_name=COGNITO_ADMIN_SCOPE, scope_description="sees every task of the mesh")
    server = pool.add_resource_server("ResourceServer", identifier=prefix, scopes=[admin])
    client = pool.add_client(
        "AppClient",
        user_pool_client_name=prefix,
        generate_secret=False,
        auth_flows=cognito.AuthFlow(user_srp=True),
        o_auth=cognito.OAuthSettings(
            flows=cognito.OAuthFlows(authorization_code_grant=True),
            scopes=[cognito.OAuthScope.OPENID],
            callback_urls=[SIGN_IN_CALLBACK],
        ),
    )
    machine = pool.add_client(
        "MachineClient",
        user_pool_client_name=f"{prefix}-machine",
        generate_secret=True,
        auth_flows=cognito.AuthFlow(),
        o_auth=cognito.OAuthSettings(
            flows=cognito.OAuthFlows(client_credentials=True),
            scopes=[cognito.OAuthScope.resource_server(server, admin)],
        ),
    )
    pool.add_group("AdminsGroup", group_name=COGNITO_ADMINS_GROUP, description="its users see every task of the mesh")
    domain = pool.add_domain(
        "Domain",
        cognito_domain=cognito.CognitoDomainOptions(
            domain_prefix=jwt.domain_prefix or f"{prefix}-{cdk.Aws.ACCOUNT_ID}"
        ),
    )
    issuer = f"https://cognito-idp.{cdk.Aws.REGION}.{cdk.Aws.URL_SUFFIX}/{pool.user_pool_id}"
    names = UserPoolNames(
        issuer=issuer,
        client=client.user_pool_client_id,
        machine_client=machine.user_pool_client_id,
        admin_scope=f"{prefix}/{COGNITO_ADMIN_SCOPE}",
        domain=domain.base_url(),
    )
    _explain_pool_findings(pool)
    return SignInPool(pool, client, machine, domain, names)


def _explain_pool_findings(pool: cognito.UserPool) -> None:
    """cdk-nag findings on the sign-in user pool that are the mesh owner's choice."""
    acknowledge(
        pool,
        "COG2",
        "MFA is the pool owner's choice (users are added by an operator, no self sign-up); it can be made "
        "required on the pool without changing the gateway, which verifies the tokens the pool issues.",
    )
    acknowledge(
        pool,
        "COG8",
        "The Plus feature plan (threat protection) is priced per user; the pool owner moves the pool to it "
        "where wanted, and the gateway's verification does not depend on it.",
    )

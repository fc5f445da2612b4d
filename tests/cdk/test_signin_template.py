"""The stack of a mesh with sign-in (`gateway.auth: jwt`): API Gateway lets every request through to the
function, which verifies tokens (cdk-nag's findings acknowledged), with the issuer in its environment;
with `cognito: true` the stack makes the user pool, its admin scope and app client, and the function
trusts the pool's issuer. A bad `gateway.jwt` fails `cdk synth` naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from asya_cdk.config import MeshConfig
from asya_cdk.limits import COGNITO_CLIENT_ID_MAX
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.longest import longest_environments
from tests.support.templates import ROOT, cfn_lint, resources, run_cdk_app, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ISSUER = "https://login.example.com/asya"


def _mesh(jwt: dict[str, Any]) -> LoadedMesh:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["gateway"] = {"auth": "jwt", "jwt": jwt, "admins": {"scopes": ["mesh/admin"], "roles": ["ops"]}}
    return LoadedMesh(config=MeshConfig.model_validate(document), base=EXAMPLE.parent)


def _synthesized(tmp_path: Path, jwt: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    _, template, outdir = synthesize(_mesh(jwt), tmp_path)  # cdk-nag: every finding acknowledged, or it raises
    return template, outdir


@pytest.fixture(scope="module")
def with_issuer(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return _synthesized(tmp_path_factory.mktemp("cdk.out"), {"issuer": ISSUER, "audiences": ["asya-api"]})


@pytest.fixture(scope="module")
def with_cognito(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return _synthesized(tmp_path_factory.mktemp("cdk.out"), {"cognito": True, "audiences": ["asya-api"]})


def _gateway_auth(template: dict[str, Any]) -> Any:
    [gateway] = [
        f for f in resources(template, "AWS::Lambda::Function").values() if f["FunctionName"] == "asya-reviews-gateway"
    ]
    return gateway["Environment"]["Variables"]["ASYA_GATEWAY_AUTH"]


@pytest.mark.parametrize("variant", ["with_issuer", "with_cognito"])
def test_methods_let_requests_through_to_the_function_that_verifies_them(
    variant: str, request: pytest.FixtureRequest
) -> None:
    template, _ = request.getfixturevalue(variant)
    for method in resources(template, "AWS::ApiGateway::Method").values():
        assert (method["AuthorizationType"], method["ApiKeyRequired"]) == ("NONE", False)
    assert not resources(template, "AWS::ApiGateway::UsagePlan")
    assert not resources(template, "AWS::ApiGateway::ApiKey")


def test_the_function_trusts_the_mesh_files_issuer(with_issuer: tuple[dict[str, Any], Path]) -> None:
    template, _ = with_issuer
    auth = json.loads(_gateway_auth(template))
    assert auth["mode"] == "jwt"
    assert (auth["jwt"]["issuer"], auth["jwt"]["audiences"]) == (ISSUER, ["asya-api"])
    assert auth["admins"]["scopes"] == ["mesh/admin"]
    assert not resources(template, "AWS::Cognito::UserPool")
    assert not {"UserPoolId", "UserPoolClientId", "Issuer"} & set(template["Outputs"])


def test_cognito_makes_the_pool_its_clients_group_and_domain_and_the_function_trusts_it(
    with_cognito: tuple[dict[str, Any], Path],
) -> None:
    """Usable on AWS: a domain (no OAuth endpoints without one), a code-flow client for people that
    cannot ask for the admin scope (Cognito would grant it to any user who asks), a client credentials
    client with a secret that may, and the `admins` group the function takes as admins."""
    template, outdir = with_cognito
    [pool_id] = resources(template, "AWS::Cognito::UserPool")
    pool = resources(template, "AWS::Cognito::UserPool")[pool_id]
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    [server] = resources(template, "AWS::Cognito::UserPoolResourceServer").values()
    assert server["UserPoolId"] == {"Ref": pool_id}
    assert (server["Identifier"], server["Scopes"][0]["ScopeName"]) == ("asya-reviews", "admin")
    [server_id] = resources(template, "AWS::Cognito::UserPoolResourceServer")
    clients = resources(template, "AWS::Cognito::UserPoolClient")
    [client_id] = [name for name, client in clients.items() if client["AllowedOAuthFlows"] == ["code"]]
    [machine_id] = [name for name, client in clients.items() if client["AllowedOAuthFlows"] == ["client_credentials"]]
    client, machine = clients[client_id], clients[machine_id]
    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthScopes"] == ["openid"]
    assert client["CallbackURLs"] == ["http://localhost:8080/callback"]
    admin_scope = {"Fn::Join": ["", [{"Ref": server_id}, "/admin"]]}
    assert (machine["GenerateSecret"], machine["AllowedOAuthScopes"]) == (True, [admin_scope])
    [group] = resources(template, "AWS::Cognito::UserPoolGroup").values()
    assert (group["GroupName"], group["UserPoolId"]) == ("admins", {"Ref": pool_id})
    [domain] = resources(template, "AWS::Cognito::UserPoolDomain").values()
    assert domain["Domain"] == {"Fn::Join": ["", ["asya-reviews-", {"Ref": "AWS::AccountId"}]]}
    outputs = template["Outputs"]
    assert outputs["UserPoolId"]["Value"] == {"Ref": pool_id}
    assert outputs["UserPoolClientId"]["Value"] == {"Ref": client_id}
    assert outputs["MachineClientId"]["Value"] == {"Ref": machine_id}
    for name, path in (("TokenUrl", "/oauth2/token"), ("AuthorizeUrl", "/oauth2/authorize")):
        url = json.dumps(outputs[name]["Value"])
        for part in ("https://", ".auth.", ".amazoncognito.com", path):
            assert part in url, (name, part)
    issuer = json.dumps(outputs["Issuer"]["Value"])
    assert "https://cognito-idp." in issuer
    assert '"Ref": "AWS::Region"' in issuer
    assert f'"Ref": "{pool_id}"' in issuer
    environment = json.dumps(_gateway_auth(template))  # built at deploy: the pool's id and the clients'
    assert f'"Ref": "{pool_id}"' in environment
    assert f'"Ref": "{client_id}"' in environment
    assert f'"Ref": "{machine_id}"' in environment
    assert 'roles\\":[\\"ops\\",\\"admins\\"]' in environment
    assert "asya-reviews/admin" in environment
    assert "mesh/admin" in environment
    result = cfn_lint(outdir / "asya-reviews.template.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pool_outlives_the_stack_as_the_docs_say(with_cognito: tuple[dict[str, Any], Path]) -> None:
    """docs/callers.md and docs/deploy.md: `cdk destroy` leaves the pool and its users (a new deploy
    makes a new pool, new issuer, new client ids)."""
    template, _ = with_cognito
    [pool] = [r for r in template["Resources"].values() if r["Type"] == "AWS::Cognito::UserPool"]
    assert (pool["DeletionPolicy"], pool["UpdateReplacePolicy"]) == ("Retain", "Retain")
    assert "retained" in (ROOT / "docs" / "callers.md").read_text()


@pytest.mark.parametrize(
    ("namespace", "jwt", "named"),
    [
        ("laws", {"cognito": True, "audiences": ["a"]}, "gateway.jwt.domain_prefix: the pool's sign-in domain"),
        ("demo", {"cognito": True, "audiences": ["a"], "domain_prefix": "my-cognito"}, "containing 'cognito'"),
        ("demo", {"cognito": True, "audiences": ["a"], "domain_prefix": "Demo"}, "gateway.jwt.domain_prefix"),
        ("demo", {"issuer": ISSUER, "audiences": ["a"], "domain_prefix": "demo"}, "the pool 'cognito: true' makes"),
    ],
    ids=["reserved-word-in-namespace", "reserved-word-in-prefix", "uppercase", "prefix-without-pool"],
)
def test_a_domain_prefix_cognito_would_refuse_fails_at_load(
    tmp_path: Path, namespace: str, jwt: dict[str, Any], named: str
) -> None:
    bad = tmp_path / "mesh.yaml"
    document = {"namespace": namespace, "actors": {"a": {"handler": "m.f", "code": "."}}}
    bad.write_text(yaml.safe_dump({**document, "gateway": {"auth": "jwt", "jwt": jwt}}))
    with pytest.raises(MeshConfigError) as refused:
        load_mesh(bad)
    assert named in str(refused.value)


@pytest.mark.parametrize(
    ("gateway", "named"),
    [
        ("{auth: jwt}", "'auth: jwt' needs a 'jwt' block"),
        ("{auth: jwt, jwt: {issuer: 'http://login.example.com', audiences: [a]}}", "gateway.jwt.issuer"),
        ("{auth: jwt, jwt: {issuer: 'https://login.example.com', cognito: true, audiences: [a]}}", "exactly one of"),
        ("{auth: jwt, jwt: {issuer: 'https://login.example.com'}}", "gateway.jwt.audiences: Field required"),
    ],
    ids=["no-jwt-block", "http-issuer", "issuer-and-cognito", "no-audiences"],
)
def test_a_bad_sign_in_config_fails_synth_naming_the_field(tmp_path: Path, gateway: str, named: str) -> None:
    bad = tmp_path / "mesh.yaml"
    bad.write_text(f"namespace: demo\nactors:\n  a: {{handler: m.f, code: .}}\ngateway: {gateway}\n")
    result = run_cdk_app(bad, tmp_path / "out")
    assert result.returncode != 0
    assert f"{bad}: gateway" in result.stderr
    assert named in result.stderr, result.stderr[-2000:]


def test_the_environment_size_check_counts_the_pool_at_its_longest() -> None:
    """`asya check` and synth weigh each environment at its longest: the pool's issuer and client too."""
    sizes = {f.function: size for f, size in longest_environments(_mesh({"cognito": True, "audiences": ["a"]}))}
    plain = {f.function: size for f, size in longest_environments(_mesh({"issuer": ISSUER, "audiences": ["a"]}))}
    assert sizes["asya-reviews-gateway"] - plain["asya-reviews-gateway"] > COGNITO_CLIENT_ID_MAX


def _policy_statements(template: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    """The statements of the policies attached to the roles whose logical id starts with `role_prefix`."""
    return [
        statement
        for policy in resources(template, "AWS::IAM::Policy").values()
        if any(role["Ref"].startswith(role_prefix) for role in policy["Roles"])
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def test_with_the_pool_mcp_hosts_register_on_an_open_throttled_route_and_the_function_makes_clients_of_it(
    with_cognito: tuple[dict[str, Any], Path],
) -> None:
    """`POST /oauth/register` is open (a host registers before anyone signs in), throttled apart from
    the stage, and the gateway's role may make and list app clients of the mesh's pool alone."""
    template, _ = with_cognito
    [pool_id] = resources(template, "AWS::Cognito::UserPool")
    paths = {r["PathPart"]: name for name, r in resources(template, "AWS::ApiGateway::Resource").items()}
    register = [
        m
        for m in resources(template, "AWS::ApiGateway::Method").values()
        if m["ResourceId"] == {"Ref": paths["register"]}
    ]
    assert [(m["HttpMethod"], m["AuthorizationType"]) for m in register] == [("POST", "NONE")]
    [stage] = resources(template, "AWS::ApiGateway::Stage").values()
    [throttled] = [s for s in stage["MethodSettings"] if s["ResourcePath"] == "/~1oauth~1register"]
    assert (throttled["HttpMethod"], throttled["ThrottlingRateLimit"], throttled["ThrottlingBurstLimit"]) == (
        "POST",
        0.2,
        5,
    )
    granted = [
        s for s in _policy_statements(template, "MeshGatewayApiRole") if "cognito-idp" in json.dumps(s["Action"])
    ]
    assert granted == [
        {
            "Action": ["cognito-idp:CreateUserPoolClient", "cognito-idp:ListUserPoolClients"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [pool_id, "Arn"]},
        }
    ]
    environment = json.dumps(_gateway_auth(template))
    assert '\\"registration\\":{\\"max_clients\\":100,\\"redirect_hosts\\":[]}' in environment
    assert "hosted_ui" in environment
    assert ".amazoncognito.com" in environment


def test_without_the_pool_there_is_no_registration_route_or_cognito_grant(
    with_issuer: tuple[dict[str, Any], Path],
) -> None:
    template, _ = with_issuer
    assert "register" not in {r["PathPart"] for r in resources(template, "AWS::ApiGateway::Resource").values()}
    assert "cognito-idp" not in json.dumps(resources(template, "AWS::IAM::Policy"))
    assert "registration" not in _gateway_auth(template)


def test_registration_is_for_the_pool_the_stack_makes_and_its_redirect_hosts_are_names(tmp_path: Path) -> None:
    for jwt, named in (
        ({"issuer": ISSUER, "audiences": ["a"], "registration": {"max_clients": 5}}, "registration: the gateway"),
        ({"cognito": True, "audiences": ["a"], "registration": {"redirect_hosts": ["https://x"]}}, "redirect_hosts"),
        ({"cognito": True, "audiences": ["a"], "registration": {"max_clients": 901}}, "max_clients"),
    ):
        bad = tmp_path / "mesh.yaml"
        document = {"namespace": "demo", "actors": {"a": {"handler": "m.f", "code": "."}}}
        bad.write_text(yaml.safe_dump({**document, "gateway": {"auth": "jwt", "jwt": jwt}}))
        with pytest.raises(MeshConfigError) as refused:
            load_mesh(bad)
        assert named in str(refused.value)

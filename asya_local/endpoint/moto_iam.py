"""IAM on the local endpoint, so a missing grant is an AccessDenied here as on AWS.

moto 5.2.5 can authenticate every request (`INITIAL_NO_AUTH_ACTION_COUNT`) and collects the caller's
policies (an IAM user's, or an assumed role's inline and attached ones), but its evaluation is too
coarse for the mesh's least-privilege roles: DynamoDB, DynamoDB Streams and EMR Serverless requests are
checked against the resource `*`, so a grant on a table ARN never matches; an Allow statement whose
`Condition` does not hold denies outright (it should only not allow) and only `sts:ExternalId` is ever
known, so every statement with `dynamodb:LeadingKeys` or `s3:prefix` denies; `NotResource` is ignored;
batch operations are checked under their own names (`sqs:SendMessageBatch`, not `sqs:SendMessage`);
a trust policy naming a service principal (`lambda.amazonaws.com`) crashes `AssumeRole`; and its
recomputed SigV4 signature differs from botocore's for some REST paths (Lambda's
`ListEventSourceMappings`), refusing a correctly signed request.

`apply_iam_fix()` keeps moto's authentication (the access key or session token must be one the endpoint
issued) but not its signature check, keeps its policy collection, and replaces the decision with
`decide`, which follows AWS's evaluation logic for identity policies: an explicit Deny wins, else
some Allow must match the action, every resource the request touches, and its conditions. The
request's resources and condition keys come from `request_context`, for the services the mesh calls.
`enforce()` turns authentication on after creating the local administrator (an IAM user allowed
everything, with the endpoint's administrator key: `asya_local.admin_key`, whose signatures the
endpoint verifies itself, `asya_local.endpoint.admin_signature`) that deploys stacks and drives tests; the
administrator also stands in for AWS services when it assumes a role whose trust policy names one
(`asya_local.roles`). What is not modelled is listed in docs/local-stack.md ("IAM").
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlparse

from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.iam.access_control import IAMRequestBase, IAMUserAccessKey
from moto.iam.models import iam_backends

from asya_local.endpoint.cloudwatch_conditions import NAMESPACE_KEY, namespace_condition
from asya_local.endpoint.cloudwatch_conditions import SERVICE as CLOUDWATCH
from asya_local.endpoint.dynamodb_conditions import condition_keys
from asya_local.functions.lambda_shapes import REGION

ADMIN_USER = "asya-local-admin"
ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
# Condition keys this evaluator computes from the request; a condition on any other key is taken as met.
KNOWN_KEYS = frozenset(
    {
        "dynamodb:leadingkeys",
        "dynamodb:attributes",
        "dynamodb:select",
        "dynamodb:returnvalues",
        "s3:prefix",
        NAMESPACE_KEY,
    }
)
# Operations IAM authorizes under another action's name (moto checks the operation's own name).
IAM_ACTIONS = {
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
    "s3:HeadBucket": "s3:ListBucket",
    # moto names X-Ray's operations by their URL's path (`POST /TraceSegments`)
    "xray:TraceSegments": "xray:PutTraceSegments",
    "xray:TelemetryRecords": "xray:PutTelemetryRecords",
    "xray:TraceSummaries": "xray:GetTraceSummaries",
    "xray:Traces": "xray:BatchGetTraces",
}
# A DynamoDB transaction has no IAM action of its own: each of its actions is authorized as the
# operation it stands for (DynamoDB developer guide, "Using IAM with DynamoDB transactions").
TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
_KEY_CONDITION = re.compile(r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")


@dataclass(frozen=True)
class Request:
    """What an authorization decision needs: the action, every resource it touches and its condition keys."""

    action: str  # service:Operation
    resources: tuple[str, ...]  # "*" when the resource is not known
    context: Mapping[str, tuple[str, ...]]  # lower-cased condition key → values present in the request


@functools.lru_cache(maxsize=1024)
def statements(document: str) -> tuple[dict[str, Any], ...]:
    """A policy document's statements, parsed once per distinct document (roles rarely change)."""
    parsed = json.loads(document)["Statement"]
    return tuple(parsed if isinstance(parsed, list) else [parsed])


def _values(element: Any) -> list[str]:
    return [element] if isinstance(element, str) else list(element)


@functools.lru_cache(maxsize=4096)
def _matches(pattern: str, value: str, case_sensitive: bool = True) -> bool:
    """IAM wildcards: `*` any run of characters, `?` one character."""
    regex = fnmatch.translate(pattern)
    return re.match(regex, value, 0 if case_sensitive else re.IGNORECASE) is not None


def _any_match(patterns: Any, value: str, case_sensitive: bool = True) -> bool:
    return any(_matches(pattern, value, case_sensitive) for pattern in _values(patterns))


def _action_applies(statement: Mapping[str, Any], action: str) -> bool:
    if "NotAction" in statement:
        return not _any_match(statement["NotAction"], action, case_sensitive=False)
    return _any_match(statement.get("Action", []), action, case_sensitive=False)


def _resource_applies(statement: Mapping[str, Any], resource: str) -> bool:
    if resource == "*":  # the request's resource is not known here: only the action is checked
        return True
    if "NotResource" in statement:
        return not _any_match(statement["NotResource"], resource)
    return _any_match(statement.get("Resource", []), resource)


def _operator_holds(operator: str, expected: list[str], actual: str) -> bool:
    if operator in ("StringEquals", "ArnEquals"):
        return actual in expected
    if operator in ("StringLike", "ArnLike"):
        return any(_matches(pattern, actual) for pattern in expected)
    if operator == "StringNotEquals":
        return actual not in expected
    if operator == "StringNotLike":
        return not any(_matches(pattern, actual) for pattern in expected)
    return True  # an operator this evaluator does not model is taken as met


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, tuple[str, ...]]) -> bool:
    """AWS's rules for the keys in `KNOWN_KEYS`: a key absent from the request fails the condition,
    except under `ForAllValues:` (vacuously true) or `…IfExists`; other keys are taken as met. A key
    with several values (`dynamodb:Attributes`) holds under `ForAllValues:` if every value matches,
    under `ForAnyValue:` (or no qualifier) if one does."""
    for qualified, keys in conditions.items():
        quantifier, _, operator = qualified.rpartition(":")
        if_exists = operator.endswith("IfExists")
        operator = operator.removesuffix("IfExists")
        for name, expected_values in keys.items():
            key = name.lower()
            if key not in KNOWN_KEYS:
                continue
            expected = _values(expected_values)
            actual = context.get(key, ())
            if not actual:
                if quantifier == "ForAllValues" or if_exists:
                    continue
                return False
            if quantifier == "ForAllValues":
                holds = all(_operator_holds(operator, expected, value) for value in actual)
            else:
                holds = any(_operator_holds(operator, expected, value) for value in actual)
            if not holds:
                return False
    return True


def decide(documents: Iterable[str], request: Request) -> bool:
    """True if the policies allow the request: no Deny statement applies, and for every resource some
    Allow statement applies (action, resource and conditions). Decisions are remembered: a worker
    repeats the same few requests (its queue, its destinations) all day."""
    context = tuple(sorted(request.context.items()))
    return _decide(tuple(documents), request.action, request.resources, context)


@functools.lru_cache(maxsize=8192)
def _decide(
    documents: tuple[str, ...],
    action: str,
    resources: tuple[str, ...],
    context_items: tuple[tuple[str, tuple[str, ...]], ...],
) -> bool:
    request = Request(action, resources, dict(context_items))
    parsed = [statement for document in documents for statement in statements(document)]
    applicable = [
        statement
        for statement in parsed
        if _action_applies(statement, request.action)
        and _conditions_hold(statement.get("Condition", {}), request.context)
    ]
    for resource in request.resources:
        if any(s.get("Effect") == "Deny" and _resource_applies(s, resource) for s in applicable):
            return False
        if not any(s.get("Effect") == "Allow" and _resource_applies(s, resource) for s in applicable):
            return False
    return True


def trusts(document: str, caller_arn: str, *, stands_in_for_services: bool) -> bool:
    """Whether a role's trust policy lets the caller `sts:AssumeRole`: an `AWS` principal naming the
    caller, its account or `*`; or, for the local administrator, any service principal (it stands in
    for Lambda and EMR Serverless; the trust policy's conditions are not checked then)."""
    account = caller_arn.split(":")[4]
    for statement in statements(document):
        if statement.get("Effect") != "Allow" or not _action_applies(statement, "sts:AssumeRole"):
            continue
        principal = statement.get("Principal", {})
        if principal == "*":
            return True
        aws = _values(principal.get("AWS", []))
        if any(p in ("*", caller_arn, account, f"arn:aws:iam::{account}:root") for p in aws):
            return True
        if stands_in_for_services and principal.get("Service"):
            return True
    return False


def trusted_services(document: str) -> set[str]:
    """The service principals a trust policy allows to assume the role."""
    services: set[str] = set()
    for statement in statements(document):
        if statement.get("Effect") == "Allow" and _action_applies(statement, "sts:AssumeRole"):
            principal = statement.get("Principal", {})
            if isinstance(principal, dict):
                services.update(_values(principal.get("Service", [])))
    return services


# --- what a request touches, for the services the mesh calls ------------------------------------------


def request_context(
    service: str, action: str, resource: str, *, body: bytes, path: str, region: str, account: str
) -> Request:
    """The resources and condition keys of one request; `resource` is what moto determined itself
    (a queue's ARN, an S3 bucket's or object's, a role's for `AssumeRole`, else `*`)."""
    service = CLOUDWATCH if service == "monitoring" else service
    qualified = IAM_ACTIONS.get(f"{service}:{action}", f"{service}:{action}")
    if service == CLOUDWATCH:
        return Request(qualified, (resource,), namespace_condition(action, body))
    if service == "dynamodb":
        payload = json.loads(body or b"{}")
        resources = tuple(_dynamodb_resources(payload, region, account)) or (resource,)
        leading = tuple(_leading_keys(payload, region, account))
        context = {"dynamodb:leadingkeys": leading} if leading else {}
        return Request(qualified, resources, context | condition_keys(action, payload))
    if service == "emr-serverless":
        parts = urlparse(path).path.strip("/").split("/")
        if parts[:1] == ["applications"] and len(parts) >= 2:
            arn = f"arn:aws:emr-serverless:{region}:{account}:/applications/{parts[1]}"
            if len(parts) >= 4 and parts[2] == "jobruns":
                arn += f"/jobruns/{parts[3]}"
            return Request(qualified, (arn,), {})
    if service == "s3":
        prefix = parse_qs(urlparse(path).query).get("prefix")
        return Request(qualified, (resource,), {"s3:prefix": tuple(prefix)} if prefix else {})
    if service == "secretsmanager" and "SecretId" in (payload := json.loads(body or b"{}")):
        return Request(qualified, (_secret_arn(str(payload["SecretId"]), region, account),), {})
    if service == "cognito-idp" and "UserPoolId" in (payload := json.loads(body or b"{}")):
        return Request(qualified, (f"arn:aws:cognito-idp:{region}:{account}:userpool/{payload['UserPoolId']}",), {})
    if service == "ssm" and (names := _parameter_names(json.loads(body or b"{}"))):
        arns = tuple(f"arn:aws:ssm:{region}:{account}:parameter/{name.removeprefix('/')}" for name in names)
        return Request(qualified, arns, {})
    return Request(qualified, (resource,), {})


def request_contexts(
    service: str, action: str, resource: str, *, body: bytes, path: str, region: str, account: str
) -> list[Request]:
    """Every authorization one request needs: one, or one per action of a DynamoDB transaction."""
    if service == "dynamodb" and action in ("TransactWriteItems", "TransactGetItems"):
        return [_transaction_action(item, region, account) for item in json.loads(body or b"{}")["TransactItems"]]
    return [request_context(service, action, resource, body=body, path=path, region=region, account=account)]


def _transaction_action(item: Mapping[str, Any], region: str, account: str) -> Request:
    ((kind, action),) = item.items()
    table = str(action["TableName"])
    keys = tuple(_partition_values(table, None, [action.get("Key") or action.get("Item") or {}], region, account))
    operation = TRANSACTION_ACTIONS[kind]
    context = ({"dynamodb:leadingkeys": keys} if keys else {}) | condition_keys(operation, action)
    return Request(f"dynamodb:{operation}", (_table_arn(region, account, table),), context)


def _secret_arn(secret_id: str, region: str, account: str) -> str:
    """The ARN of the secret a request names (by name or ARN), as IAM sees it: with the six characters
    Secrets Manager appends, when the secret exists."""
    from moto.secretsmanager.models import secretsmanager_backends

    found = secretsmanager_backends[account][region].secrets.get(secret_id)
    if found is not None:
        return str(found.arn)
    if secret_id.startswith("arn:"):
        return secret_id
    return f"arn:aws:secretsmanager:{region}:{account}:secret:{secret_id}"


def _parameter_names(payload: Mapping[str, Any]) -> list[str]:
    """The parameters a GetParameter(s) request reads."""
    names = payload.get("Names") or ([payload["Name"]] if "Name" in payload else [])
    return [str(name) for name in names]


def _table_arn(region: str, account: str, table: str) -> str:
    return f"arn:aws:dynamodb:{region}:{account}:table/{table}"


def _dynamodb_resources(payload: Mapping[str, Any], region: str, account: str) -> Iterator[str]:
    if "StreamArn" in payload:
        yield payload["StreamArn"]
    elif "TableName" in payload:
        arn = _table_arn(region, account, payload["TableName"])
        yield f"{arn}/index/{payload['IndexName']}" if payload.get("IndexName") else arn
    for table in payload.get("RequestItems", {}):
        yield _table_arn(region, account, table)


def _leading_keys(payload: Mapping[str, Any], region: str, account: str) -> Iterator[str]:
    """Partition key values the request reads or writes (`dynamodb:LeadingKeys`)."""
    if "TableName" in payload:
        items = [payload.get("Key") or payload.get("Item") or {}]
        yield from _partition_values(payload["TableName"], payload.get("IndexName"), items, region, account)
        if "KeyConditionExpression" in payload:
            yield from _queried_keys(payload, region, account)
    for table, request in payload.get("RequestItems", {}).items():
        if isinstance(request, dict):  # BatchGetItem
            items = request.get("Keys", [])
        else:  # BatchWriteItem
            items = [
                (write.get("PutRequest") or {}).get("Item") or (write.get("DeleteRequest") or {}).get("Key") or {}
                for write in request
            ]
        yield from _partition_values(table, None, items, region, account)


def _hash_key(table_name: str, index: str | None, region: str, account: str) -> str | None:
    from moto.dynamodb.models import dynamodb_backends

    try:
        table = dynamodb_backends[account][region].get_table(table_name)
    except Exception:  # noqa: BLE001 - no such table: the operation itself reports it
        return None
    if index is None:
        return str(table.hash_key_attr)
    for found in [*table.global_indexes, *table.indexes]:
        if found.name == index:
            return next((k["AttributeName"] for k in found.schema if k["KeyType"] == "HASH"), None)
    return None


def _partition_values(
    table: str, index: str | None, items: list[dict[str, Any]], region: str, account: str
) -> Iterator[str]:
    key = _hash_key(table, index, region, account)
    for item in items:
        value = item.get(key or "", {})
        if value:
            yield str(next(iter(value.values())))


def _queried_keys(payload: Mapping[str, Any], region: str, account: str) -> Iterator[str]:
    key = _hash_key(payload["TableName"], payload.get("IndexName"), region, account)
    names = payload.get("ExpressionAttributeNames", {})
    values = payload.get("ExpressionAttributeValues", {})
    for name, placeholder in _KEY_CONDITION.findall(payload["KeyConditionExpression"]):
        if names.get(name, name) == key and placeholder in values:
            yield str(next(iter(values[placeholder].values())))


# --- the patch ----------------------------------------------------------------------------------------


def _check_action_permitted(self: IAMRequestBase, resource: str) -> None:
    """Replaces `IAMRequestBase.check_action_permitted`: same inputs, AWS's decision."""
    if self._action == "sts:GetCallerIdentity":  # allowed whatever the policies say, as on AWS
        return
    service, _, action = self._action.partition(":")
    requests = request_contexts(
        service, action, resource, body=self._body, path=self._path, region=self._region, account=self.account_id
    )
    documents = [policy_document(policy) for policy in self._access_key.collect_policies()]
    if not all(decide(documents, request) for request in requests):
        self._raise_access_denied()
    if self._action == "sts:AssumeRole":
        role = self.backend.get_role_by_arn(resource)
        caller = self._access_key.arn
        is_admin = isinstance(self._access_key, IAMUserAccessKey) and caller.endswith(f":user/{ADMIN_USER}")
        if not trusts(role.assume_role_policy_document, caller, stands_in_for_services=is_admin):
            self._raise_access_denied()


def policy_document(policy: Any) -> str:
    """A collected policy's document: an inline one is a string or a dict, a managed one a `Policy`."""
    if isinstance(policy, str):
        return policy
    if isinstance(policy, dict):
        return str(policy["policy_document"])
    return str(next(version.document for version in policy.versions if version.is_default))


def _skip_signature(self: IAMRequestBase) -> None:
    """Replaces `IAMRequestBase.check_signature`, which refuses some correctly signed requests."""


_moto_request_init = IAMRequestBase.__init__
_PRESIGNED_KEYS = ("X-Amz-Credential", "AWSAccessKeyId")  # SigV4's and SigV2's query parameter for the key


def _request_init(self: IAMRequestBase, *args: Any, **kwargs: Any) -> None:
    """Wraps `IAMRequestBase.__init__`, which reads the caller's key from the `Authorization` header
    only (and fails with a KeyError, a 500, without it): a presigned URL carries its signature in the
    query string (SigV4's `X-Amz-*` parameters, or SigV2's). Its key and session token are handed on as
    headers, and a link used after it expired is refused, as S3 refuses it."""
    names = ("account_id", "method", "path", "data", "body", "headers", "action")
    given = dict(zip(names, args, strict=False)) | kwargs
    query = parse_qs(urlparse(str(given["path"])).query)
    presigned = "Authorization" not in given["headers"] and any(key in query for key in _PRESIGNED_KEYS)
    if presigned:
        given["headers"] = presigned_headers(given["headers"], query)
    _moto_request_init(self, **given)
    if presigned and presigned_link_expired(query, time.time()):
        self._raise_access_denied()


def presigned_headers(headers: Mapping[str, str], query: Mapping[str, list[str]]) -> dict[str, str]:
    """The headers a presigned request's query string stands for: its credential (SigV2 names no scope:
    S3 in the local region), and its session token."""
    if "X-Amz-Credential" in query:
        credential, token = query["X-Amz-Credential"][0], query.get("X-Amz-Security-Token")
    else:
        credential = f"{query['AWSAccessKeyId'][0]}/00000000/{REGION}/s3/aws4_request"
        token = query.get("x-amz-security-token")
    given = {**headers, "Authorization": f"AWS4-HMAC-SHA256 Credential={credential}, "}
    if token:
        given["X-Amz-Security-Token"] = token[0]
    return given


def presigned_link_expired(query: Mapping[str, list[str]], now: float) -> bool:
    """Past SigV4's `X-Amz-Date` + `X-Amz-Expires`, or SigV2's `Expires` (seconds since the epoch)."""
    if "Expires" in query:
        return now > int(query["Expires"][0])
    signed = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
    return now > signed + int(query.get("X-Amz-Expires", ["604800"])[0])


def apply_iam_fix() -> None:
    IAMRequestBase.check_action_permitted = _check_action_permitted  # type: ignore[method-assign]
    IAMRequestBase.check_signature = _skip_signature  # type: ignore[method-assign]
    IAMRequestBase.__init__ = _request_init  # type: ignore[method-assign]


def enforce(access_key_id: str, secret_access_key: str, account: str) -> None:
    """Create the local administrator with this key (while authentication is still off), then
    authenticate and authorize every request from now on."""
    iam = iam_backends[account]["aws"]
    iam.create_user(region_name="us-east-1", user_name=ADMIN_USER, path="/", tags=[])
    iam.put_user_policy(ADMIN_USER, "allow-all", json.dumps(ALLOW_ALL))
    key = iam.create_access_key(ADMIN_USER)
    key.access_key_id, key.secret_access_key = access_key_id, secret_access_key
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0

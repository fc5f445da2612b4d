"""What an actor needs beyond its code, as the mesh file says it: IAM grants of its own, secrets, model
and data files, a network, warm capacity. The shapes and AWS's rules for each field are checked here,
when the file loads, so a malformed ARN or action fails `cdk synth` and `asya up` with a message that
names the field; what they become is `asya_cdk.actor`'s (the function and its role) and the sidecar's
(`asya.startup`: secrets and files at the execution environment's start).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    GetJsonSchemaHandler,
    Tag,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

PARTITION = r"(?:aws|aws-cn|aws-us-gov|\$\{AWS::Partition\})"
# Placeholders a grant's resources may use; CloudFormation substitutes them at deploy (Fn::Sub).
PLACEHOLDERS = ("${AWS::Partition}", "${AWS::Region}", "${AWS::AccountId}")
_ARN = re.compile(
    rf"^arn:{PARTITION}:(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*|\$\{{AWS::Region\}}|\*)"
    r":(?P<account>\d{12}|\$\{AWS::AccountId\}|aws|\*|):(?P<resource>.+)$"
)
_ACTION = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9*?]+$")
_MANAGED_POLICY = re.compile(
    rf"^arn:{PARTITION}:iam::(?P<owner>aws|\d{{12}}|\$\{{AWS::AccountId\}}):policy/[\w+=,.@/-]+$"
)
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
_SECRET_ARN = re.compile(r"^arn:(?:aws|aws-cn|aws-us-gov):secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$")
_PARAMETER_NAME = re.compile(r"^/?[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*$")
_KMS_KEY_ARN = re.compile(r"^arn:(?:aws|aws-cn|aws-us-gov):kms:[a-z0-9-]+:\d{12}:key/(?:mrk-)?[0-9a-f-]{32,36}$")
_LAYER_ARN = re.compile(r"^arn:(?:aws|aws-cn|aws-us-gov):lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]{1,140}:\d+$")
_S3_URL = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<key>.*)$")
VARIABLE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
# Lambda sets these itself; a function may not (CreateFunction refuses them).
LAMBDA_RESERVED = frozenset(
    {
        "_HANDLER",
        "_X_AMZN_TRACE_ID",
        "LAMBDA_TASK_ROOT",
        "LAMBDA_RUNTIME_DIR",
        "TZ",
    }
)
LAMBDA_MAX_LAYERS = 5  # per function, the sidecar's included
LAMBDA_MAX_SUBNETS = 16
LAMBDA_MAX_SECURITY_GROUPS = 5
LAMBDA_EPHEMERAL_STORAGE_MB = (512, 10_240)
TMP_SPARE_MB = 64  # /tmp kept free beyond an actor's files, for whatever else its libraries write there
VariableName = Annotated[str, Field(pattern=VARIABLE_NAME)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_placeholders(text: str) -> None:
    for found in re.findall(r"\$\{[^}]*\}", text):
        if found not in PLACEHOLDERS:
            raise ValueError(f"{found} is not a placeholder CloudFormation fills here; use {', '.join(PLACEHOLDERS)}")


def is_wildcard_action(action: str) -> bool:
    """Every action, or every action of a service."""
    return action == "*" or action.endswith(":*")


class Statement(_Strict):
    """One IAM statement the actor's role gets. `reason` says why a wildcard (every action, every action of
    a service, or every resource) is needed; it is required then, and it is what cdk-nag is told."""

    effect: Literal["Allow", "Deny"] = "Allow"
    actions: list[str] = Field(min_length=1)
    resources: list[str] = Field(min_length=1)
    conditions: dict[str, dict[str, str | list[str]]] = Field(default_factory=dict)
    reason: str | None = Field(default=None, min_length=10)

    @field_validator("actions")
    @classmethod
    def _actions(cls, actions: list[str]) -> list[str]:
        for index, action in enumerate(actions):
            if action != "*" and not _ACTION.match(action):
                raise ValueError(f"[{index}]: {action!r} is not an IAM action ('service:Action', e.g. s3:GetObject)")
        return actions

    @field_validator("resources")
    @classmethod
    def _resources(cls, resources: list[str]) -> list[str]:
        for index, resource in enumerate(resources):
            if resource == "*":
                continue
            if not _ARN.match(resource):
                raise ValueError(
                    f"[{index}]: {resource!r} is not an ARN (arn:<partition>:<service>:<region>:<account>:"
                    "<resource>; ${AWS::Partition}, ${AWS::Region} and ${AWS::AccountId} are filled in at deploy)"
                )
            try:
                _check_placeholders(resource)
            except ValueError as exc:
                raise ValueError(f"[{index}]: {exc}") from None
        return resources

    @model_validator(mode="after")
    def _wildcards_need_a_reason(self) -> Statement:
        wide = [a for a in self.actions if is_wildcard_action(a)] + [r for r in self.resources if r == "*"]
        if wide and self.effect == "Allow" and self.reason is None:
            raise ValueError(
                f"reason: this statement allows {', '.join(repr(w) for w in wide)}; say why the actor needs that "
                "much (reason: ...), or name the actions and resources it uses"
            )
        return self

    @property
    def substituted(self) -> bool:
        return any("${" in resource for resource in self.resources)


class ManagedPolicy(_Strict):
    """A managed policy attached to the actor's role. An AWS managed policy's grants are AWS's to change
    and often wide, so it needs a `reason` (what cdk-nag is told)."""

    managed_policy: str
    reason: str | None = Field(default=None, min_length=10)

    @field_validator("managed_policy")
    @classmethod
    def _an_arn(cls, arn: str) -> str:
        if not _MANAGED_POLICY.match(arn):
            raise ValueError(
                f"{arn!r} is not a managed policy ARN (arn:<partition>:iam::<account or aws>:policy/<name>)"
            )
        return arn

    @property
    def aws_managed(self) -> bool:
        match = _MANAGED_POLICY.match(self.managed_policy)
        return match is not None and match.group("owner") == "aws"

    @model_validator(mode="after")
    def _aws_managed_needs_a_reason(self) -> ManagedPolicy:
        if self.aws_managed and self.reason is None:
            raise ValueError("reason: an AWS managed policy grants what AWS decides; say why the actor needs it")
        return self


def _grant_kind(value: Any) -> str:
    return "policy" if isinstance(value, dict | ManagedPolicy) and _has_policy(value) else "statement"


def _has_policy(value: Any) -> bool:
    return isinstance(value, ManagedPolicy) or "managed_policy" in value


Grant = Annotated[
    Annotated[Statement, Tag("statement")] | Annotated[ManagedPolicy, Tag("policy")], Discriminator(_grant_kind)
]


class SecretReference(_Strict):
    """A secret an actor reads at its start: a Secrets Manager secret (`secret`: name or ARN) or an SSM
    parameter (`parameter`: name), one field of it when its value is a JSON object (`key`), and the
    customer managed KMS key that encrypts it, when not AWS's own (`kms_key`)."""

    secret: str | None = None
    parameter: str | None = None
    key: str | None = Field(default=None, min_length=1)
    kms_key: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_name_is_a_secret(cls, value: Any) -> Any:
        return {"secret": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """In the mesh file's JSON Schema (`asya schema`), a secret's name alone is a reference too."""
        return {"anyOf": [{"type": "string", "minLength": 1}, handler(schema)]}

    @model_validator(mode="after")
    def _one_source(self) -> SecretReference:
        if (self.secret is None) == (self.parameter is None):
            raise ValueError("name a Secrets Manager secret (secret: ...) or an SSM parameter (parameter: ...), one")
        if self.secret is not None and not (_SECRET_NAME.match(self.secret) or _SECRET_ARN.match(self.secret)):
            raise ValueError(f"secret: {self.secret!r} is not a secret's name or ARN")
        if self.parameter is not None and not _PARAMETER_NAME.match(self.parameter):
            raise ValueError(f"parameter: {self.parameter!r} is not a parameter's name (/path/name)")
        _check_kms_key(self.kms_key)
        return self

    @property
    def name(self) -> str:
        """The secret's or parameter's name, as the local stack stores it."""
        if self.secret is not None:
            return self.secret.split(":secret:", 1)[1] if self.secret.startswith("arn:") else self.secret
        assert self.parameter is not None
        return self.parameter

    def location(self) -> str:
        """How the sidecar finds it (`ASYA_SECRETS`): `secretsmanager:<name or ARN>` or `ssm:<name>`,
        then `#<key>` for one field."""
        where = f"secretsmanager:{self.secret}" if self.secret is not None else f"ssm:{self.parameter}"
        return f"{where}#{self.key}" if self.key else where


def _check_kms_key(kms_key: str | None) -> None:
    if kms_key is not None and not _KMS_KEY_ARN.match(kms_key):
        raise ValueError(f"kms_key: {kms_key!r} is not a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<id>)")


def s3_location(url: str) -> tuple[str, str] | None:
    """(bucket, key) of an `s3://` URL, or None if `url` is not one."""
    match = _S3_URL.match(url)
    return (match.group("bucket"), match.group("key")) if match else None


class FileEntry(_Strict):
    """One of an actor's files: a local file or folder, or an `s3://` object or prefix (`source`; the
    string alone is an entry too), and the customer managed KMS key its objects are encrypted with, when
    the bucket's encryption is not S3's own (`kms_key`: reading an SSE-KMS object needs kms:Decrypt)."""

    source: str = Field(min_length=1)
    kms_key: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _a_source_is_an_entry(cls, value: Any) -> Any:
        return {"source": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """In the mesh file's JSON Schema (`asya schema`), a path or URL alone is an entry too."""
        return {"anyOf": [{"type": "string", "minLength": 1}, handler(schema)]}

    @model_validator(mode="after")
    def _a_source(self) -> FileEntry:
        if self.source.startswith("s3://") and s3_location(self.source) is None:
            raise ValueError(f"{self.source!r} is not an s3://<bucket>/<key> URL")
        if not self.source.strip():
            raise ValueError("a path or an s3:// URL")
        _check_kms_key(self.kms_key)
        return self


class VpcSettings(_Strict):
    """The subnets and security groups of the VPC the actor's function reaches (a database, an internal
    API); Lambda makes its network interfaces there with the role's EC2 permissions."""

    subnets: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?$")]] = Field(
        min_length=1, max_length=LAMBDA_MAX_SUBNETS
    )
    security_groups: list[Annotated[str, Field(pattern=r"^sg-[0-9a-f]{8}(?:[0-9a-f]{9})?$")]] = Field(
        min_length=1, max_length=LAMBDA_MAX_SECURITY_GROUPS
    )


def layer_arn_problem(arn: str) -> str | None:
    if not _LAYER_ARN.match(arn):
        return f"{arn!r} is not a layer version ARN (arn:<partition>:lambda:<region>:<account>:layer:<name>:<version>)"
    return None

"""A role a template creates gets the managed policies its `ManagedPolicyArns` names, as on AWS.

moto 5.2.5 creates an `AWS::IAM::Role` with its inline `Policies` only, and drops `ManagedPolicyArns`:
a role whose grants come in a customer-managed policy (the mesh's queue grants,
`asya_cdk.queue_grants`) would be refused locally what AWS allows. `apply_managed_policy_fix()` wraps
moto's creation so that the role is attached to each named policy the endpoint knows. A policy it does
not know is one of AWS's own (moto loads none of them unless asked), which was never evaluated
locally: it stays unattached, as before, and docs/local-stack.md says so.
"""

from __future__ import annotations

from typing import Any

from moto.iam.models import Role, iam_backends
from moto.utilities.utils import get_partition

_moto_create = Role.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]


def _create_from_cloudformation_json(
    cls: type[Role],
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kwargs: Any,
) -> Role:
    """moto's creation of the role, then each of its `ManagedPolicyArns` that exists attached to it."""
    role: Role = _moto_create(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
    backend = iam_backends[account_id][get_partition(region_name)]
    known = {policy.arn for policy in backend.managed_policies.values()}
    for arn in cloudformation_json.get("Properties", {}).get("ManagedPolicyArns", []):
        if isinstance(arn, str) and arn in known:
            backend.attach_role_policy(arn, role.name)
    return role


def apply_managed_policy_fix() -> None:
    Role.create_from_cloudformation_json = classmethod(_create_from_cloudformation_json)  # type: ignore[assignment,method-assign,arg-type]

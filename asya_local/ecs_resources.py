"""A container actor's resources on the local stack: what moto's CloudFormation can make stays, what
runs or scales tasks on AWS is taken out of the template before it is created.

Kept: the actor's queue, its task role (the consumer's session on the local stack, as a Lambda
actor's role is its worker's), its log group, the mesh's ECS cluster and the task definition, which
moto registers with its environment resolved: `ecs.describe_task_definition(taskDefinition=
"asya-<ns>-<actor>")` reads back the variables the consumer gets on AWS (moto's CloudFormation leaves
out the task role's ARN: the template's `TaskRoleArn` names the role's logical id, whose physical id
the stack's resources give). Taken out: the ECS service, the GPU capacity (Auto Scaling group, launch
template, capacity provider and its association), the scaling target, its policies, and whatever
refers to them (the backlog and idle alarms), and the AMI parameter only the launch template read.
Locally the consumer runs as worker processes of the local runner, scaled by the same rule.
"""

from __future__ import annotations

from typing import Any

from asya_local.template_refs import dropped

# what runs, places or scales tasks on AWS; nothing of it can run here
RUNS_TASKS = frozenset(
    {
        "AWS::ECS::Service",
        "AWS::ECS::CapacityProvider",
        "AWS::ECS::ClusterCapacityProviderAssociations",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "AWS::AutoScaling::AutoScalingGroup",
        "AWS::EC2::LaunchTemplate",
    }
)


def without_task_runners(template: dict[str, Any]) -> dict[str, Any]:
    """The template without `RUNS_TASKS` and every resource that refers to one of them (its alarms),
    and without parameters nothing left refers to (the GPU AMI's, which moto could not resolve)."""
    resources = template["Resources"]
    removed = {logical_id for logical_id, resource in resources.items() if resource["Type"] in RUNS_TASKS}
    if not removed:
        return template
    while True:
        referring = {
            logical_id
            for logical_id, resource in resources.items()
            if logical_id not in removed and _names(resource.get("Properties", {})) & removed
        }
        if not referring:
            break
        removed |= referring
    kept = dropped(resources, removed)
    used = _names({"Resources": kept, "Outputs": template.get("Outputs", {})})
    parameters = {
        name: value
        for name, value in template.get("Parameters", {}).items()
        if name in used or not name.startswith("SsmParameterValue")
    }
    return {**template, "Resources": kept, "Parameters": parameters}


def _names(node: Any) -> set[str]:
    """Every logical id a `Ref` or `Fn::GetAtt` in `node` names."""
    if isinstance(node, list):
        return {name for item in node for name in _names(item)}
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    if isinstance(node.get("Ref"), str):
        found.add(node["Ref"])
    attribute = node.get("Fn::GetAtt")
    if isinstance(attribute, list) and attribute:
        found.add(attribute[0])
    for value in node.values():
        found |= _names(value)
    return found

"""Resources the local stack creates through their own API, as moto's CloudFormation does not know them
(EMR Serverless applications, Cognito user pools, generated secrets): taken out of a template, every
reference to them replaced by what was created."""

from __future__ import annotations

from typing import Any


def without_resources(template: dict[str, Any], values: dict[tuple[str, str], str]) -> dict[str, Any]:
    """The template without the resources `values` names (created apart), each `Ref` and `Fn::GetAtt`
    to one replaced by its value: `(logical id, "Ref")` or `(logical id, attribute)`."""
    if not values:
        return template
    removed = {logical_id for logical_id, _ in values}
    resources = {key: value for key, value in template["Resources"].items() if key not in removed}

    def substitute(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Ref"} and node["Ref"] in removed:
                return values[(node["Ref"], "Ref")]
            attribute = node.get("Fn::GetAtt")
            if set(node) == {"Fn::GetAtt"} and isinstance(attribute, list) and attribute[0] in removed:
                return values[(attribute[0], attribute[1])]
            return {key: substitute(value) for key, value in node.items()}
        if isinstance(node, list):
            return [substitute(item) for item in node]
        return node

    for logical_id, resource in resources.items():
        resources[logical_id] = substitute({key: value for key, value in resource.items() if key != "DependsOn"})
        depends = resource.get("DependsOn", [])
        kept = [d for d in ([depends] if isinstance(depends, str) else depends) if d not in removed]
        if kept:
            resources[logical_id]["DependsOn"] = kept
    return {**template, "Resources": resources, "Outputs": substitute(template.get("Outputs", {}))}


def dropped(resources: dict[str, Any], removed: set[str]) -> dict[str, Any]:
    """`resources` without those `removed` names, and without them in any `DependsOn` of the rest, which
    CloudFormation would otherwise refuse as a dependency on nothing."""
    kept: dict[str, Any] = {}
    for logical_id, resource in resources.items():
        if logical_id in removed:
            continue
        depends = resource.get("DependsOn", [])
        depends = [d for d in ([depends] if isinstance(depends, str) else depends) if d not in removed]
        kept[logical_id] = {k: v for k, v in resource.items() if k != "DependsOn"} | (
            {"DependsOn": depends} if depends else {}
        )
    return kept

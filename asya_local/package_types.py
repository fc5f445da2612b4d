"""An actor's `package` against the package type of its function as deployed.

Lambda cannot change a function's package type (`.zip` or container image) in place: CloudFormation
has to replace the function, and it does not replace a resource with a fixed name, which every
actor's function has (`asya-<namespace>-<actor>`). A deploy that switches an actor between
`package: zip` and `package: image` therefore fails on that function and rolls the whole stack back.
Found before CloudFormation runs, the switch is refused with the two deploys that make it.
"""

from __future__ import annotations

from typing import Any

from asya.names import resource_name
from asya_cdk.loaded_mesh import LoadedMesh

PACKAGE_TYPES = {"zip": "Zip", "image": "Image"}  # the mesh file's word → Lambda's PackageType


def package_type_problems(mesh: LoadedMesh, lambda_client: Any) -> list[str]:
    """One problem per Lambda actor whose deployed function has another package type than the mesh
    file asks for (`lambda:GetFunctionConfiguration`); an actor not deployed yet has none."""
    problems = []
    for name, actor in mesh.config.actors.items():
        if actor.runtime != "lambda":
            continue
        function = resource_name(mesh.config.namespace, name)
        try:
            deployed = lambda_client.get_function_configuration(FunctionName=function).get("PackageType", "Zip")
        except lambda_client.exceptions.ResourceNotFoundException:
            continue
        if deployed != PACKAGE_TYPES[actor.package]:
            problems.append(_switch(name, actor.package, function, deployed))
    return problems


def _switch(actor: str, package: str, function: str, deployed: str) -> str:
    return (
        f"actors.{actor}.package is {package}, but its function {function} is deployed with package type "
        f"{deployed}: Lambda cannot change it in place and CloudFormation does not replace a function with a "
        "fixed name, so the deploy would fail and roll back. Switch it in two deploys: let the actor's queue "
        f"drain (the queue is deleted with the actor, with whatever waits in it), deploy the mesh without "
        f"actors.{actor} and the routes to it, wait 60 seconds for the function's name to be free, then "
        f"deploy it with actors.{actor} as package: {package}"
    )

"""What stood in for AWS on the local stack, actor by actor, as `asya demo` says at its end: an example
whose actors declare what a real account gives them (a container image, a secret, a bucket of yours, an
EMR Serverless application) runs green without any of it, and a reader should not take the run for a
test of those. Said from the mesh file alone, by the same facts the local stack decides by
(docs/local-stack.md, "Secrets and buckets of yours" and "Differences from AWS"); an actor for which
nothing stood in is not named.
"""

from __future__ import annotations

from pathlib import Path

from asya_cdk.actor_config import ActorConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.needs import Statement, s3_location
from asya_local.fixtures import secrets_file
from asya_local.results_text import shown_path

S3_ARN = ":s3:::"  # arn:<partition>:s3:::<bucket>/<key>
HEADING = "what stood in for AWS here (docs/local-stack.md):"


def stand_in_lines(mesh: LoadedMesh, project: Path) -> list[str]:
    """A heading and one line per actor for which something stood in; none when nothing did. Paths
    are shown from `project`, the folder the command was run in."""
    values = shown_path(str(secrets_file(mesh)), project)
    lines = []
    for name, actor in mesh.config.actors.items():
        said = [_how_it_ran(actor)] if actor.runtime == "spark" or actor.package == "image" else []
        for variable, reference in actor.secrets.items():
            service = "Secrets Manager" if reference.secret is not None else "SSM Parameter Store"
            said.append(f"{variable} from {values} ({reference.name}), not {service}")
        for bucket, folder in mesh.config.local.buckets.items():
            if bucket in _buckets_read(actor):
                made = shown_path(str(mesh.local_file(folder)), project)
                said.append(f"bucket {bucket} made here from {made} (local.buckets), not yours")
        if said:
            lines.append(f"  {name}: " + "; ".join(said))
    return [HEADING, *lines] if lines else []


def _how_it_ran(actor: ActorConfig) -> str:
    if actor.runtime == "spark":
        return "a Spark job run by Spark in local mode on this machine, not EMR Serverless"
    return "`package: image` run as a plain process with its libraries (no image built)"


def _buckets_read(actor: ActorConfig) -> set[str]:
    """The buckets the actor names: in its environment, its `s3://` files, and its grants' resources."""
    named = set(actor.environment.values())
    named |= {located[0] for entry in actor.files.values() if (located := s3_location(entry.source))}
    for grant in actor.permissions:
        if isinstance(grant, Statement):
            named |= {arn.split(S3_ARN, 1)[1].split("/", 1)[0] for arn in grant.resources if S3_ARN in arn}
    return named

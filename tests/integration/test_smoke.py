"""`asya smoke` against the local stack, exactly as against AWS: the stack is found by name in the
endpoint's CloudFormation, each flow of both example meshes (the catalogue's with two Spark actors)
passes with its schema's example, and the results it created are gone afterwards."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from asya_local import cli, local_state
from asya_local.endpoint.process import LocalEndpoint
from tests.support.stack import deployed

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.timeout(600)  # a deploy and, for the catalogue, two Spark jobs: slow on a busy machine
@pytest.mark.parametrize(
    ("example", "endpoint_in_environment"),
    [("reviews", True), ("catalogue", False)],  # boto3 pointed at the local endpoint by the user, or not
)
def test_smoke_passes_every_flow_of_an_example_and_removes_its_results(
    *,
    endpoint: LocalEndpoint,
    example: str,
    endpoint_in_environment: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if example == "catalogue":
        pytest.importorskip("pyspark")
    mesh_file = EXAMPLES / example / "mesh.yaml"
    lines: list[str] = []
    with deployed(endpoint, mesh_file, lambda source, line: lines.append(f"{source}: {line}")) as stack:
        monkeypatch.chdir(tmp_path)
        local_state.write_state(stack, mesh_file)  # what `asya up` records
        if endpoint_in_environment:
            monkeypatch.setenv("AWS_ENDPOINT_URL", stack.endpoint)
        else:
            monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)

        code = cli.main(["smoke", "--stack", f"asya-{example}", "--timeout", "400"])

        shown = capsys.readouterr().out
        assert code == 0, shown + "\nworkers said:\n" + "\n".join(lines[-40:])
        assert f"smoke test of asya-{example} in the local stack at {stack.endpoint}" in shown
        for flow in stack.mesh.config.flows:
            row = next(line for line in shown.splitlines() if line.startswith(f"│ {flow} "))
            assert re.search(r"│ succeeded │ +[\d.]+ │ +[\d.]+ │ \d+ \(\d+ removed\) │ pass ", row), row
        s3 = stack.client("s3")
        left = s3.list_objects_v2(Bucket=stack.results_bucket, Prefix=f"results/{example}/")
        assert left["KeyCount"] == 0, [item["Key"] for item in left.get("Contents", [])]

"""IAM on the local stack: a grant missing from the template is an AccessDenied here, as on AWS.

A one-actor mesh is synthesized, `s3:PutObject` on the results is removed from x-sink's role in the
template, and the template is deployed into the session's endpoint. An envelope sent to the actor
reaches x-sink, which S3 refuses: its output shows the AccessDenied, no result is kept, and the message
stays in x-sink's queue for redelivery (and, after `maxReceiveCount`, x-sump), as on AWS.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from asya_cdk.loading import load_mesh
from asya_local.deploy import Synthesized
from asya_local.endpoint.process import LocalEndpoint
from asya_local.stack import LocalStack

pytestmark = pytest.mark.integration
ACTORS = Path(__file__).resolve().parent / "mesh"
NAMESPACE = "iiam"


def without_grant(synthesized: Synthesized, function: str, action: str) -> int:
    """Remove `action` from every statement of `function`'s role policies; returns how many it was in."""
    resources = synthesized.template["Resources"]
    role = next(
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("FunctionName") == function
    )
    removed = 0
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy" or {"Ref": role} not in resource["Properties"]["Roles"]:
            continue
        document = resource["Properties"]["PolicyDocument"]
        kept = []
        for statement in document["Statement"]:
            actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
            if action in actions:
                removed += 1
                actions = [a for a in actions if a != action]
            if actions:
                kept.append({**statement, "Action": actions})
        document["Statement"] = kept
    return removed


def test_x_sink_without_its_results_grant_is_refused_and_keeps_nothing(endpoint: LocalEndpoint, tmp_path: Path) -> None:
    mesh_file = tmp_path / "mesh.yaml"
    mesh_file.write_text(
        json.dumps({"namespace": NAMESPACE, "actors": {"prep": {"handler": "actors.prep", "code": str(ACTORS)}}})
    )
    lines: list[str] = []
    stack = LocalStack(load_mesh(mesh_file), port=endpoint.port, on_line=lambda s, line: lines.append(f"{s}: {line}"))
    synthesized = stack.synthesize()
    assert without_grant(synthesized, f"asya-{NAMESPACE}-x-sink", "s3:PutObject") == 1
    try:
        stack.deploy(synthesized)
        stack.start_workers()
        sqs = stack.client("sqs")
        url = sqs.get_queue_url(QueueName=f"asya-{NAMESPACE}-prep")["QueueUrl"]
        payload = {"n": 1, "text": "x" * 5000}  # over the inline threshold: x-sink keeps it in S3
        envelope = {"id": "env-iam", "route": {"prev": [], "curr": "prep", "next": []}, "payload": payload}
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(envelope))

        refusal = _wait_for(lambda: [line for line in lines if line.startswith("x-sink:") and "AccessDenied" in line])
        assert "PutObject" in refusal[0], refusal
        kept: list[Any] = (
            stack.client("s3").list_objects_v2(Bucket=stack.results_bucket, Prefix="results/").get("Contents", [])
        )
        assert kept == []
        visible, in_flight, _ = stack.queue_depths()[f"asya-{NAMESPACE}-x-sink"]
        assert visible + in_flight == 1  # left for redelivery, not deleted
    finally:
        stack.stop()


def _wait_for(found: Any, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := found():
            return list(result)
        time.sleep(0.2)
    raise AssertionError(f"nothing found within {timeout:.0f} s")


def test_a_presigned_link_works_until_it_expires(endpoint: LocalEndpoint) -> None:
    """A presigned URL carries its signature in the query (SigV2 or SigV4, as botocore chooses): its key
    is the signer's, and S3 refuses it once expired."""
    import boto3
    import httpx2
    from botocore.config import Config

    from asya_local.roles import local_client

    s3 = local_client("s3", endpoint.url)
    s3.create_bucket(Bucket="iiam-presigned")
    s3.put_object(Bucket="iiam-presigned", Key="k.json", Body=b'{"ok": true}')
    v4 = boto3.client(
        "s3",
        endpoint_url=endpoint.url,
        region_name="us-east-1",
        aws_access_key_id=endpoint.admin_credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=endpoint.admin_credentials["AWS_SECRET_ACCESS_KEY"],
        config=Config(signature_version="s3v4"),
    )
    for signer in (s3, v4):
        link = signer.generate_presigned_url("get_object", Params={"Bucket": "iiam-presigned", "Key": "k.json"})
        assert httpx2.get(link).json() == {"ok": True}
        short = signer.generate_presigned_url(
            "get_object", Params={"Bucket": "iiam-presigned", "Key": "k.json"}, ExpiresIn=1
        )
        time.sleep(2.1)
        assert httpx2.get(short).status_code == 403


def test_a_web_page_reads_nothing_from_the_endpoint(endpoint: LocalEndpoint) -> None:
    """A page of another site asks the endpoint, through the operator's browser, for a presigned result
    and for the buckets (the browser sends its `Origin`), or asks first whether it may (a preflight):
    refused, and no answer says any origin may read it (moto's global CORS said `*`)."""
    import httpx2

    from asya_local.roles import local_client

    s3 = local_client("s3", endpoint.url)
    s3.create_bucket(Bucket="iiam-cors")
    s3.put_object(Bucket="iiam-cors", Key="result.json", Body=b'{"secret": true}')
    link = s3.generate_presigned_url("get_object", Params={"Bucket": "iiam-cors", "Key": "result.json"})
    evil = {"Origin": "https://evil.example"}
    with httpx2.Client(trust_env=False, timeout=20) as client:
        for answer in (
            client.get(link, headers=evil),
            client.get(f"{endpoint.url}/", headers=evil),
            client.options(link, headers={**evil, "Access-Control-Request-Method": "GET"}),
        ):
            assert answer.status_code == 403
            assert "secret" not in answer.text
            assert not [name for name in answer.headers if name.lower().startswith("access-control-")]
        assert client.get(link).json() == {"secret": True}, "the link itself still works"


def test_the_administrators_key_without_its_secret_is_refused(endpoint: LocalEndpoint) -> None:
    """The administrator's key id is known to all (`asya-local`); its secret is drawn for the endpoint.
    A request naming the key with a made-up signature (in the header, or a presigned link's), one signed
    with the old fixed secret, and the endpoint's own calls without the secret (the signer call would
    hand out the administrator's secret) are all refused; the right secret works."""
    import boto3
    import httpx2
    from botocore.exceptions import ClientError

    from asya_local.admin_key import HEADER
    from asya_local.roles import local_client

    s3 = local_client("s3", endpoint.url)
    s3.create_bucket(Bucket="iiam-forged")
    s3.put_object(Bucket="iiam-forged", Key="result.json", Body=b'{"secret": true}')
    old = boto3.client(
        "s3",
        endpoint_url=endpoint.url,
        region_name="us-east-1",
        aws_access_key_id="asya-local",
        aws_secret_access_key="asya-local",
    )
    with pytest.raises(ClientError):
        old.list_buckets()
    link = s3.generate_presigned_url("get_object", Params={"Bucket": "iiam-forged", "Key": "result.json"})
    forged_link = link.replace("Signature=", "Signature=0").replace("X-Amz-Signature=", "X-Amz-Signature=0")
    zeros = "0" * 64
    forged = {
        "Authorization": f"AWS4-HMAC-SHA256 Credential=asya-local/20260101/us-east-1/secretsmanager/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={zeros}",
        "X-Amz-Date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "X-Amz-Target": "secretsmanager.ListSecrets",
        "Content-Type": "application/x-amz-json-1.1",
    }
    query = (
        "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=asya-local%2F20260101%2Fus-east-1%2Fs3%2Faws4_request"
        f"&X-Amz-Date={forged['X-Amz-Date']}&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={zeros}"
    )
    with httpx2.Client(trust_env=False, timeout=20) as client:
        assert client.get(forged_link).status_code == 403
        assert client.post(endpoint.url, headers=forged, content=b"{}").status_code == 403
        listed = client.get(f"{endpoint.url}/?{query}")
        assert listed.status_code == 403
        assert "iiam-forged" not in listed.text
        signer = client.post(f"{endpoint.url}/asya-local/signer", json={"access_key_id": "asya-local"})
        assert signer.status_code == 403
        assert endpoint.admin_credentials["AWS_SECRET_ACCESS_KEY"] not in signer.text
        secret = {HEADER: endpoint.admin_credentials["AWS_SECRET_ACCESS_KEY"]}
        assert (
            client.post(
                f"{endpoint.url}/asya-local/signer", json={"access_key_id": "asya-local"}, headers=secret
            ).status_code
            == 200
        )
        assert client.get(link).json() == {"secret": True}, "the rightly signed link works"

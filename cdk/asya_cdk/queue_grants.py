"""Which queues of the mesh each role may send to, by exact ARN (security review, findings 4 and 5).

Envelopes carry their own route, so an actor sends to whichever actor its envelopes name; it may
therefore send to every actor's queue of its mesh, and to the crew it routes to (x-sink, x-sump,
x-pause), never to x-resume (only a person's answer, through the gateway, resumes a task) nor to
another mesh's queues, whatever their names. The gateway and the crew (x-resume resumes at any actor,
x-sump redrives to any) may send to every queue of the mesh.

The ARNs are built from the queues' names (`asya-<ns>-<name>`, exact: no wildcard, so a namespace
that prefixes another's names none of its queues), not referenced, so an actor in a nested stack
needs nothing from another stack. They are listed in customer-managed policies, one set per
audience, attached to every role of that audience: inline, a list of every queue repeated on every
role would run into IAM's 10,240 characters of inline policy per role with a few dozen actors. A
managed policy holds at most 6,144 characters, so each lists at most `QUEUES_PER_POLICY` queues (an
ARN is at most 118 characters with its quotes: a 35-character account prefix and an 80-character
queue name), and a mesh with more queues gets several; a role takes 10 managed policies by default.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from asya.names import resource_name
from asya_cdk.queue_lists import QUEUES_PER_POLICY

SENDING = ["sqs:SendMessage", "sqs:GetQueueUrl", "sqs:GetQueueAttributes"]


def queue_arn(scope: Construct, namespace: str, name: str) -> str:
    stack = cdk.Stack.of(scope)
    return f"arn:{stack.partition}:sqs:{stack.region}:{stack.account}:{resource_name(namespace, name)}"


def sending_policies(scope: Construct, construct_id: str, namespace: str, queues: list[str]) -> list[iam.ManagedPolicy]:
    """Managed policies that together allow sending to exactly `queues`, `QUEUES_PER_POLICY` each."""
    return [
        iam.ManagedPolicy(
            scope,
            f"{construct_id}{index // QUEUES_PER_POLICY + 1}",
            description=f"asya mesh {namespace}: send to these queues",
            statements=[
                iam.PolicyStatement(
                    actions=SENDING,
                    resources=[queue_arn(scope, namespace, q) for q in queues[index : index + QUEUES_PER_POLICY]],
                )
            ],
        )
        for index in range(0, len(queues), QUEUES_PER_POLICY)
    ]

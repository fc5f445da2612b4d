"""What became of a record at a hop, and of a Spark actor's batch: the values of the `outcome`
dimension of `MessagesProcessed` and `SparkJobs`, each named once (docs/routing.md says where each
sends the envelope)."""

from __future__ import annotations

from enum import StrEnum


class HopOutcome(StrEnum):
    """One SQS record at one actor."""

    FORWARDED = "forwarded"  # its outputs went on (next actors, or x-sink at the route's end)
    COMPLETED = "completed"  # the handler returned nothing: to x-sink, unshifted
    RETRIED = "retried"  # the resiliency policy sent it round again, delayed
    FAILED = "failed"  # to x-sink failed (the policy gave up, or its deadline passed)
    SUMPED = "sumped"  # to x-sump: it could not be parsed, routed or sent on
    DEFERRED = "deferred"  # a retry not yet due (past SQS's 15 minutes of delay): round again
    REDELIVERED = "redelivered"  # left for SQS to deliver again (held elsewhere, or too little time left)
    DUPLICATE = "duplicate"  # a hop already run: nothing sent twice
    CANCELED = "canceled"  # its task was canceled: to x-sink, canceled
    PAUSED = "paused"  # its task is paused: to x-sink, paused, until it resumes
    GATHERED = "gathered"  # a join kept a branch and waits for the others
    JOINED = "joined"  # a join's last branch: the joined envelope went on
    JOIN_FAILED = "join failed"  # a join gave up on its fan: the failure went on
    ABSORBED = "absorbed"  # a branch of a fan another arrival already gave up on
    ADMITTED = "admitted"  # from outside the mesh, a new task: round its queue again, sealed (`asya.admission`)
    REFUSED = "refused"  # from outside the mesh, not a new task: to x-sump as `NotAdmitted`


class BatchOutcome(StrEnum):
    """One settling of a Spark actor's batch by its collector (`lambdas/asya_spark/collect.py`)."""

    STAGED = "staged"  # staged, its job not yet started: left to the dispatcher a while longer
    STARTED = "started"  # staged and never started: started now
    HELD = "held"  # staged, and starts are on hold while its application is stopped for a deploy
    RUNNING = "running"  # its job still runs
    CANCELED = "canceled"  # its job ran past the deadline: canceled now
    LEASED = "leased"  # another collector is routing it
    SUCCEEDED = "succeeded"  # its job succeeded: every envelope routed as its handler said
    FAILED = "failed"  # its job failed: every envelope met the resiliency policy
    CANCELLED = "cancelled"  # its job was cancelled (EMR Serverless's word): the same
    ALREADY_ROUTED = "already-routed"  # routed before: nothing to do

"""Which attributes of the tasks table an actor's hop may name: the one list its role is granted
(`asya_cdk.tasks`, through IAM's `dynamodb:Attributes`) and the sidecar's writes are held to (a unit
test records every request a hop sends and checks each name it uses against these lists).

A task record mixes two owners. The caller's: what the gateway writes when it creates the task (its
input, who owns it, the request it was made from) and what only the crew writes at its end (the
result). The hop's: where the task stands (status, rank, progress, the hop claimed). An actor runs
code the mesh does not vouch for, so its role names only the hop's attributes: it can neither read a
task's input or result, nor hand the task to another caller by rewriting its owner.

The lists name top-level attributes only, as IAM does: `fans.v` in a condition is `fans`.
"""

from __future__ import annotations

from asya.join_failure import JOIN_FAILED_COUNT, JOIN_FAILED_LATER

# The key: IAM's `dynamodb:Attributes` includes the key attributes a request names, so a list that
# left it out would refuse every request.
KEY = "id"

# A hop's claim, its progress reports and the task's creation by a hop that was not started through
# the gateway (`TaskStore.claim_hop`, `TaskStore.report`; `TaskStore.admit` for a producer's envelope,
# and the message that admitted it; the keys that find a task by the start of its id, `asya.short_ids`),
# with the attributes their conditions read.
HOP_STATUS = frozenset(
    {
        KEY,
        "admitted_by",
        "status",
        "rank",
        "phase",
        "actor",
        "route",
        "attempt",
        "progress",
        "updated_at",
        "created_at",
        "parent_id",
        "root_id",
        "fan_bucket",
        "deadline_at",
        "open_shard",
        "hop_position",
        "hop_attempt",
        "hop_held_until",
        "hops",
        "id_head",
        "id_lower",
    }
)

# A fan-out's branches registered before they are sent (`BranchCounting.register_branches`), on the
# root or, for a wide fan-out, in buckets and their counter (`asya.fans`): items of the same table.
FAN_REGISTRATION = frozenset({"branch_ids", "fans", "fan_root", "v", "branches", "open", "expires_at"})

# A branch a join gathers ends at the join (`TaskStore.finish_gathered`): how it ended, never its result;
# one that fails after its join gave up is counted on the joined envelope's record (`asya.join_failure`).
JOINED_ENDING = frozenset({"reason", "error", "joined_into", JOIN_FAILED_COUNT, JOIN_FAILED_LATER})

# What an actor's role may write (and name in a write's condition).
HOP_WRITES = HOP_STATUS | FAN_REGISTRATION | JOINED_ENDING

# What an actor's role may read: the pre-flight's statuses, a refused claim's reason, a fan counter.
HOP_READS = frozenset(
    {KEY, "status", "rank", "hop_position", "hop_attempt", "hop_held_until", "admitted_by", "v", "branches", "open"}
    | {"succeeded", "failed", "canceled"}
)
# Read back after a claim is refused: why (`asya.task_store._refused`).
CLAIM_REFUSAL = ("rank", "status", "hop_position", "hop_attempt", "hop_held_until", "admitted_by")

# The caller's attributes, written when the gateway creates a task (`asya_gateway.service`) or by the
# crew at its end: no actor's role may name them. The crew's roles may read them, and may not write
# the gateway's (`CREATED_BY_GATEWAY`).
CREATED_BY_GATEWAY = frozenset(
    {"owner", "created_by", "input", "input_ref", "request_digest", "rerun_of", "started_route", "flow"}
    | {"program_version"}
)
CALLER_OWNED = CREATED_BY_GATEWAY | {"output", "result", "pause"}

# What an update may return: nothing, or only what it wrote (never the whole item, input included).
# IAM's `dynamodb:ReturnValues` covers `ReturnValues` only; `ReturnValuesOnConditionCheckFailure`
# has no condition key, so no hop asks for it (a refused claim reads `CLAIM_REFUSAL` back instead).
HOP_RETURN_VALUES = ("NONE", "UPDATED_OLD", "UPDATED_NEW")

assert not (HOP_WRITES | HOP_READS) & CALLER_OWNED, "a hop's attribute is the caller's"

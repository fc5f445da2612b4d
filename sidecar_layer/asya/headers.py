"""The envelope headers the mesh reserves, each named once (docs/spec/envelope.md, "Reserved headers").

A header travels with its envelope on every hop. These are the ones the mesh itself reads: a client
may set only those in `CLIENT_HEADERS` when it creates a task, and the rest of `x-asya-*` is refused
at the gateway, so no client can forge a fan-out's root, a join's frame or a redrive count.
"""

from __future__ import annotations

RESERVED_PREFIX = "x-asya-"

# W3C trace context: continued by the sidecar on every hop (`asya.tracecontext`).
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

# `off`: no status record, no pre-flight check for this envelope and what it fans out into.
STEALTH_HEADER = "x-asya-mesh-status"
# Where an actor outside the mesh reports this envelope's status (http/https with a host, else ignored).
GATEWAY_URL_HEADER = "x-asya-gateway-url"

# When the current actor's first attempt started: a retry policy's max_duration counts from it.
FIRST_ATTEMPT_HEADER = "x-asya-first-attempt"
# A retry delayed past SQS's 15 minutes: the envelope goes round until this time.
NOT_BEFORE_HEADER = "x-asya-not-before"
# The task a fan-out's branch belongs to: its ending is counted there.
ROOT_HEADER = "x-asya-root-id"
# A wide fan-out's branch: the bucket its ending is counted in (`asya.fans`).
FAN_HEADER = "x-asya-fan-bucket"
# How many times the envelope was redriven from x-sump: its hops are new ones, not duplicates.
REDRIVE_HEADER = "x-asya-redrive"
# The frames of the joins an envelope is bound for, innermost last (`asya.joins`).
JOIN_HEADER = "x-asya-join"
# On a joined envelope: its fan, its width and the slots that failed.
JOINED_HEADER = "x-asya-joined"
# On an envelope x-sink sent to a hook actor: which hook, so its ending is kept as the hook's.
HOOK_HEADER = "x-asya-hook"
# The pause's prompt and fields, set by an actor before x-pause (or x-pause's default).
PAUSE_HEADER = "x-asya-pause"

CLIENT_HEADERS = frozenset({TRACEPARENT, TRACESTATE, STEALTH_HEADER, GATEWAY_URL_HEADER})
# A task run by a flow program: the compiled program, where the envelope is in it and its loops' counts.
FLOW_HEADER = "x-asya-flow"
# Set by a flow's `except`: the error it caught (actor, type, message, reason), for the handler it runs.
CAUGHT_HEADER = "x-asya-caught"

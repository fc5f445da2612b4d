"""The crew: actors that end every route. `x-sink` keeps terminal envelopes, `x-sump` keeps errors.

Both are ordinary Lambda functions fed by their own queues, built on the same `asya` core as every
actor (envelope parsing, grouped sending, telemetry), with the layer as their only dependency.
"""

"""Support answers drafted by models, as a flow written in Python (`programs.answer`, docs/flows.md):

    classify → (unsure) classify-large → (still unsure) x-pause, a person names the intent
      → draft (a message too long for it: except → draft-long)
      → evaluate → while the judge's quality < 0.8, at most 3 rounds: refine → evaluate

The actors are plain functions standing in for models (`actors.py`): deterministic and quick, so
`make flow-demo` and the tests run anywhere. Which way each message goes is the program's decision,
taken by the sidecar of the actor whose output it reads: no actor routes, and no decision is a hop.
"""

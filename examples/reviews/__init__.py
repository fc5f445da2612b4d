"""Review triage: split a product's reviews, score each one's sentiment, decide what to do with it.

    split (generator: fan-out, one envelope per review)
      → score (class: the lexicon is loaded once per execution environment)
      → triage (plain function; rewrites the route of an angry review to add `escalate`)

Payloads are enriched, never replaced, so the final envelope carries the whole history.
"""

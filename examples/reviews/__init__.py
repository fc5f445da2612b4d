"""Review triage: split a product's reviews, score each one's sentiment, decide what to do with it.

    split (generator: fan-out, one envelope per review)
      → score (class: the lexicon is loaded once per execution environment)
      → triage (plain function; rewrites the route of an angry review to add `escalate`)

    flow summarise-reviews: split → score → summarise (a join: every scored review of a product as
    one list, in the order split yielded them, once all are scored)

Payloads are enriched, never replaced, so the final envelope carries the whole history.
"""

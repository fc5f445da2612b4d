"""What the tests share: the unit mesh, the local stack driver, handlers and corpora."""

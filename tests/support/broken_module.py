"""A handler module whose own import fails: the error must name it, not claim the module is missing."""

import a_dependency_that_is_not_installed  # type: ignore[import-not-found]  # noqa: F401

"""The Spark side of a Spark actor: the job that applies an actor's handler to a staged batch."""

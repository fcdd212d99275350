"""Types of the core (``v1``) group that the standalone server serves: Events."""

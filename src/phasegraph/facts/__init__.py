"""Facts computed by code, never taken from the model (SPEC sections 1 and 11)."""

"""Baselines built from LangGraph itself, for the architecture comparison of `bench.compare`."""

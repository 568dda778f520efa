"""Benchmarks of phasegraph: `python -m bench` (see bench/run.py)."""

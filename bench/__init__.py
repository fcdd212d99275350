"""Benchmarks of the server against baselines measured in the same run; ``python -m bench``."""

"""Benchmarks: run `python -m bench build|query|scale` from the repository root (bench/README.md)."""

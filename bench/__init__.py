"""Benchmarks for ladder: ``python -m bench.run`` (see bench/README.md)."""

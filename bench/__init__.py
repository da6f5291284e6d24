"""Benchmarks of compoenv: run `python -m bench` to list them."""

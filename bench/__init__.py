"""Benchmarks: each module measures its own baseline in the same run and prints ratios."""

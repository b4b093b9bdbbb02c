"""Benchmarks and quality harnesses, importable; scripts/ holds the thin command lines over them."""

"""Prototypes of suggested fixes (see benchmarks/FINDINGS.md): measured, not used by the product."""

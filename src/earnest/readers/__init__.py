"""Readers of other tools' results (lm-evaluation-harness samples, Inspect logs)."""

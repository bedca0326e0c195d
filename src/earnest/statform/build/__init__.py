"""StatFormBench construction: the pipeline that builds a benchmark from raw material (paper section 4.2,
Appendix A, prompts of Appendix C).

Modules: ``entries`` (input JSONL entries, case-library folders), ``datadict`` (deterministic data
dictionary with seeded simulated previews), ``prompts`` (the build prompt files), ``llm`` (validated
JSON answers with bounded retries), ``stages`` (split + flatten, induction, filter, label,
variables, rewrite + self-evaluation), ``numcheck`` (every number survives the rewrite),
``review`` (sheets out, decisions in), ``final`` (released-format samples, statistics), ``files``
(the stages file to file, for the workflow). Every model call goes through
:class:`earnest.backends.cache.CachedBackend`.
"""

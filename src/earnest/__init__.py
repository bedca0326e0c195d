"""earnest: evaluate language models on reasoning benchmarks and judge the results with real statistics.

The library knows nothing of Snakemake: the workflow's scripts read their inputs and call into it.
"""

__version__ = "0.1.0"

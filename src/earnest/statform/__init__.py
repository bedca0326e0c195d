"""StatFormBench: statistical problem formulation (Wang et al.), data, prompts, parsing, metrics, analyses.

Submodules: ``data`` (samples), ``taxonomy``, ``prompts`` (strategies -> GenerationRequests),
``parsing`` (model text -> formulation), ``metrics`` (ACC_CG, ACC_FG, JCV, PV, RV, VRI),
``analysis`` (tables, confusion matrices, bootstrap intervals), ``glmm`` (paired comparisons in lme4).
"""

from .data import DataError, Sample, Variable, load_samples, samples_from_frame, samples_to_frame
from .metrics import METRICS, aggregate, score_generations, score_response, serialize_value
from .parsing import parse_response
from .prompts import build_requests
from .taxonomy import Taxonomy, derive_taxonomy, load_taxonomy, taxonomy_for

__all__ = ["DataError", "Sample", "Variable", "load_samples", "samples_from_frame", "samples_to_frame",
           "METRICS", "aggregate", "score_generations", "score_response", "serialize_value", "parse_response",
           "build_requests", "Taxonomy", "derive_taxonomy", "load_taxonomy", "taxonomy_for"]

"""StatFormBench: statistical problem formulation (Wang et al.), data, prompts, parsing, metrics, analyses.

Submodules: ``data`` (samples), ``taxonomy``, ``prompts`` (strategies -> GenerationRequests),
``parsing`` (model text -> formulation), ``metrics`` (ACC_CG, ACC_FG, JCV, PV, RV, VRI),
``analysis`` (tables, confusion matrices, bootstrap intervals, paired strategy tests), ``glmm``
(paired comparisons in lme4), ``figures`` (the paper's figures 3-5), ``release`` (the authors'
released data), ``reference`` (their prompts and evaluator's rules), ``results_csv`` (scoring their
results format; ``earnest statform-score``, ``earnest statform-prompt``).
"""

from .data import DataError, Sample, Variable, load_samples, samples_from_frame, samples_to_frame
from .metrics import METRICS, aggregate, score_generations, score_response, serialize_value
from .parsing import parse_response
from .prompts import build_requests
from .release import load_any, read_release
from .taxonomy import Taxonomy, derive_taxonomy, load_taxonomy, taxonomy_for

__all__ = ["DataError", "Sample", "Variable", "load_samples", "samples_from_frame", "samples_to_frame",
           "METRICS", "aggregate", "score_generations", "score_response", "serialize_value", "parse_response",
           "build_requests", "load_any", "read_release", "Taxonomy", "derive_taxonomy", "load_taxonomy", "taxonomy_for"]

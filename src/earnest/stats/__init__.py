"""The statistics engine: the GLMM input contract and model frame (:mod:`.glmm`), the engines that
fit it (:mod:`.engines`: the interface and registry, :mod:`.engines.base`; lme4 through R,
:mod:`.engines.lme4` with :mod:`.rbridge`; laplace, :mod:`.engines.laplace`), the steps of a
bootstrapped GLMM (:mod:`.run`), summaries and Holm (:mod:`.summary`, :mod:`.summaries`), paired
comparisons (:mod:`.compare`), power (:mod:`.power`), simulation (:mod:`.simulate`) and fit
diagnostics (:mod:`.diagnostics`). Nothing here knows a benchmark; GSM-Symbolic's tables, K-S test
and reasoning-only analysis are in :mod:`earnest.gsm`.

Importing this package imports none of its modules and does not start R; the first fit does.
"""

"""The GLMM engines: the interface and registry (:mod:`.base`) and one module per engine behind it,
each with its own way of running in parallel: lme4 through R (:mod:`.lme4`, forked R workers) and
laplace in numpy (:mod:`.laplace`, forked fitting processes). Importing this package registers
both (lme4 first, the engine that fits everything) and starts no R; the first lme4 fit does.

The interface's names are re-exported here (``from earnest.stats import engines as E``;
``E.get_engine(name)`` once where a name comes in, then the :class:`Engine` object down the chain).
"""

from earnest.stats.engines.base import (CHECK_COLUMNS, CHECK_MAX_ROWS, CHECK_TOL, ENGINES, Engine,  # noqa: F401
                                        EngineUnavailable, check_engine, check_summary, empty_check, engine_for,
                                        engine_names, get_engine, register, resolve_rows, rows_note, run_bootstrap,
                                        run_shard)
from earnest.stats.engines import lme4  # noqa: E402,F401  (registers lme4: first)
from earnest.stats.engines import laplace  # noqa: E402,F401  (registers laplace)
from earnest.stats.engines.laplace import cross_check  # noqa: E402,F401  (laplace's check against lme4)

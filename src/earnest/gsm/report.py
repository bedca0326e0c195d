"""What ``snakemake --report`` shows a reader beyond the tables and figures: the findings (every
model's verdicts, read from the summaries table, never recomputed), the answers behind each number
(one table per model and prompt), and the labels of the statistics tables.

The verdicts are :mod:`earnest.stats.verdict`'s (columns ``verdict``, ``verdict_reason``,
``degenerate``, ``p_value``, ``p_holm``); this module only words and lays them out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from earnest.gsm.datasets import BASE_LABEL, VARIANTS_LABEL
from earnest.tables import to_html
from earnest.wording import (DEGENERATE_MARK, DEGENERATE_TEXT, EFFECT_ORDER, effect_name, effect_rank,
                             format_fit_p, format_or_interval)

#: the summaries' columns the findings read
FINDINGS_COLUMNS = ("analysis", "glmm", "model", "prompt", "term", "verdict", "verdict_reason", "degenerate",
                    "odds_ratio", "ci_low", "ci_high", "acc_base", "acc_variants", "delta_var", "alpha")
#: the first words of the findings (the report's landing text finds them by this file name)
FINDINGS_RST = "findings.rst"
#: what the § of a verdict means, said where the sign first appears
DEGENERATE_EXPLAINED = f"{DEGENERATE_MARK} marks a degenerate fit: {DEGENERATE_TEXT}"
#: the characters of an answer shown in the answers table (its end, where the final answer is)
ANSWER_TAIL = 400


def _pct(x) -> str:
    return "" if x is None or pd.isna(x) else f"{100 * float(x):.1f}" if abs(float(x)) <= 1 else f"{float(x):.1f}"


def findings_frame(summaries: pd.DataFrame, prompt_labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One display row per fit of the main analysis: model, prompt, effect, verdict (with § for a
    degenerate fit), OR [95% CI], P, Holm P, accuracies and the verdict's reason; ordered by model,
    prompt and effect."""
    missing = [c for c in FINDINGS_COLUMNS if c not in summaries.columns]
    if missing:
        raise KeyError(f"summaries table: missing column(s) {', '.join(missing)} (written before the verdicts? "
                       "rerun the summaries rule)")
    labels = dict(prompt_labels or {})
    s = summaries[(summaries["analysis"] == "all") & summaries["term"].isin({t for _, t in EFFECT_ORDER})]
    s = s.assign(_rank=[effect_rank(g, t) for g, t in zip(s["glmm"], s["term"])]).sort_values(
        ["model", "prompt", "_rank"], kind="stable")
    rows = []
    for r in s.itertuples(index=False):
        rec = r._asdict()
        degenerate = bool(r.degenerate)
        alpha = float(r.alpha)
        rows.append({
            "Model": str(r.model),
            "Prompt": labels.get(r.prompt, str(r.prompt)),
            "Effect": f"{effect_name(r.glmm, r.term)} (GLMM {int(r.glmm)})",
            "Verdict": f"{r.verdict} {DEGENERATE_MARK}" if degenerate else str(r.verdict),
            "Odds ratio [95% CI]": format_or_interval(r.odds_ratio, r.ci_low, r.ci_high, degenerate=degenerate),
            "P": format_fit_p(rec, alpha, missing="n/a"),
            "P (Holm)": format_fit_p(rec, alpha, corrected=True, missing="n/a"),
            f"Ā {BASE_LABEL} %": _pct(r.acc_base),
            f"Ā {VARIANTS_LABEL} %": _pct(r.acc_variants),
            "Why": str(r.verdict_reason or ""),
        })
    return pd.DataFrame(rows, columns=["Model", "Prompt", "Effect", "Verdict", "Odds ratio [95% CI]", "P",
                                       "P (Holm)", f"Ā {BASE_LABEL} %", f"Ā {VARIANTS_LABEL} %", "Why"])


def findings_rst(frame: pd.DataFrame) -> str:
    """The findings as reStructuredText for the report's landing text: one bullet per model with
    each of its verdicts; the first § carries its explanation."""
    if not len(frame):
        return "No fit in this run yet.\n"
    lines, explained = [], False
    for model, by_model in frame.groupby("Model", sort=False):
        prompts = []
        for prompt, sub in by_model.groupby("Prompt", sort=False):
            parts = []
            for r in sub.itertuples(index=False):
                part = f"{_rst_escape(r.Effect)} *{_rst_escape(r.Verdict)}*"
                if DEGENERATE_MARK in r.Verdict and not explained:
                    part += f" ({_rst_escape(DEGENERATE_EXPLAINED)})"
                    explained = True
                if r[4] not in (DEGENERATE_MARK, "n/a"):
                    part += f" (OR {_rst_escape(r[4])}, P {_rst_escape(r.P)})"
                parts.append(part)
            prompts.append(f"with the {_rst_escape(prompt)}: " + "; ".join(parts))
        lines.append(f"- **{_rst_escape(model)}** " + ". W".join([prompts[0], *(q[1:] for q in prompts[1:])]) + ".")
    return "\n".join(lines) + "\n"


def _rst_escape(text: str) -> str:
    # model names such as "a_b" or "x*" would start emphasis or references in reStructuredText
    return re.sub(r"([_*|`\\])", r"\\\1", text)


def write_findings(summaries: pd.DataFrame, out_html: str | Path, prompt_labels: Mapping[str, str] | None = None
                   ) -> list[Path]:
    """Write the findings page (``out_html``, every verdict, sortable) and beside it
    :data:`FINDINGS_RST` (the landing text's bullets). Returns both paths."""
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    frame = findings_frame(summaries, prompt_labels)
    alphas = sorted({float(a) for a in summaries["alpha"]}) if len(summaries) else []
    caption = ("Every model's verdicts, as the summaries table records them (earnest.stats.verdict decides; "
               f"nothing here is recomputed): significant means P below α = {' / '.join(f'{a:g}' for a in alphas)} "
               "after Holm-Bonferroni in its table's family. " + DEGENERATE_EXPLAINED + ".")
    out_html.write_text(to_html(frame, caption, title="Findings: the verdict of every fit"), encoding="utf-8")
    rst = out_html.parent / FINDINGS_RST
    rst.write_text(findings_rst(frame), encoding="utf-8")
    return [out_html, rst]


#: the order of the answers pages: wrong answers first (the ones to look at), then those no one
#: judged (the machine failed to run the code), then the right ones; within each by these columns
ANSWERS_ORDER = ("dataset", "template_id", "instance", "sample")
ANSWERS_ORDER_TEXT = ("wrong answers first, then answers not judged (the code did not run), then right ones; "
                      "each by dataset, template and instance")


def answers_frame(scored: pd.DataFrame) -> pd.DataFrame:
    """One display row per answer of a model under one prompt, in the order :data:`ANSWERS_ORDER_TEXT`
    says: dataset, template, instance (and sample, where the model answered each item several times),
    item, gold answer, extracted value, correct (yes, no, or not judged), error class and the end of
    the model's answer."""
    from earnest.gsm.failure_classes import judged

    ds = {"gsm_base": BASE_LABEL, "gsm_variants": VARIANTS_LABEL}
    scored = scored.reset_index(drop=True)     # one label per row: judged() answers by the index
    is_judged = scored.index.isin(judged(scored).index)
    correct = scored["correct"].astype(bool).to_numpy()
    rank = pd.Series([2 if c and j else (0 if j else 1) for c, j in zip(correct, is_judged)], index=scored.index)
    by = [c for c in ANSWERS_ORDER if c in scored.columns]
    s = scored.assign(_rank=rank).sort_values(["_rank", *by], kind="stable")

    def tail(text) -> str:
        text = "" if text is None or (isinstance(text, float) and pd.isna(text)) else str(text)
        return text if len(text) <= ANSWER_TAIL else "…" + text[-ANSWER_TAIL:]

    def shown(x) -> str:
        return "" if x is None or (isinstance(x, float) and pd.isna(x)) else str(x)

    columns = {
        "Dataset": [ds.get(d, str(d)) for d in s["dataset"]],
        "Template": s["template_id"].astype(str).tolist(),
        "Instance": ["original" if int(i) < 0 else str(int(i)) for i in s["instance"]],
    }
    if "sample" in s.columns:
        columns["Sample"] = s["sample"].astype(int).astype(str).tolist()
    columns.update({
        "Item": s["item_id"].astype(str).tolist(),
        "Gold": [shown(x) for x in s["answer"]],
        "Extracted": [shown(x) for x in s["extracted"]],
        "Correct": [{0: "no", 1: "not judged", 2: "yes"}[r] for r in s["_rank"]],
        "Error class": [shown(x) for x in s["error_class"]],
        "Answer (its end)": [tail(x) for x in s["response"]],
    })
    return pd.DataFrame(columns)


def write_answers(scored: pd.DataFrame, out_html: str | Path, model: str, prompt_label: str, *,
                  max_rows: int | None = None, sources: Sequence[str | Path] = (),
                  inspect_dir: str | Path | None = None) -> Path:
    """The answers page of one model and prompt, sortable and filterable: every scored answer, or
    with ``max_rows`` the first ``max_rows`` in the order :data:`ANSWERS_ORDER_TEXT` says (a page of
    the paper's grid would otherwise be tens of MB). The page says how many were left out and where
    all of them are: ``sources`` (the scored parquet files) and ``inspect_dir`` (the Inspect logs,
    where the run writes them)."""
    if max_rows is not None and (isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1):
        raise ValueError(f"answers page {out_html}: max_rows must be a whole number of at least 1, not {max_rows!r} "
                         "(config report.answers_max_rows)")
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    frame = answers_frame(scored)
    n_all, n_ok = len(frame), int((frame["Correct"] == "yes").sum())
    n_wrong = int((frame["Correct"] == "no").sum())
    shown = frame if max_rows is None else frame.head(max_rows)
    where = ", ".join(str(p) for p in sources) or "the scored parquet files under results/scored"
    if inspect_dir:
        where += f"; every prompt and whole answer in the Inspect logs: inspect view --log-dir {inspect_dir}"
    n_unjudged = n_all - n_ok - n_wrong
    caption = (f"The answers behind {model}'s numbers with the {prompt_label}: {n_all} answers, {n_ok} correct, "
               f"{n_wrong} wrong" + (f", {n_unjudged} not judged (the code did not run)" if n_unjudged else "") + ". ")
    if len(shown) < n_all:
        caption += (f"Shown: the first {len(shown)} ({ANSWERS_ORDER_TEXT}); {n_all - len(shown)} left out "
                    f"(config report.answers_max_rows = {max_rows}). All of them: {where}. ")
    else:
        caption += f"Order: {ANSWERS_ORDER_TEXT}. Whole answers: {where}. "
    caption += (f"'Extracted' is the number the scorer read (the paper's patterns, or the code's result); "
                f"'Answer' shows the last {ANSWER_TAIL} characters of each answer. Filter by template or item "
                "to follow one number of a table.")
    out_html.write_text(to_html(shown, caption, title=f"Answers: {model}, {prompt_label}",
                                preformatted=("Answer (its end)",)), encoding="utf-8")
    return out_html


#: the statistics tables' file names (earnest.gsm.paper_tables.write_stats_tables) and what each is
_STATS_TABLES = (
    (r"glmm1_variant_(?P<prompt>.+)", "variant effect, GLMM 1 (Tables 2, 6, 8, 10, 12)"),
    (r"glmm1_bootstrap_(?P<prompt>.+)", "bootstrap statistics, GLMM 1 (Tables 3, 7, 9, 11, 13)"),
    (r"glmm2_bootstrap_gamma_c_(?P<prompt>.+)", "bootstrap statistics, GLMM 2 large-number effect (Tables 16-18)"),
    (r"glmm2_bootstrap_variant_(?P<prompt>.+)", "bootstrap statistics, GLMM 2 variant effect (Tables 16-18)"),
    (r"glmm2_variant", "variant effect corrected for large numbers, GLMM 2 (Table 14)"),
    (r"glmm2_gamma_c", "large-number effect, GLMM 2 (Table 15)"),
    (r"fit_problems", "fit problems, in words"),
    (r"wald_mismatch", "Wald and bootstrap calls that differ"),
    (r"nonconvergent_glmm(?P<glmm>\d)", "non-convergent full-data fits"),
    (r"optimiser_refits", "optimiser refits"),
    (r"separation_(?P<prompt>.+)", "separation per template (Table 19)"),
    (r"reasoning_only_glmm(?P<glmm>\d)_(?P<prompt>.+)", "reasoning-only errors (Tables 20-23)"),
)


def stats_table_labels(name: str, prompt_labels: Mapping[str, str]) -> dict[str, str]:
    """The report labels of one statistics table file (its stem): what the table is, its prompt
    (or "all prompts") and its models (every table covers all models)."""
    for pattern, what in _STATS_TABLES:
        m = re.fullmatch(pattern, name)
        if m:
            d = m.groupdict()
            if d.get("glmm"):
                what = f"{what}, GLMM {d['glmm']}"
            prompt = d.get("prompt")
            return {"table": what, "prompt": prompt_labels.get(prompt, prompt) if prompt else "all prompts",
                    "model": "all models"}
    return {"table": name, "prompt": "all prompts", "model": "all models"}

"""Scoring answers kept in the authors' results format, and printing a rendered prompt.

``earnest statform-score --release FILE --fidelity reference IN.csv OUT.csv`` reads a CSV with the
columns ``sample_key``, ``model_name`` and ``output_json`` (their ``all_models_result_other``
layout; other columns are kept) and writes it back with ``error_type``, ``JCV``, ``PV``, ``RV``,
``ACC@2nd``, ``ACC@1st``, ``VRI`` and ``evaluation_error`` (their evaluated layout). ``--fidelity
earnest`` scores with earnest's rules instead (the same six columns; ``error_type`` is earnest's
parse status).

``earnest statform-prompt --release FILE SAMPLE_KEY`` prints the chat turns one request sends.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from earnest import fidelity as F

from .data import DataError, Sample
from .release import load_any
from .taxonomy import load_taxonomy

IN_COLUMNS = ("sample_key", "model_name", "output_json")
OUT_COLUMNS = ("error_type", "JCV", "PV", "RV", "ACC@2nd", "ACC@1st", "VRI", "evaluation_error")


def _key(value) -> str:
    """A sample key as their evaluator reads it: a number written as an integer, else the text."""
    text = str(value).strip()
    try:
        f = float(text)
    except ValueError:
        return text
    return str(int(f)) if f.is_integer() else text


def read_results_csv(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise DataError(f"{path}: not a UTF-8 CSV file: {exc}") from None
    missing = [c for c in IN_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: header line 1 lacks the column(s) {missing} (needs {list(IN_COLUMNS)})")
    return frame


def score_results(frame: pd.DataFrame, samples: list[Sample], taxonomy, mode: str) -> pd.DataFrame:
    """``frame`` with the evaluated columns added, each row scored against its sample in ``mode``."""
    from .metrics import score_response
    from .reference import AS_EARNEST, METRIC_NAMES, _zeros, hierarchy_for, score_reference

    F.check_mode(mode, "--fidelity")
    by_key = {s.sample_id: s for s in samples}
    hierarchy = hierarchy_for(taxonomy)
    rows = []
    for i, rec in enumerate(frame.to_dict(orient="records")):
        key = _key(rec["sample_key"])
        sample = by_key.get(key)
        if sample is None:
            rows.append(_zeros("sample_not_found", f"sample_key {key} not found"))
        elif mode == F.REFERENCE:
            rows.append(score_reference(rec["output_json"], sample, hierarchy))
        else:
            got = score_response(rec["output_json"], sample, taxonomy)
            rows.append({"error_type": got["parse_status"],
                         **{m: float(got[AS_EARNEST[m]]) for m in METRIC_NAMES}, "error": None})
    scored = pd.DataFrame(rows, index=frame.index).rename(columns={"error": "evaluation_error"})
    had = [c for c in OUT_COLUMNS if c in frame.columns]
    out = frame.rename(columns={c: f"recorded_{c}" for c in had})
    out = pd.concat([out, scored[list(OUT_COLUMNS)]], axis=1)
    if set(RECORDED) <= set(had):
        # the input is an evaluated file already: say row by row whether its scores are reproduced
        out["reproduced"] = [_same(rec, new) for rec, new in zip(frame[list(RECORDED)].to_dict(orient="records"),
                                                                 scored[list(RECORDED)].to_dict(orient="records"))]
    return out


#: the evaluated columns compared when an input already carries them
RECORDED = ("error_type", "JCV", "PV", "RV", "ACC@2nd", "ACC@1st", "VRI")


def _same(recorded: dict, computed: dict, tol: float = 1e-9) -> bool:
    if str(recorded["error_type"]) != str(computed["error_type"]):
        return False
    return all(abs(float(recorded[m]) - float(computed[m])) <= tol for m in RECORDED[1:])


def consistency_problem(output, source: str, recorded: dict, hierarchy: dict[str, str], max_ref: int = 500) -> str | None:
    """Why the scores ``recorded`` for ``output`` cannot come from the authors' evaluator for any
    reference answer of a ``source`` (case|book) sample, or None when some reference gives them.

    Reference-free checks: the error type the answer's own form decides (``no_json``, ``false_json``,
    ``false_role`` for case; ``output_error``, ``output_empty``, ``missing_fields``,
    ``pred_variables_error`` for book) must be the one recorded; error types score 0; on success
    PV, RV and JCV must be |I|/|P|, |I|/|R| and |I|/(|P|+|R|-|I|) for the answer's |P| distinct items
    and some whole |I| <= |P| and |R| <= ``max_ref``; VRI x |R| must be whole; ACC_FG = 1 needs
    ACC_CG = 1, and a category outside the hierarchy scores 0 on both.
    """
    from .reference import METRIC_NAMES, _joined, extract_last_json, score_book, score_case, serialize

    probe = (score_case(output, {"category": "", "variable": {}, "role": {}}, hierarchy) if source == "case"
             else score_book(output, {"category": "", "variable": {}}, hierarchy))
    ok_types = {"successful", "success"}
    rec_type = str(recorded["error_type"])
    got = {m: float(recorded[m]) for m in METRIC_NAMES}
    if rec_type not in ok_types:
        if any(v != 0 for v in got.values()):
            return f"error type {rec_type} with non-zero scores"
        if probe["error_type"] in ok_types or probe["error_type"] == "evaluation_error":
            return (f"recorded {rec_type}, but the answer as given passes every check before the reference is read "
                    f"(the evaluator would score it)")
        return None if probe["error_type"] == rec_type else f"recorded {rec_type}, the answer as given is {probe['error_type']}"
    if probe["error_type"] not in ok_types:
        return f"recorded {rec_type}, the answer as given is {probe['error_type']}"
    obj = extract_last_json(output)
    items = (set(_joined(obj["variable"])) if source == "case"
             else {serialize(v.get("value")) for v in obj["variables"].values()})
    n_p = len(items)
    fits = False
    for n_i in range(0, n_p + 1):
        for n_r in range(n_i, max_ref + 1):
            pv = n_i / n_p if n_p else 0.0
            rv = n_i / n_r if n_r else 0.0
            union = n_p + n_r - n_i
            jcv = 1.0 if n_p == 0 and n_r == 0 else (0.0 if n_p == 0 or n_r == 0 else n_i / union)
            if all(abs(a - b) <= 1e-9 for a, b in ((pv, got["PV"]), (rv, got["RV"]), (jcv, got["JCV"]))):
                if n_r == 0 or abs(got["VRI"] * n_r - round(got["VRI"] * n_r)) <= 1e-6 or source == "case":
                    fits = True
                    break
        if fits:
            break
    if not fits:
        return f"JCV {got['JCV']:.4g}, PV {got['PV']:.4g}, RV {got['RV']:.4g} fit no reference for the answer's {n_p} item(s)"
    cat = obj.get("category")
    if got["ACC@2nd"] == 1 and got["ACC@1st"] != 1:
        return "ACC@2nd 1 with ACC@1st 0"
    if isinstance(cat, str) and cat not in hierarchy and (got["ACC@2nd"] or got["ACC@1st"]):
        return f"category {cat!r} is outside the hierarchy yet scores"
    return None


def score_results_file(release: str | Path, in_csv: str | Path, out_csv: str | Path, mode: str,
                       taxonomy: str | Path | None = None) -> pd.DataFrame:
    from .release import release_taxonomy_path

    tax = load_taxonomy(taxonomy or release_taxonomy_path())
    samples = load_any(release, taxonomy=tax)
    out = score_results(read_results_csv(in_csv), samples, tax, mode)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(out_csv, index=False, encoding="utf-8")
    return out


def _score_command(args) -> int:
    out = score_results_file(args.release, args.input, args.output, args.fidelity, args.taxonomy)
    counts = out["error_type"].value_counts().to_dict()
    print(f"scored {len(out)} rows ({args.fidelity}): {counts} -> {args.output}")
    return 0


def _prompt_command(args) -> int:
    from .prompts import build_requests, parse_strategy
    from .release import release_taxonomy_path
    from .taxonomy import taxonomy_for

    tax_path = args.taxonomy or release_taxonomy_path()
    samples = load_any(args.release, taxonomy=load_taxonomy(tax_path))
    chosen = [s for s in samples if s.sample_id == str(args.sample)]
    if not chosen:
        raise DataError(f"{args.release}: no sample with key {args.sample!r}")
    spec = parse_strategy(args.strategy, {"kind": args.strategy, "k": args.k} if args.strategy == "few_shot"
                          else {"kind": args.strategy})
    pool = [s for s in samples if s.sample_id != chosen[0].sample_id] if spec["kind"] == "few_shot" else []
    req = build_requests(chosen, taxonomy_for(samples, tax_path), spec["kind"], k=spec["k"], pool=pool,
                         seed=spec["seed"], fidelity=args.fidelity)[0]
    if args.json:
        print(json.dumps(req.messages, ensure_ascii=False, indent=1))
    else:
        for turn in req.messages:
            print(f"=== {turn['role']} ===")
            print(turn["content"])
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("statform-score", help="score StatFormBench answers in the authors' results CSV layout")
    p.add_argument("--release", required=True, help="the release's data/statformbench.json (or earnest samples)")
    p.add_argument("--fidelity", choices=F.MODES, default=F.DEFAULT,
                   help="reference = the authors' evaluator's behaviour; earnest = earnest's scoring (default: config/schema.yaml's fidelity)")
    p.add_argument("--taxonomy", default=None, help="taxonomy file (default: the release's)")
    p.add_argument("input", help="CSV with sample_key, model_name, output_json")
    p.add_argument("output", help="CSV written with error_type and the six metrics")
    p.set_defaults(func=_score_command)

    q = sub.add_parser("statform-prompt", help="print the StatFormBench prompt one sample is sent")
    q.add_argument("--release", required=True, help="the release's data/statformbench.json (or earnest samples)")
    q.add_argument("--fidelity", choices=F.MODES, default=F.DEFAULT,
                   help="reference = the authors' prompts; earnest = earnest's template")
    q.add_argument("--strategy", choices=("zero_shot", "definitions", "few_shot"), default="zero_shot")
    q.add_argument("--k", type=int, default=1, help="few-shot examples (drawn from the other samples)")
    q.add_argument("--taxonomy", default=None, help="taxonomy file (default: the release's)")
    q.add_argument("--json", action="store_true", help="print the turns as JSON")
    q.add_argument("sample", help="the sample's key")
    q.set_defaults(func=_prompt_command)

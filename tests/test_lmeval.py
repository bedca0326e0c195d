"""lm-evaluation-harness --log_samples files (the 0.4.x format as 0.4.13 writes it) read as GLMM,
compare and power inputs. The files are written here, line by line as lm-eval's
EvaluationTracker.save_results_samples does."""

import hashlib
import json
import subprocess
import sys

import pandas as pd
import pytest

from earnest import lmeval

DATE = "2026-11-30T12-00-00.123456"


def _sample(doc_id, doc, correct, flt="strict-match", target="18"):
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    prompt = f"Question: {doc.get('question', '')}\nAnswer:"
    return {
        "doc_id": doc_id, "doc": doc, "target": target,
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["Question:"], "do_sample": False}}},
        "resps": [["The answer is 18."]], "filtered_resps": ["18" if correct else "[invalid]"],
        "filter": flt, "metrics": ["exact_match"],
        "doc_hash": hashlib.sha256(text.encode()).hexdigest(),
        "prompt_hash": hashlib.sha256(prompt.encode()).hexdigest(),
        "target_hash": hashlib.sha256(target.encode()).hexdigest(),
        "exact_match": float(correct),
    }


def _write(folder, task, samples):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_{DATE}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for s in samples:
            fh.write(json.dumps(s, ensure_ascii=False) + "\n")
    return path


def gsm_symbolic_run(root, model="org__model-7b", n_templates=6, n_variants=4, acc=(0.8, 0.5), filters=("strict-match",)):
    """A GSM-Base task (one original per template) and a GSM-Symbolic task (release rows: id,
    instance, question, answer, original_id ...), with deterministic correctness."""
    base, var = [], []
    for flt in filters:
        for t in range(n_templates):
            doc = {"id": t, "instance": 0, "question": f"orig {t}", "answer": "#### 18", "original_id": 100 + t}
            base.append(_sample(t, doc, int((t / n_templates) < acc[0]), flt))
            for i in range(n_variants):
                doc = {"id": t, "instance": i, "question": f"var {t}.{i}", "answer": "#### 18",
                       "original_id": 100 + t, "canary": "x"}
                var.append(_sample(t * n_variants + i, doc, int(((t + i) % n_templates) / n_templates < acc[1]), flt))
    return (_write(root / model, "gsm_base", base), _write(root / model, "gsm_symbolic", var))


def test_gsm_symbolic_mapping_gives_templates_and_variants(tmp_path):
    files = gsm_symbolic_run(tmp_path)
    m = lmeval.Mapping("gsm_symbolic", base_tasks=("gsm_base",))
    s = lmeval.read_samples(files, mapping=m)
    assert set(s.model) == {"org__model-7b"} and set(s.task) == {"gsm_base", "gsm_symbolic"}
    assert (s[s.task == "gsm_base"].variant == 0).all() and (s[s.task == "gsm_symbolic"].variant == 1).all()
    assert sorted(s.template.unique()) == list(range(6)) and len(s) == 6 + 24
    g = lmeval.to_glmm_input(s, prompt="gsm")
    assert list(g.columns[:5]) == ["model", "prompt", "template", "variant", "correct"]
    assert g.groupby("variant").size().to_dict() == {0: 6, 1: 24}
    assert lmeval.FORMAT_VERSION.startswith("lm-evaluation-harness 0.4")


def test_per_document_fallback_makes_each_document_a_cluster(tmp_path):
    docs = [_sample(i, {"question": f"q{i}", "answer": "18"}, i % 2) for i in range(5)]
    f = _write(tmp_path / "m", "gsm8k", docs)
    s = lmeval.read_samples([f], mapping=lmeval.Mapping("per_document"))
    assert list(s.template) == [0, 1, 2, 3, 4] and list(s.correct) == [0, 1, 0, 1, 0]
    # a GSM-Symbolic mapping on a doc without the template field says what to do
    with pytest.raises(lmeval.LmEvalError, match=r"samples_gsm8k_.*\.jsonl:1: doc has no field 'id'.*per_document"):
        lmeval.read_samples([f], mapping=lmeval.Mapping("gsm_symbolic"))
    with pytest.raises(lmeval.LmEvalError, match="both GSM-Base"):
        lmeval.to_glmm_input(s)


def test_errors_name_the_file_and_line(tmp_path):
    files = gsm_symbolic_run(tmp_path, filters=("strict-match", "flexible-extract"))
    with pytest.raises(lmeval.LmEvalError, match="several filters .flexible-extract, strict-match.; choose one"):
        lmeval.read_samples(files)
    s = lmeval.read_samples(files, filter_name="flexible-extract", mapping=lmeval.Mapping(base_tasks=("gsm_base",)))
    assert len(s) == 30
    bad = _sample(0, {"id": 1}, 1)
    bad["exact_match"] = 0.5
    f = _write(tmp_path / "b", "t", [_sample(1, {"id": 1}, 1), bad])
    with pytest.raises(lmeval.LmEvalError, match=r":2: metric 'exact_match' must be 0/1 for a GLMM, found 0.5"):
        lmeval.read_samples([f])
    f.write_text(f.read_text().splitlines()[0] + "\n{oops\n")
    with pytest.raises(lmeval.LmEvalError, match=r":2: not valid JSON"):  # earnest.jsonl's wording
        lmeval.read_samples([f])
    f.write_bytes(f.read_bytes().splitlines()[0] + b"\n{\"doc_id\": \"caf\xe9\"}\n")
    with pytest.raises(lmeval.LmEvalError, match=r":2: not UTF-8 text \(byte 0xe9 at column 16\)"):
        lmeval.read_samples([f])
    dup = _write(tmp_path / "d", "t", [_sample(1, {"id": 1}, 1), _sample(1, {"id": 1}, 0)])
    with pytest.raises(lmeval.LmEvalError, match=r":2: doc_id 1 appears twice"):
        lmeval.read_samples([dup])


def test_compare_input_pairs_two_models_by_document(tmp_path):
    a = gsm_symbolic_run(tmp_path, model="m-a", acc=(0.8, 0.6))
    b = gsm_symbolic_run(tmp_path, model="m-b", acc=(0.5, 0.3))
    s = lmeval.read_samples([a[1], b[1]])
    c = lmeval.to_compare_input(s)
    from earnest.stats.compare import paired_rows, validate_compare_input
    d = validate_compare_input(c)
    p = paired_rows(d, "models", "gsm_symbolic", "m-a", "m-b")
    assert len(p) == 24 and p.correct_a.sum() > p.correct_b.sum()


@pytest.mark.slow
def test_earnest_glmm_and_power_read_lm_eval_samples(tmp_path):
    files = gsm_symbolic_run(tmp_path / "lm", n_templates=12, n_variants=4, acc=(0.6, 0.4))
    out = tmp_path / "glmm"
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "glmm", "--glmm", "1", "--resamples", "10", "--seed", "1",
                        "--out", str(out), "--cores", "1", "--lm-eval", *map(str, files),
                        "--lm-eval-base-task", "gsm_base", "--lm-eval-prompt", "gsm"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    s = pd.read_csv(out / "summary_glmm1.csv")
    assert s.loc[0, "model"] == "org__model-7b" and s.loc[0, "prompt"] == "gsm"
    assert s.loc[0, "n_base"] == 12 and s.loc[0, "n_variants"] == 48
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--lm-eval", *map(str, files),
                        "--lm-eval-base-task", "gsm_base", "--odds-ratios", "1", "0.1", "--sims", "2",
                        "--resamples", "10", "--out", str(tmp_path / "power")], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    p = pd.read_csv(tmp_path / "power" / "power.csv")
    # the design of the results read: 12 templates x 4 variants, their GSM-Base accuracy
    assert set(p.n_templates) == {12} and set(p.n_variants) == {4}
    assert p.baseline_acc.iloc[0] == pytest.approx(s.loc[0, "acc_base"] / 100)

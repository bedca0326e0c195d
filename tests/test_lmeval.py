"""lm-evaluation-harness --log_samples files (the 0.4.x format as 0.4.13 writes it) read as GLMM,
compare and power inputs. The files are written here, line by line as lm-eval's
EvaluationTracker.save_results_samples does."""

import functools
import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from earnest.readers import lmeval

DATE = "2026-11-30T12-00-00.123456"
INSPECT_LOG = Path(__file__).parent / "data" / "inspect" / "arith_symbolic_smollm2.eval"


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


def gsm_symbolic_run(root, model="org__model-7b", n_templates=6, n_variants=4, acc=(0.8, 0.5), filters=("strict-match",),
                     tasks=("gsm_base", "gsm_symbolic")):
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
    return (_write(root / model, tasks[0], base), _write(root / model, tasks[1], var))


def test_gsm_symbolic_mapping_gives_templates_and_variants(tmp_path):
    files = gsm_symbolic_run(tmp_path)
    m = lmeval.Mapping("gsm_symbolic", base_tasks=("gsm_base",))
    s = lmeval.read_samples(files, mapping=m)
    assert set(s.model) == {"org__model-7b"} and set(s.task) == {"gsm_base", "gsm_symbolic"}
    assert (s[s.task == "gsm_base"].variant == 0).all() and (s[s.task == "gsm_symbolic"].variant == 1).all()
    assert sorted(s.template.unique()) == list(range(6)) and len(s) == 6 + 24
    g = lmeval.to_glmm_input(s, lmeval.Mapping(base_tasks=("gsm_base",), prompt="gsm"))
    assert set(g.prompt) == {"gsm"}
    assert list(g.columns[:5]) == ["model", "prompt", "template", "variant", "correct"]
    assert g.groupby("variant").size().to_dict() == {0: 6, 1: 24}
    assert lmeval.FORMAT_VERSION.startswith("lm-evaluation-harness 0.4")


def test_per_document_fallback_makes_each_document_a_cluster(tmp_path):
    docs = [_sample(i, {"question": f"q{i}", "answer": "18"}, i % 2) for i in range(5)]
    f = _write(tmp_path / "m", "gsm8k", docs)
    s = lmeval.read_samples([f], mapping=lmeval.Mapping("per_document"))
    assert s.template.nunique() == 5 and list(s.correct) == [0, 1, 0, 1, 0]
    # the cluster is the document, not its doc_id: doc 0 of another task is another cluster, the
    # same document under another model the same one
    other = _write(tmp_path / "m", "gsm8k_other", [_sample(0, {"question": "another q0", "answer": "18"}, 1)])
    again = _write(tmp_path / "m2", "gsm8k", docs)
    s2 = lmeval.read_samples([f, other, again], mapping=lmeval.Mapping("per_document"))
    t = s2.set_index(["model", "task", "doc_id"])["template"]
    assert t[("m", "gsm8k_other", 0)] != t[("m", "gsm8k", 0)] and t[("m2", "gsm8k", 0)] == t[("m", "gsm8k", 0)]
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
    with pytest.raises(lmeval.LmEvalError, match=r":2: doc_id 1 appears twice for filter 'strict-match' .first at line 1"):
        lmeval.read_samples([dup])


@pytest.mark.parametrize("change,message", [
    (lambda s: s.update(doc_id=[1]), r":2: doc_id must be an integer, found \[1\]"),
    (lambda s: s.update(doc_id=True), r":2: doc_id must be an integer, found true"),
    (lambda s: s.update(doc_id=-1), r":2: doc_id -1 is below 0"),
    (lambda s: s["doc"].update(id=float("inf")), r":2: template id \(field 'id'\) must be an integer, found Infinity"),
    (lambda s: s["doc"].update(id=3.7), r":2: template id \(field 'id'\) must be an integer, found 3.7"),
    (lambda s: s["doc"].update(id=2 ** 64), r":2: template id \(field 'id'\) 18446744073709551616 does not fit a 64-bit"),
    (lambda s: s.update(metrics=[{"name": "exact_match"}]), r":2: field 'metrics' must be a list of metric names, "
                                                            r"found \[\{\"name\": \"exact_match\"\}\]"),
    (lambda s: s.update(metrics="exact_match"), r":2: field 'metrics' must be a list of metric names"),
    (lambda s: s.update(exact_match=[1]), r":2: metric 'exact_match' must be 0/1 for a GLMM, found \[1\]"),
])
def test_values_of_the_wrong_kind_are_errors_naming_file_and_line(tmp_path, change, message):
    """Issue 20: a list doc_id, a template Infinity or 3.7 (once read as 3), an object in
    'metrics' gave tracebacks or wrong ids."""
    bad = _sample(1, {"id": 1}, 1)
    change(bad)
    f = _write(tmp_path / "b", "t", [_sample(0, {"id": 0}, 1), bad])
    with pytest.raises(lmeval.LmEvalError, match=r"samples_t_.*\.jsonl" + message):
        lmeval.read_samples([f])


def test_integral_template_ids_in_other_spellings_are_read(tmp_path):
    f = _write(tmp_path / "b", "t", [_sample(0, {"id": "12"}, 1), _sample(1, {"id": 7.0}, 0)])
    assert list(lmeval.read_samples([f]).template) == [12, 7]


def test_the_same_task_in_two_files_is_refused_not_doubled(tmp_path):
    """Issue 20: two runs of one task (two dated files of one model) doubled every document."""
    base, var = gsm_symbolic_run(tmp_path)
    rerun = var.with_name(var.name.replace(DATE, "2026-12-01T09-00-00.000001"))
    rerun.write_bytes(var.read_bytes())
    with pytest.raises(lmeval.LmEvalError, match=r"task 'gsm_symbolic' of model 'org__model-7b' is also in .*two runs"):
        lmeval.read_samples([base, var, rerun])
    # the same file given twice would count every document twice as well
    with pytest.raises(lmeval.LmEvalError, match=r"task 'gsm_symbolic' of model 'org__model-7b' was given twice"):
        lmeval.read_samples([base, var, var])


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


def _variants_task(root, task, model="org__model-7b", n_templates=6, n_variants=4, tag="p1", acc=0.5):
    """Another GSM-Variants task over the same templates (e.g. GSM-P1's rows): its own documents."""
    var = []
    for t in range(n_templates):
        for i in range(n_variants):
            doc = {"id": t, "instance": i, "question": f"{tag} {t}.{i}", "answer": "#### 18", "original_id": 100 + t}
            var.append(_sample(t * n_variants + i, doc, int(((t * i) % n_templates) / n_templates < acc)))
    return _write(root / model, task, var)


def test_each_model_and_task_group_is_its_own_fit_and_a_document_counts_once(tmp_path):
    """Issue 24, 2: several tasks were pooled into one prompt 'taskA+taskB+...', base questions
    counted again with every task, two renamed models pooled into one."""
    base, sym = gsm_symbolic_run(tmp_path)
    p1 = _variants_task(tmp_path, "gsm_p1")
    s = lmeval.read_samples([base, sym, p1])
    m = lmeval.Mapping(base_tasks=("gsm_base",))
    assert lmeval.task_groups(s.task, m) == [("gsm_p1", ("gsm_base", "gsm_p1")),
                                             ("gsm_symbolic", ("gsm_base", "gsm_symbolic"))]
    g = lmeval.to_glmm_input(s, m)
    n = g.groupby(["prompt", "variant"]).size().to_dict()
    assert n == {("gsm_p1", 0): 6, ("gsm_p1", 1): 24, ("gsm_symbolic", 0): 6, ("gsm_symbolic", 1): 24}
    assert not g.duplicated(["model", "prompt", "item"]).any()
    # pooling is asked for; a document still counts once (the base task's six, once)
    pooled = lmeval.to_glmm_input(s, lmeval.Mapping(base_tasks=("gsm_base",), pool=True))
    assert set(pooled.prompt) == {"gsm_base+gsm_p1+gsm_symbolic"} and len(pooled) == 6 + 24 + 24
    # explicit groups, and the mistakes around them
    grouped = lmeval.to_glmm_input(s, lmeval.Mapping(base_tasks=("gsm_base",), groups=(("sym", ("gsm_base", "gsm_symbolic")),
                                                                                        ("p1", ("gsm_base", "gsm_p1")))))
    assert sorted(grouped.prompt.unique()) == ["p1", "sym"]
    with pytest.raises(lmeval.LmEvalError, match=r"task\(s\) gsm_p1 are in no --lm-eval-group"):
        lmeval.task_groups(s.task, lmeval.Mapping(groups=(("sym", ("gsm_base", "gsm_symbolic")),)))
    with pytest.raises(lmeval.LmEvalError, match=r"--lm-eval-prompt gsm: the tasks make 2 prompts"):
        lmeval.task_groups(s.task, lmeval.Mapping(base_tasks=("gsm_base",), prompt="gsm"))
    with pytest.raises(lmeval.LmEvalError, match=r"--lm-eval-base-task gsm_orig: no samples of that task"):
        lmeval.task_groups(s.task, lmeval.Mapping(base_tasks=("gsm_orig",)))
    # the same documents in two tasks of one prompt: refused, naming both lines
    copy = _write(tmp_path / "org__model-7b", "gsm_symbolic_copy", [json.loads(x) for x in sym.read_text().splitlines()])
    s2 = lmeval.read_samples([base, sym, copy])
    with pytest.raises(lmeval.LmEvalError, match=r"samples_gsm_symbolic_copy_.*:1: the same document .* as .*samples_gsm_symbolic_"
                                                 r".*:1, both in prompt 'gsm_base\+gsm_symbolic\+gsm_symbolic_copy'"):
        lmeval.to_glmm_input(s2, lmeval.Mapping(base_tasks=("gsm_base",), pool=True))


def test_two_models_are_never_pooled_by_a_rename(tmp_path):
    a = gsm_symbolic_run(tmp_path, model="m-a")
    b = gsm_symbolic_run(tmp_path, model="m-b")
    with pytest.raises(lmeval.LmEvalError, match=r"--lm-eval-model x: the files are of 2 model\(s\) \(m-a, m-b\); one "
                                                 r"plain NAME would pool them"):
        lmeval.read_samples([*a, *b], model="x")
    s = lmeval.read_samples([*a, *b], model=["m-a=A", "m-b=B"])
    assert sorted(s.model.unique()) == ["A", "B"]
    with pytest.raises(lmeval.LmEvalError, match="two models get the same name"):
        lmeval.read_samples([*a, *b], model=["m-a=A", "m-b=A"])
    assert set(lmeval.read_samples(a, model="A").model) == {"A"}


def test_compare_reads_the_files_as_glmm_does_and_refuses_what_cannot_pair(tmp_path, capsys):
    """Issue 24, 3: compare treated each task as a prompt, so GSM-Base + GSM-Variants tasks became
    two prompts with 0 paired items (McNemar p = 1), and ignored --lm-eval-base-task."""
    from earnest.cli import main
    a = gsm_symbolic_run(tmp_path, model="m-a", acc=(0.8, 0.6))
    b = gsm_symbolic_run(tmp_path, model="m-b", acc=(0.5, 0.3))
    m = lmeval.Mapping(base_tasks=("gsm_base",))
    c = lmeval.to_compare_input(lmeval.read_samples([*a, *b]), m, by="models")
    g = lmeval.to_glmm_input(lmeval.read_samples([*a, *b]), m)
    assert set(c.prompt) == set(g.prompt) == {"gsm_symbolic"}
    assert len(c) == len(g) == 2 * 30
    p1 = _variants_task(tmp_path, "gsm_p1", model="m-a")
    with pytest.raises(lmeval.LmEvalError, match=r"prompts gsm_p1, gsm_symbolic share the samples of task 'gsm_base'"):
        lmeval.to_compare_input(lmeval.read_samples([*a, p1]), m, by="prompts")
    # the layout glmm documents, given to compare --by prompts without a base task: two prompts, no common item
    out = tmp_path / "cmp"
    assert main(["compare", "--by", "prompts", "--resamples", "2", "--seed", "1", "--out", str(out),
                 "--lm-eval", *map(str, a)]) == 2
    assert "model 'm-a': prompts 'gsm_base' and 'gsm_symbolic' answered no common item" in capsys.readouterr().err
    assert not out.exists()


def test_one_compare_over_both_fidelity_modes_pairs_each_mode_with_its_own_base_task(tmp_path, capsys):
    """Issue 55.3: both modes' task folders named their tasks alike, so one compare over both runs
    refused them ("two runs?"); the tasks `earnest lm-eval-task` names now end in the mode, and each
    mode's variants pair with its own GSM-Base task."""
    from earnest.cli import main
    from earnest.gsm.lmeval_task import task_names

    files = []
    for mode, acc in (("earnest", (0.8, 0.7)), ("reference", (0.8, 0.2))):
        _, base, variants = task_names(mode)
        files += gsm_symbolic_run(tmp_path, model="m-a", acc=acc, tasks=(base, variants))
    bases = [task_names(m)[1] for m in ("earnest", "reference")]
    out = tmp_path / "cmp"
    assert main(["compare", "--by", "prompts", "--resamples", "20", "--seed", "1", "--out", str(out),
                 "--lm-eval", *map(str, files), "--lm-eval-base-task", *bases]) == 0, capsys.readouterr().err
    pairs = pd.read_csv(out / "pairs.csv")
    assert len(pairs) == 1 and pairs.n_items.iloc[0] == 6 + 6 * 4
    assert {pairs.a.iloc[0], pairs.b.iloc[0]} == {task_names(m)[2] for m in ("earnest", "reference")}
    # each mode's prompt holds its own base task's rows, never the other mode's
    m = lmeval.Mapping(base_tasks=tuple(bases))
    rows = lmeval.prompt_rows(lmeval.read_samples(files), m)
    for mode in ("earnest", "reference"):
        assert set(rows.loc[rows.prompt == task_names(mode)[2], "task"]) == set(task_names(mode)[1:])


def test_glmm2_gamma_comes_from_the_question_field_in_the_fidelity_mode(tmp_path):
    """Issue 24, 4: GLMM 2 was refused; every sample carries its question."""
    from earnest.gsm.gamma import gamma
    qs = ["Ann has 1,000 coins and 12 bags.", "Bo pays $2.5 for 3 pens.", "No digits here.", "It costs 40 and 7."]
    samples = []
    for t in range(4):
        samples.append(("b", _sample(t, {"id": t, "question": qs[t]}, t % 2)))
        samples.append(("v", _sample(t, {"id": t, "question": qs[(t + 1) % 4], "instance": 1}, 1 - t % 2)))
    base = _write(tmp_path / "m", "gsm_base", [x for k, x in samples if k == "b"])
    var = _write(tmp_path / "m", "gsm_symbolic", [x for k, x in samples if k == "v"])
    s = lmeval.read_samples([base, var], mapping=lmeval.Mapping(base_tasks=("gsm_base",)))
    m = lmeval.Mapping(base_tasks=("gsm_base",))
    for mode in ("earnest", "reference"):
        g = lmeval.to_glmm_input(s, m, glmm=2, gamma=functools.partial(gamma, fidelity=mode))
        want = [gamma(q, fidelity=mode) for q in s["question"]]
        assert g["gamma"].tolist() == pytest.approx(want, nan_ok=True)
    assert lmeval.to_glmm_input(s, m, glmm=2, gamma=gamma)["gamma"].iloc[0] == pytest.approx(3 + math.log10(12))
    assert math.isnan(lmeval.to_glmm_input(s, m, glmm=2, gamma=functools.partial(gamma, fidelity="reference"))["gamma"].iloc[2])
    # the field is named by an option; a sample without it is named by file and line
    with pytest.raises(lmeval.LmEvalError, match=r"samples_gsm_base_.*:1: no question text in field 'problem'.*"
                                                 r"--lm-eval-question-field"):
        lmeval.to_glmm_input(lmeval.read_samples([base, var], mapping=lmeval.Mapping(base_tasks=("gsm_base",),
                                                                                      question_field="problem")),
                             lmeval.Mapping(base_tasks=("gsm_base",), question_field="problem"), glmm=2)


def test_files_of_another_kind_are_named_for_what_they_are(tmp_path):
    """Issue 24, 6: a results_*.json or an Inspect log given as samples said 'not valid JSON' or
    'not UTF-8 text'."""
    from earnest.readers import inspect_log
    res = tmp_path / "org__model-7b" / f"results_{DATE}.json"
    res.parent.mkdir(parents=True)
    res.write_text(json.dumps({"results": {"gsm_base": {"exact_match,strict-match": 0.5}}, "configs": {}}))
    with pytest.raises(lmeval.LmEvalError, match=r"results_.*\.json: lm-eval's aggregate results file .*no per-sample "
                                                 r"answers.*samples_<task>_<date>\.jsonl.*--log_samples"):
        lmeval.read_samples([res])
    with pytest.raises(lmeval.LmEvalError, match=r"arith_symbolic_smollm2\.eval: a zip archive, as Inspect AI writes its "
                                                 r"\.eval logs.*give it with --inspect"):
        lmeval.read_samples([INSPECT_LOG])
    with pytest.raises(lmeval.LmEvalError, match=r"lm-eval's aggregate results file"):
        inspect_log.read_logs([res])
    base, _ = gsm_symbolic_run(tmp_path)
    with pytest.raises(lmeval.LmEvalError, match=r"not an Inspect AI log .*looks like an lm-eval samples file: give it "
                                                 r"with --lm-eval"):
        inspect_log.read_logs([base])


def test_power_on_samples_without_a_usable_scenario_says_so_and_keeps_their_design(tmp_path, capsys):
    """Issue 24, 5: 0% GSM-Base accuracy gave 'skipped' then 'no scenario: give ... or --lm-eval'
    although it was given; a stated scenario beside it silently used the default 100 x 50 grid."""
    from earnest.cli import main
    files = gsm_symbolic_run(tmp_path / "lm", n_templates=8, n_variants=3, acc=(0.0, 0.5))
    common = ["power", "--lm-eval", *map(str, files), "--lm-eval-base-task", "gsm_base", "--odds-ratios", "1",
              "--sims", "2", "--resamples", "4", "--engine", "laplace"]
    assert main([*common, "--out", str(tmp_path / "p0")]) == 2
    err = capsys.readouterr().err
    assert "GSM-Base accuracy 0.0%" in err and "the results given gave no usable scenario" in err
    assert "no scenario: give" not in err
    assert main([*common, "--baseline-acc", "0.6", "--ranef-var", "1", "--out", str(tmp_path / "p1")]) == 0
    assert "their design, 8 templates x 3 variants, stays the grid's" in capsys.readouterr().err
    p = pd.read_csv(tmp_path / "p1" / "power.csv")
    assert set(p.n_templates) == {8} and set(p.n_variants) == {3}


@pytest.mark.slow
def test_earnest_glmm_fits_each_prompt_and_glmm2_from_lm_eval_samples(tmp_path):
    """Two variants tasks beside one base task: two fits, each with the six base documents once;
    GLMM 2 with gamma from the question text; the JSON summary and the figure beside the tables."""
    from earnest.cli import main
    base, sym = gsm_symbolic_run(tmp_path / "lm", n_templates=8, n_variants=3, acc=(0.6, 0.4))
    p1 = _variants_task(tmp_path / "lm", "gsm_p1", n_templates=8, n_variants=3)
    out = tmp_path / "glmm"
    for g in (1, 2):
        assert main(["glmm", "--glmm", str(g), "--resamples", "6", "--seed", "1", "--out", str(out), "--cores", "1",
                     "--engine", "laplace", "--check-resamples", "0", "--lm-eval", str(base), str(sym), str(p1),
                     "--lm-eval-base-task", "gsm_base"]) == 0
    s = pd.read_csv(out / "summary_glmm1.csv")
    assert sorted(s.prompt) == ["gsm_p1", "gsm_symbolic"]
    assert (s.n_base == 8).all() and (s.n_variants == 24).all()
    records = json.loads((out / "tables" / "summary.json").read_text())
    assert {(r["prompt"], r["effect"]) for r in records} == {(p, t) for p in ("gsm_p1", "gsm_symbolic")
                                                            for t in ("variant", "gamma_c")}
    assert all(set(lmeval_json_fields()) <= set(r) for r in records)
    assert (out / "figures" / "variant_effect_gsm_p1.png").exists() and (out / "figures" / "number_effect.pdf").exists()


def lmeval_json_fields():
    return ("model", "prompt", "effect", "odds_ratio", "ci_low", "ci_high", "p_boot", "p_holm", "verdict", "engine",
            "n_base", "n_variants")


def test_per_document_clusters_are_small_ids_shared_by_models(tmp_path):
    docs = [_sample(i, {"question": f"q{i}", "answer": "18"}, i % 2) for i in range(5)]
    a = _write(tmp_path / "m1", "gsm8k", docs)
    b = _write(tmp_path / "m2", "gsm8k", [_sample(i, {"question": f"q{i}", "answer": "18"}, 1) for i in range(5)])
    m = lmeval.Mapping("per_document")
    c = lmeval.to_compare_input(lmeval.read_samples([a, b], mapping=m), m)
    assert sorted(c.template.unique()) == [0, 1, 2, 3, 4]
    assert (c[c.model == "m1"].set_index("item").template == c[c.model == "m2"].set_index("item").template).all()

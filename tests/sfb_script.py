"""The scripted annotator of the construction-pipeline tests: a deterministic stand-in for the LLMs
behind each stage, served over real HTTP by :class:`openai_server.ScriptedOpenAI`.

Entries carry a tag (``TAG:<name>``) in their text; the script answers each stage (recognised by
the first line of its system prompt) according to the tag and the attempt number (how many turns
the conversation has). What each tag exercises:

two     split into two samples, everything valid
broken  split answer is broken JSON first (retried); label given as the L2 name only; the rewrite
        drops a number although the self-evaluation passes it; the number check catches it and the
        correction restores it
refuse  variable extraction refused every time (failure after the retries, answers kept)
define  the quality filter discards it (concept recall)
newcat  the labeller proposes a new category; the self-evaluation fails the first rewrite (correction)
drops   an invalid label first (retried); every rewrite drops a number (flagged for review)
err     the quality filter request fails with HTTP 500 while ``state["fail500"]`` is true
(case)  question induction: the first version has a dependent question, the checker fails it, the
        revision passes
"""

from __future__ import annotations

import json
import re

STAGES = [("split", "preparing exercises for a benchmark"), ("filter", "Judge whether the following exercise"),
          ("label", "category annotator"), ("variables", "Extract the variable objects"),
          ("rewrite", "Rewrite the background and question"), ("check", "evaluator of problem reformulation"),
          ("induce", "preparing evaluation questions"), ("induce_check", "reviewer of evaluation questions"),
          ("formulate", "Abstract the statistical formulation"), ("preview", "writing a small preview of a data table")]

ENTRIES = [
    {"entry_id": "two", "question": "TAG:two In a clinic 12% of booked patients do not attend. (a) If 4 are booked, "
     "what is the probability all attend? (b) What is the expected number of no-shows among 50 bookings?",
     "answer": "(a) 0.88^4 = 0.5997. (b) 50 x 0.12 = 6.", "data": None, "metadata": {"chapter": "3"}},
    {"entry_id": "broken", "question": "TAG:broken A sample of 40 bulbs has mean lifetime 1020 hours and standard "
     "deviation 60 hours. Test at the 5% level whether the mean exceeds 1000 hours.",
     "answer": "z = (1020-1000)/(60/sqrt(40)) = 2.108 > 1.645: reject.", "data": None},
    {"entry_id": "refuse", "question": "TAG:refuse Compare the yields of the three fertilisers in the table.",
     "answer": "F = 5.2, p = 0.02: yields differ.", "data": "\\begin{tabular}{ccc} A & B & C \\\\ 20 & 23 & 27 \\end{tabular}"},
    {"entry_id": "define", "question": "TAG:define Define the median.", "answer": "The middle ordered value.", "data": None},
    {"entry_id": "newcat", "question": "TAG:newcat 25 patients were followed for 36 months. Estimate the survival "
     "curve.", "answer": "Kaplan-Meier: S(36) = 0.61.", "data": None},
    {"entry_id": "drops", "question": "TAG:drops Of 200 voters, 116 favour the plan. Does the share exceed 50%?",
     "answer": "p-hat = 0.58, z = 2.26 > 1.645: yes.", "data": None},
    {"entry_id": "err", "question": "TAG:err The 9 weights 61, 64, 70, 58, 66, 72, 63, 69, 65 kg: is their "
     "variance above 16?", "answer": "s^2 = 20.3; chi-square test: not significantly above 16.", "data": None},
]

VARIABLES = {
    "two": {"p_noshow": {"id": "p_noshow", "value": 0.12, "class": "numerical", "role": "N/A", "description": "no-show rate"},
            "n_booked": {"id": "n_booked", "value": 4, "class": "numerical", "role": "N/A", "description": "bookings"}},
    "broken": {"lifetime": {"id": "lifetime", "value": {"n": 40, "mean": 1020, "sd": 60}, "class": "numerical",
                            "role": "N/A", "description": "bulb lifetimes"}},
    "newcat": {"months": {"id": "months", "value": 36, "class": "numerical", "role": "N/A", "description": "follow-up"}},
    "drops": {"favour": {"id": "favour", "value": {"n": 200, "x": 116}, "class": "numerical", "role": "N/A",
                         "description": "voters in favour"}},
    "err": {"weight": {"id": "weight", "value": [61, 64, 70, 58, 66, 72, 63, 69, 65], "class": "numerical",
                       "role": "N/A", "description": "weights"}},
    "case": {"wait_north": {"id": "wait_north", "value": {"mean": 31.5}, "class": "numerical", "role": "response",
                            "description": "waits at North"},
             "clinic": {"id": "clinic", "value": ["North", "South"], "class": "categorical", "role": "predictor",
                        "description": "clinic"}},
}
LABELS = {"broken": "Mean Test", "newcat": None, "drops": "Hypothesis Testing & Interval Estimation\\Proportion Test",
          "err": "Hypothesis Testing & Interval Estimation\\Variance Test", "refuse": "Hypothesis Testing & Interval Estimation\\ANOVA",
          "case": "Hypothesis Testing & Interval Estimation\\Mean Test"}
NEW_CATEGORY = "Survival Analysis\\Kaplan-Meier Estimation"


def stage_of(body) -> str:
    system = body["messages"][0]["content"]
    for name, marker in STAGES:
        if marker in system:
            return name
    raise ValueError(f"unknown stage: {system[:80]!r}")


def tag_of(body) -> str:
    m = re.search(r"TAG:(\w+)", body["messages"][1]["content"])
    return m.group(1) if m else "case"


class Annotator:
    """``__call__(body)`` answers one request; ``state["fail500"]`` switches the HTTP 500 of tag err."""

    def __init__(self):
        self.state = {"fail500": True}

    def __call__(self, body):
        stage, tag = stage_of(body), tag_of(body)
        msgs = body["messages"]
        attempt = (len(msgs) - 2) // 2 + 1
        if stage == "formulate":  # the evaluation's formulation prompt (a model under evaluation)
            return json.dumps({"category": "Mean Test", "variables": {}})
        user = json.loads(msgs[1]["content"])
        return getattr(self, stage)(tag, attempt, user, msgs)

    def split(self, tag, attempt, user, msgs):
        if tag == "two":
            return json.dumps({"background": "TAG:two In a clinic 12% of booked patients do not attend.", "pairs": [
                {"question": "If 4 are booked, what is the probability all attend?", "answer": "0.88^4 = 0.5997."},
                {"question": "What is the expected number of no-shows among 50 bookings?", "answer": "50 x 0.12 = 6."}]})
        if tag == "broken" and attempt == 1:
            return 'Here you go: {"background": "", "pairs": [{"question": "TAG:broken A sample'
        return "```json\n" + json.dumps({"background": "", "pairs": [{"question": user["question"],
                                                                     "answer": user["answer"]}]}) + "\n```"

    def filter(self, tag, attempt, user, msgs):
        if tag == "err" and self.state["fail500"]:
            return 500
        if tag == "define":
            return json.dumps({"judge": 0, "explanation": "Pure concept recall without computation."})
        return json.dumps({"judge": 1, "explanation": "Requires computation."})

    def label(self, tag, attempt, user, msgs):
        if tag == "newcat":
            return json.dumps({"suggested_category": "", "proposed_new_category": NEW_CATEGORY,
                               "reason": "Censored follow-up data fit no listed category."})
        if tag == "drops" and attempt == 1:
            return json.dumps({"suggested_category": "Tests\\Share Test", "proposed_new_category": "", "reason": "x"})
        if tag == "two":
            cat = ("Mathematical Calculation\\Expectation" if "expected" in user["question"]
                   else "Mathematical Calculation\\Event Probability & Independence")
            return json.dumps({"suggested_category": cat, "proposed_new_category": "", "reason": "probability model"})
        return json.dumps({"suggested_category": LABELS[tag], "proposed_new_category": "", "reason": "fits"})

    def variables(self, tag, attempt, user, msgs):
        if tag == "refuse":
            return "I'm sorry, but I can't help with that request."
        return json.dumps(VARIABLES[tag])

    def rewrite(self, tag, attempt, user, msgs):
        bg, q = user["background"], user["question"]
        out = {"background": ("We keep records. " + bg).strip(), "question": "Could we find out: " + q}
        if (tag == "broken" and attempt == 1) or tag == "drops":
            out = {k: v.replace("1020", "about a thousand").replace("116", "many") for k, v in out.items()}
        if tag == "newcat" and attempt > 1:
            out["question"] = out["question"].replace("Estimate the survival curve.", "How long do patients stay well?")
        return json.dumps(out)

    def check(self, tag, attempt, user, msgs):
        if tag == "newcat" and "Could we find out" in user["rewritten problem"]["question"] and \
                "survival" in user["rewritten problem"]["question"]:
            return json.dumps({"pass": False, "feedback": "The question names the method (survival curve)."})
        return json.dumps({"pass": True, "feedback": ""})

    def preview(self, tag, attempt, user, msgs):
        """Rows from the summary: each number column at its mean (or min), other columns their most frequent
        value; with state["bad_preview"], a number far outside its column's range on every attempt."""
        row = {}
        for c in user["columns"]:
            st = user["statistics"].get(c, {})
            num = st.get("mean", st.get("min")) if isinstance(st.get("min"), (int, float)) else None
            row[c] = num if num is not None else st.get("top")
            if self.state.get("bad_preview") and num is not None:
                row[c] = 1e12
        return json.dumps({"rows": [dict(row) for _ in range(5)]})

    def induce(self, tag, attempt, user, msgs):
        qs = [{"question": "Do waiting times differ between the North and South clinics?",
               "answer": "Yes: 31.5 vs 24.1 minutes, Welch t = 2.41, p = 0.026.", "variables": ["clinic", "wait_min"]},
              {"question": "Using the answer to question 1, which clinic should add staff?",
               "answer": "North.", "variables": ["clinic"]}]
        if attempt > 1:
            qs[1] = {"question": "Does waiting time change with the hour of arrival?",
                     "answer": "It increases with the hour (r = 0.58).", "variables": ["arrival_hour", "wait_min"]}
        return json.dumps({"overview": "We recorded waiting times of patients at two clinics, North and South, over one "
                                       "week, with the hour of arrival.", "questions": qs})

    def induce_check(self, tag, attempt, user, msgs):
        if any("Using the answer to question 1" in q["question"] for q in user["questions"]):
            return json.dumps({"pass": False, "feedback": "Question 2 depends on question 1."})
        return json.dumps({"pass": True, "feedback": ""})

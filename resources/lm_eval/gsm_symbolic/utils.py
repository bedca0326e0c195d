"""GSM-Base and GSM-Variants docs from rows of the official GSM-Symbolic release (written by
`earnest lm-eval-task`). A release row: id (template), instance (0..49), question, answer,
original_id, original_question, original_answer; each doc keeps `id` and `instance`."""


def process_base(dataset):
    """One doc per template: its GSM8K original (instance -1), from the template's first row."""
    seen = set()

    def first(row):
        if row["id"] in seen:
            return False
        seen.add(row["id"])
        return True

    firsts = dataset.filter(first)
    return firsts.map(lambda row: {"question": row["original_question"], "answer": row["original_answer"],
                                   "instance": -1})


def process_variants(dataset):
    """Every instance of every template, as released."""
    return dataset

# GSM-Symbolic items: results/data/{gsm_base,gsm_variants}.parquet.
# Package source: each template's variants are their own file, keyed by seed and count, so
# choosing more templates draws only the new ones and nothing is ever drawn twice.

VARIANTS_DIR = f"results/data/variants/seed{GSM['seed']}-n{GSM['variants']}"


if GSM["source"] == "hub":
    RELEASE_FILE = str(release_path(GSM["hub"]["repo"], GSM["hub"]["revision"], GSM["hub"]["file"]))

    # the official release at its pinned revision, fetched once on the login node (as fetch_model)
    rule fetch_gsm_symbolic:
        output:
            RELEASE_FILE,
        log:
            "logs/fetch_gsm_symbolic.log",
        localrule: True
        conda:
            "../envs/generate.yaml"
        container:
            env_container("generate")
        params:
            repo=GSM["hub"]["repo"],
            revision=GSM["hub"]["revision"],
            file=GSM["hub"]["file"],
            cache_dir=GSM["hub"]["cache_dir"],
        script:
            "../workflow/scripts/fetch_gsm_symbolic.py"


if GSM["source"] in ("jsonl", "hub"):

    rule release_items:
        input:
            RELEASE_FILE if GSM["source"] == "hub" else _repo_path(GSM["jsonl"]),
        output:
            "results/data/{dataset}.parquet",
        log:
            "logs/release_items/{dataset}.log",
        wildcard_constraints:
            dataset="gsm_base|gsm_variants",
        group:
            "prep"
        conda:
            "../envs/score.yaml"
        container:
            env_container("score")
        resources:
            **SMALL_JOB,
        params:
            templates=TEMPLATES,
            variants=GSM["variants"],
        script:
            "../workflow/scripts/items_release.py"

else:

    rule base_items:
        output:
            "results/data/gsm_base.parquet",
        log:
            "logs/base_items.log",
        group:
            "prep"
        conda:
            "../envs/score.yaml"
        container:
            env_container("score")
        resources:
            **SMALL_JOB,
        params:
            templates=TEMPLATES,
        script:
            "../workflow/scripts/items_base.py"

    rule template_variants:
        output:
            f"{VARIANTS_DIR}/t{{template}}.parquet",
        log:
            f"logs/template_variants/seed{GSM['seed']}-n{GSM['variants']}/t{{template}}.log",
        group:
            "prep"
        conda:
            "../envs/score.yaml"
        container:
            env_container("score")
        resources:
            **SMALL_JOB,
        params:
            variants=GSM["variants"],
            seed=GSM["seed"],
            instantiator=GSM["instantiator"],
        script:
            "../workflow/scripts/items_variants.py"

    rule variant_items:
        input:
            expand(f"{VARIANTS_DIR}/t{{template}}.parquet", template=TEMPLATES),
        output:
            "results/data/gsm_variants.parquet",
        log:
            "logs/variant_items.log",
        group:
            "prep"
        conda:
            "../envs/score.yaml"
        container:
            env_container("score")
        resources:
            **SMALL_JOB,
        script:
            "../workflow/scripts/items_concat.py"


# Ex4: number-controlled variant sets (gsm_matched, gsm_shifted<k>) drawn by earnest's instantiator
# from the package's templates (all selected templates in one job: seconds), with a per-template
# report (unmatchable templates and why, mean gamma against the original's) and the K-S test.
rule controlled_items:
    output:
        variants="results/data/{cset}.parquet",
        report="results/data/{cset}.report.tsv",
    log:
        "logs/controlled_items/{cset}.log",
    wildcard_constraints:
        cset=r"gsm_matched|gsm_shifted\d+",
    conda:
        "../envs/score.yaml"
    container:
        env_container("score")
    resources:
        **CPU_JOB,
    params:
        templates=TEMPLATES,
        variants=GSM["variants"],
        seed=GSM["seed"],
        window=EX4["window"],
        balance=EX4["balance"],
    script:
        "../workflow/scripts/items_controlled.py"

# GSM-Symbolic items: results/data/{gsm_base,gsm_variants}.parquet.
# Package source: each template's variants are their own file, keyed by seed and count, so
# choosing more templates draws only the new ones and nothing is ever drawn twice.

VARIANTS_DIR = f"results/data/variants/seed{GSM['seed']}-n{GSM['variants']}"


if GSM["source"] == "jsonl":

    rule release_items:
        input:
            _repo_path(GSM["jsonl"]),
        output:
            "results/data/{dataset}.parquet",
        log:
            "logs/release_items/{dataset}.log",
        params:
            templates=TEMPLATES,
            variants=GSM["variants"],
        resources:
            slurm_partition=CPU_PARTITION,
            slurm_account=SLURM_ACCOUNT,
        conda:
            "../envs/score.yaml"
        script:
            "../workflow/scripts/items_release.py"

else:

    rule base_items:
        output:
            "results/data/gsm_base.parquet",
        log:
            "logs/base_items.log",
        params:
            templates=TEMPLATES,
        resources:
            slurm_partition=CPU_PARTITION,
            slurm_account=SLURM_ACCOUNT,
        conda:
            "../envs/score.yaml"
        script:
            "../workflow/scripts/items_base.py"

    rule template_variants:
        output:
            f"{VARIANTS_DIR}/t{{template}}.parquet",
        log:
            f"logs/template_variants/seed{GSM['seed']}-n{GSM['variants']}/t{{template}}.log",
        params:
            variants=GSM["variants"],
            seed=GSM["seed"],
        resources:
            slurm_partition=CPU_PARTITION,
            slurm_account=SLURM_ACCOUNT,
        conda:
            "../envs/score.yaml"
        script:
            "../workflow/scripts/items_variants.py"

    rule variant_items:
        input:
            expand(f"{VARIANTS_DIR}/t{{template}}.parquet", template=TEMPLATES),
        output:
            "results/data/gsm_variants.parquet",
        log:
            "logs/variant_items.log",
        params:
        resources:
            slurm_partition=CPU_PARTITION,
            slurm_account=SLURM_ACCOUNT,
        conda:
            "../envs/score.yaml"
        script:
            "../workflow/scripts/items_concat.py"

# The paper's experimental design (section 3.6): Ex1 decides which models go on to Ex2.


checkpoint ex2_selection:
    input:
        EX1_SUMMARIES,
    output:
        EX2_DECISION,
    log:
        "logs/ex2_selection.log",
    params:
        ex1_prompt=EX1_PROMPT,
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/stats.yaml"
    script:
        "../workflow/scripts/select_ex2.py"

# The paper's experimental design (section 3.6): Ex1 decides which models go on to Ex2.


checkpoint ex2_selection:
    input:
        EX1_SUMMARIES,
    output:
        EX2_DECISION,
    log:
        "logs/ex2_selection.log",
    conda:
        "../envs/stats.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        ex1_prompt=EX1_PROMPT,
    script:
        "../workflow/scripts/select_ex2.py"

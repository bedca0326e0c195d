# Power (rules/power.smk): settings, the published tables the study reads, and its targets.
from earnest.gsm.power_design import TABLE2_FILE, TABLE3_FILE, published_scenarios
from earnest.stats.power import PowerError

POWER = config["power"]  # defaults: config/schema.yaml
POWER_DIR = "results/power"
POWER_PUBLISHED = Path(_shipped("resources/published"))
try:  # a scenario that names no paper model stops the run before any job
    published_scenarios(POWER_PUBLISHED, POWER["scenarios"])
except PowerError as exc:
    config_error(f"power.scenarios: {exc}")


def power_targets(wildcards=None):
    out = ["results/tables/power/results_mde.csv"]
    if POWER["enabled"]:
        out += [f"{POWER_DIR}/paper_design/power.csv", f"{POWER_DIR}/paper_design/power_curves.png"]
    return out

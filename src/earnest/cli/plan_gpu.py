"""``earnest plan-gpu``: the memory plan of every GPU generation job of a config (earnest.backends.memplan)."""

from __future__ import annotations

import sys
from pathlib import Path


def _cmd(args) -> int:
    from earnest.backends import memplan
    from earnest.config import ConfigError, _workflow_dir, merge_config_files, prompt_texts, validate_schema
    from earnest.gsm.prompts import PromptFormatError

    try:
        base = _workflow_dir(args.workflow)
        paths = list(args.configfile) or [base / "config" / "config.yaml"]
        config = merge_config_files(paths)
        validate_schema(config, base / "config" / "schema.yaml")
        prompts = prompt_texts(config, base)
        cards = None
        if args.cards:
            cards = [memplan.H100, memplan.H200]
        plans, notes = memplan.plan_config(config, prompts)
        extra = {}
        if cards:
            for card in cards:
                for jp in memplan.plan_config(config, prompts, cards=[card])[0]:
                    extra[jp.model, jp.prompt, jp.language, card[0]] = jp
    except (ConfigError, PromptFormatError, memplan.PlanError) as exc:
        print(f"earnest: plan-gpu: {exc}", file=sys.stderr)
        return 1
    print(plan_table(plans, extra, [c[0] for c in cards or []]))
    for note in notes:
        print(f"note: {note}")
    refused = [jp for jp in plans if jp.refused]
    for jp in refused:
        print(f"refused: {jp.problem}", file=sys.stderr)
    return 1 if refused else 0


def plan_table(plans, extra: dict, card_names: list[str]) -> str:
    """A Markdown table: one row per model × prompt × language."""
    gib = 1 << 30
    head = ["model", "prompt", "lang", "card", "slots", "weights GiB", "MiB/slot", "prefill GiB (rows)",
            "peak GiB"] + [f"slots {c}" for c in card_names]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for jp in plans:
        p = jp.plan
        slots = "refused" if jp.refused else str(p.slots)
        cells = [jp.model, jp.prompt, jp.language, jp.card, slots, f"{p.weights / gib:.1f}",
                 f"{(p.per_slot_kv + p.per_slot_step) / (1 << 20):.0f}", f"{p.prefill / gib:.1f} ({p.prefill_rows})",
                 f"{(p.peak() if p.slots else p.peak(1)) / gib:.1f}"]
        for c in card_names:
            o = extra.get((jp.model, jp.prompt, jp.language, c))
            cells.append("refused" if o is None or o.refused else str(o.plan.slots))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "plan-gpu", help="the GPU memory plan of every generation job of a config, before any job runs",
        description="For every transformers model on a GPU x prompt format x language of the config: weights, "
                    "per-slot key/value cache, prefill and attention workspace from the model's config alone (no "
                    "weights), and the decoding slots on the card the model declares (resources.gpu_mem_mb), or "
                    "a refusal naming the numbers and the smallest card that fits. Exit status 1 when any job is "
                    "refused (earnest.backends.memplan).")
    p.add_argument("--configfile", nargs="*", type=Path, default=[],
                   help="config files in the order given to snakemake --configfile (none: config/config.yaml)")
    p.add_argument("--workflow", type=Path, default=None, help="the workflow directory (as check-config)")
    p.add_argument("--cards", action="store_true", help="also plan every job on an H100 80GB and an H200 141GB")
    p.set_defaults(func=_cmd)

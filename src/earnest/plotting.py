"""What every figure of the project shares, whichever benchmark it shows: matplotlib on the Agg
backend (imported on first use), saving a figure as ``stem.png``, ``stem.pdf`` and ``stem.svg`` (the
report shows the SVG: it scales without blurring, so legends stay readable), and the figure
that says why there is nothing to draw. Benchmark figures (earnest.gsm.plots) and the statistics
engine's (earnest.stats.plots_power) both draw with these."""

from __future__ import annotations

from pathlib import Path

#: the colour of notes drawn on a figure (missing values, degenerate fits, nothing to draw)
NOTE_COLOUR = "#b2182b"
#: the widest a saved figure may be to show at full size in the report (points): Snakemake's report
#: at a 1280 px window gives its content 1040 px (less the 240 px menu), 780 pt; a wider SVG is shrunk
#: until its legend and notes are unreadable. Figures sized by their content cap their width here.
REPORT_WIDTH_PT = 780.0
#: the same in inches, less a margin for what ``bbox_inches="tight"`` adds (labels past the axes)
REPORT_WIDTH_IN = REPORT_WIDTH_PT / 72 - 0.6


def pyplot():
    """matplotlib.pyplot on the Agg backend (importing this module does not import matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, stem: str | Path) -> list[Path]:
    """Write ``fig`` to ``stem.png``, ``stem.pdf`` and ``stem.svg`` (folders made as needed), close it,
    return the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.parent / f"{stem.name}.{ext}" for ext in ("png", "pdf", "svg")]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    pyplot().close(fig)
    return paths


def empty_figure(stem: str | Path, title: str, note: str) -> list[Path]:
    """A figure that says why there is nothing to draw (the rule still owes its output)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 2.2))
    ax.set_axis_off()
    ax.set_title(title, fontsize=11)
    ax.text(0.5, 0.45, note, ha="center", va="center", wrap=True, fontsize=10, color=NOTE_COLOUR,
            transform=ax.transAxes)
    return save_figure(fig, stem)

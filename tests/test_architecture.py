"""The layout tells the architecture: no import cycle between earnest modules, the generic
machinery imports no benchmark, and the library knows nothing of Snakemake."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "earnest"
# the benchmarks and the readers of other tools' results; everything else is generic machinery
BENCHMARKS = ("earnest.gsm", "earnest.statform", "earnest.readers")
# Modules whose job is to assemble everything, and so may import benchmarks and readers: the
# command-line front ends and the one validation of the whole config. Nothing else may.
FRONT_ENDS = {
    "earnest.cli",                 # `earnest ...`: every subcommand, GSM's and StatFormBench's included
    "earnest.config",              # checks every section of the config: datasets, prompt files, StatFormBench's build
    "earnest.cli.glmm",            # `earnest glmm`: reads lm-eval / Inspect files, writes GSM's tables and figures
    "earnest.cli.common",          # what the stats subcommands share: the lm-eval / Inspect input options
    "earnest.cli.compare",         # `earnest compare`: reads lm-eval / Inspect files
    "earnest.cli.power",           # `earnest power`: reads lm-eval / Inspect files, the paper's design (earnest.gsm)
    "earnest.cli.plan_gpu",        # `earnest plan-gpu`: the config's prompt formats (through earnest.config)
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """earnest modules ``path`` imports, anywhere in the file (function-level imports count)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    paths = sorted(PKG.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def test_no_import_cycle_between_modules():
    g = graph()
    # a package's __init__ re-exporting its own submodules is not a cycle of the design
    edges = {m: {t for t in ts if not (m.startswith(t + ".") and t in g)} for m, ts in g.items()}
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_generic_machinery_imports_no_benchmark():
    g = graph()
    offenders = sorted(f"{m} imports {t}" for m, ts in g.items() if not m.startswith(BENCHMARKS)
                       for t in ts if t.startswith(BENCHMARKS) and m not in FRONT_ENDS)
    assert not offenders, offenders


def test_readers_import_no_benchmark():
    # the readers of other tools' results sit below the benchmarks: what a benchmark adds (GSM's gamma
    # of a question) is passed in by the front end, not imported
    g = graph()
    offenders = sorted(f"{m} imports {t}" for m, ts in g.items() if m.startswith("earnest.readers")
                       for t in ts if t.startswith(("earnest.gsm", "earnest.statform")))
    assert not offenders, offenders


def test_front_ends_exist():
    # an exception for a module that is gone (or renamed) would silently cover its successor
    g = graph()
    assert FRONT_ENDS <= set(g), sorted(FRONT_ENDS - set(g))


def test_library_knows_nothing_of_snakemake():
    users = [str(p.relative_to(SRC)) for p in PKG.rglob("*.py")
             if any(isinstance(n, (ast.Import, ast.ImportFrom)) and "snakemake" in ast.unparse(n)
                    for n in ast.walk(ast.parse(p.read_text())))]
    assert not users, users


#: The sandbox's modules the worker program runs (``python -I -S .../earnest/sandbox/worker.py``): the
#: worker imports these and the standard library only, and so do they (none of them imports
#: earnest.sandbox's ``__init__`` or the calling side, ``earnest.sandbox.pool``).
SANDBOX_WORKER_SIDE = {
    "earnest.sandbox.worker", "earnest.sandbox.policy", "earnest.sandbox.protocol", "earnest.sandbox.layers",
    "earnest.sandbox.kernel", "earnest.sandbox.kernel.seccomp", "earnest.sandbox.kernel.landlock",
    "earnest.sandbox.kernel.namespaces",
}


def test_sandbox_worker_imports_only_the_standard_library_and_its_own_modules():
    import sys

    g = graph()
    assert SANDBOX_WORKER_SIDE <= set(g), sorted(SANDBOX_WORKER_SIDE - set(g))
    offenders = []
    for name in sorted(SANDBOX_WORKER_SIDE):
        path = PKG.joinpath(*name.split(".")[1:])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for target in g[name]:
            if target not in SANDBOX_WORKER_SIDE:
                offenders.append(f"{name} imports {target}")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                tops = [node.module.split(".")[0]]
            else:
                continue
            offenders += [f"{name} imports {top}" for top in tops
                          if top != "earnest" and top not in sys.stdlib_module_names and top != "__future__"]
    assert not offenders, offenders

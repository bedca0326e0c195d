"""Which code answers use a channel between answers of the authors' single-process run (issues 41.5, 54.4).

The authors' code (the-mysh/gsm-symbolic-benchmarking @ d063998, ``answer_extractor.py``) runs every
code answer of a whole benchmark run in one Python process: each answer gets a fresh namespace, but
the modules in it (``SAFE_IMPORTS``: numbers, math, cmath, decimal, fractions, random, typing,
array) are the process's own module objects, and whatever an answer changes in them, or reaches
through them, is what the next answers see. earnest runs each answer in a fresh fork (the right
thing for containment), so none of this carries over; resources/FIDELITY.md (section 15) names every
such channel. This script measures whether a set of answers uses one:

    python scripts/state_channels.py FILE_OR_DIR ... [--json OUT.json] [--static]

By default each answer runs (the program the authors' extractor would run:
``earnest.gsm.extraction.locate_solution_reference``) in earnest's sandbox in reference mode, which
compares the process's state before and after it (``Sandbox.run_many(..., channels=True)``): every
attribute of every module in ``sys.modules`` (values, container contents, classes' own attributes),
and what every zero-argument getter of those modules returns (``sys.getrecursionlimit()``,
``decimal.getcontext()``, ``random.getstate()``, ``abc.get_cache_token()`` ...); whatever differs,
beyond what differs between two snapshots with nothing between them, is a channel, and a system call
the sandbox refused (``os.chdir``, a signal handler, a thread) is one too (the authors' process makes
it). No list of channels is consulted: a channel nobody named is found by the state it changes. The
names are then sorted into the categories of ``CHANNELS`` for the report (``categorize``). ``--static``
instead searches the program with Python's parser for the constructs of each channel (regular
expressions where it does not parse), without running anything: it finds uses, not changes (a read
through ``().__class__`` counts there), and misses what it was not told about.

Inputs: JSON lines with a ``response`` field (earnest's generations exported with ``earnest extract``,
the golden sets), the hostile corpus's ``NN_name.txt`` files (the response after the ``---`` header),
and Jupyter notebooks (``.ipynb``: the model answers their outputs print, e.g. the authors' own
notebooks).

Exit status 0; the report (and ``--json``) lists every answer with a channel: its source, the
channel, the line (static) and the construct (static) or the state it changed (default).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import types
from pathlib import Path

#: the modules the authors' namespace holds without any import (earnest.sandbox.policy.REFERENCE_MODULES)
MODULES = ("numbers", "math", "cmath", "decimal", "fractions", "random", "typing", "array")

#: Every channel between answers of the authors' run, with what carries it (FIDELITY.md section 15).
CHANNELS = {
    "module_attribute": "an attribute of a namespace module, or of a class or object reached through one, "
                        "assigned or deleted (math.pi = 3, del math.sqrt, fractions.Fraction.x = 1)",
    "decimal_context": "decimal's context of the thread (getcontext().prec / rounding / traps / Emax, "
                       "setcontext, DefaultContext; and the flags every inexact operation sets, read later)",
    "random_state": "random's one generator: every seed, setstate and draw moves the state the next "
                    "answer that draws starts from",
    "abc_registry": "numbers' abstract classes (Number.register(str) changes isinstance for every later answer)",
    "interpreter": "the interpreter's settings and the process's state reached through a module attribute "
                   "(typing.sys.setrecursionlimit, set_int_max_str_digits, sys.modules, os.environ, "
                   "warnings filters, threads left running, sys.exit / os._exit ending the run)",
    "escape": "an object's internals (__globals__, __builtins__, __subclasses__, __self__, __dict__, "
              "__class__): from there every object of the process, the evaluator's own included",
}

#: random's functions on its shared generator (random.Random(...) and SystemRandom make their own)
RANDOM_STATE = frozenset({
    "seed", "setstate", "getstate", "random", "uniform", "randint", "randrange", "choice", "choices",
    "shuffle", "sample", "gauss", "normalvariate", "lognormvariate", "expovariate", "vonmisesvariate",
    "gammavariate", "betavariate", "paretovariate", "weibullvariate", "triangular", "getrandbits",
    "randbytes", "binomialvariate", "_inst",
})
DECIMAL_CONTEXTS = frozenset({"getcontext", "setcontext", "DefaultContext", "BasicContext", "ExtendedContext"})
CONTEXT_WRITES = frozenset({"clear_flags", "clear_traps", "_set_rounding", "_set_integer_check"})
INTERPRETER = frozenset({
    "setrecursionlimit", "set_int_max_str_digits", "setswitchinterval", "settrace", "setprofile",
    "modules", "stdout", "stderr", "stdin", "environ", "putenv", "chdir", "filterwarnings",
    "simplefilter", "resetwarnings", "exit", "_exit", "abort", "kill", "signal", "Thread",
    "start_new_thread", "set_asyncgen_hooks", "setdlopenflags", "collect", "disable", "freeze",
})
ESCAPES = frozenset({"__globals__", "__builtins__", "__subclasses__", "__self__", "__dict__", "__class__",
                     "__base__", "__bases__", "__mro__", "__closure__", "__code__", "__func__", "__module__",
                     "__loader__", "__spec__", "__import__"})


def _module_valued() -> dict[str, frozenset]:
    """Per namespace module, its attributes that are modules (typing.sys, fractions.math, random._os)."""
    import importlib

    out = {}
    for name in MODULES:
        mod = importlib.import_module(name)
        out[name] = frozenset(a for a in dir(mod) if isinstance(getattr(mod, a, None), types.ModuleType))
    return out


MODULE_VALUED = _module_valued()


def _chain(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """The root of an attribute chain and its attribute names, outermost last (a.b.c -> a, [b, c])."""
    names = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.value
    return node, names[::-1]


def _root_module(node: ast.AST) -> str | None:
    root, _ = _chain(node)
    while isinstance(root, ast.Call):       # decimal.getcontext().prec: the call's own chain
        root, _ = _chain(root.func)
    return root.id if isinstance(root, ast.Name) and root.id in MODULES else None


def _mentions_context(node: ast.AST, bound: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in DECIMAL_CONTEXTS:
            return True
        if isinstance(sub, ast.Name) and (sub.id in bound or sub.id in DECIMAL_CONTEXTS):
            return True
    return False


def scan_tree(tree: ast.AST) -> list[tuple[str, int, str]]:
    """(channel, line, construct) for every use of a channel in a parsed program."""
    found: list[tuple[str, int, str]] = []
    # names bound to decimal's context (ctx = decimal.getcontext())
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and _mentions_context(node.value, set()) for t in node.targets if isinstance(t, ast.Name)}

    def add(channel: str, node: ast.AST) -> None:
        try:
            text = ast.unparse(node)
        except Exception:  # noqa: BLE001 - the construct's text is only for the report
            text = type(node).__name__
        found.append((channel, getattr(node, "lineno", 0), text[:120]))

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            for sub in ([t] if not isinstance(t, (ast.Tuple, ast.List)) else list(t.elts)):
                if not isinstance(sub, (ast.Attribute, ast.Subscript)):
                    continue
                if _mentions_context(sub, bound):
                    add("decimal_context", node)
                elif _root_module(sub) is not None:
                    add("module_attribute", node)
        if isinstance(node, ast.Attribute):
            root, names = _chain(node)
            if node.attr in ESCAPES:
                add("escape", node)
            if isinstance(root, ast.Name) and root.id in MODULES:
                # ast.walk visits every link of a chain: judge each chain once, at its outermost link
                if len(names) == 1 and root.id == "random" and node.attr in RANDOM_STATE:
                    add("random_state", node)
                if len(names) >= 2 and node.attr == names[-1]:
                    if root.id == "numbers" and node.attr == "register":
                        add("abc_registry", node)
                    if any(n in INTERPRETER for n in names[1:]):
                        add("interpreter", node)
        if isinstance(node, ast.MatchClass) and any(a in ESCAPES for a in node.kwd_attrs):
            add("escape", node)       # case C(__globals__=g): an attribute read by a class pattern
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(e in node.value for e in ESCAPES):
            add("escape", node)       # "{0.__globals__}".format(f): an attribute read by a format string
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "setcontext" or (node.func.attr in CONTEXT_WRITES and _mentions_context(node.func, bound)):
                add("decimal_context", node)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "flags" \
                and _mentions_context(node.value, bound):
            add("decimal_context", node)
    # one report per (channel, line)
    seen, out = set(), []
    for f in found:
        if f[:2] not in seen:
            seen.add(f[:2])
            out.append(f)
    return sorted(out, key=lambda f: (f[1], f[0]))


_MODS = "|".join(MODULES)
#: the same constructs in text that does not parse
PATTERNS = [
    ("module_attribute", re.compile(rf"\b(?:{_MODS})(?:\.\w+)+\s*(?://|\*\*|<<|>>|[-+*/%&|^@])?=(?!=)")),
    ("module_attribute", re.compile(rf"\bdel\s+(?:{_MODS})\.\w+")),
    ("decimal_context", re.compile(r"\b(?:getcontext\(\)|DefaultContext|BasicContext|ExtendedContext)(?:\.\w+|\[[^\]]*\])+\s*=(?!=)"
                                   r"|\bsetcontext\s*\(|\.clear_(?:flags|traps)\s*\(|\bgetcontext\(\)\.flags\b")),
    ("random_state", re.compile(r"\brandom\.(?:" + "|".join(sorted(RANDOM_STATE)) + r")\b")),
    ("abc_registry", re.compile(r"\bnumbers\.\w+\.register\s*\(")),
    ("interpreter", re.compile(rf"\b(?:{_MODS})\.(?:\w+\.)*(?:" + "|".join(sorted(INTERPRETER)) + r")\b")),
    ("interpreter", re.compile(r"\b(?:" + "|".join(rf"{m}\.(?:{'|'.join(sorted(v))})\b" for m, v in MODULE_VALUED.items() if v) + ")")),
    ("escape", re.compile(r"\.(?:" + "|".join(sorted(ESCAPES)) + r")\b")),
]


def scan_text(text: str) -> list[tuple[str, int, str]]:
    found, seen = [], set()
    for lineno, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for channel, pattern in PATTERNS:
            m = pattern.search(code)
            if m and (channel, lineno) not in seen:
                seen.add((channel, lineno))
                found.append((channel, lineno, m.group().strip()[:120]))
    return found


def scan_response(response: str) -> dict:
    """The channels one answer uses, in the program the authors' extractor would run."""
    from earnest.gsm.extraction import locate_solution_reference

    program, _, _ = locate_solution_reference(response)
    text = program if program is not None else response
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {"parsed": False, "located": program is not None, "channels": scan_text(text)}
    return {"parsed": True, "located": program is not None, "channels": scan_tree(tree)}


def categorize(name: str) -> str:
    """The channel (a key of ``CHANNELS``) of one piece of state the sandbox saw change."""
    lowered = name.lower()
    if name.endswith("getstate()") or name.startswith("random._inst"):
        return "random_state"
    if "context" in lowered and name.startswith(("decimal.", "_decimal.")):
        return "decimal_context"
    if name.endswith("get_cache_token()"):
        return "abc_registry"
    if name.startswith("(") or name.endswith("()") or name.startswith((
            "sys.", "os.", "posix.", "warnings.", "_warnings.", "signal.", "_signal.", "gc.", "threading.",
            "_thread.", "atexit.", "faulthandler.", "builtins.")):
        return "interpreter"
    return "module_attribute"


def scan_responses(responses: list[str], sandbox=None) -> list[dict]:
    """The channels each answer opens, found by running it (reference mode) and comparing the
    process's state before and after (module docstring): per answer ``located`` (the authors'
    extractor finds a function), ``error_class`` (reference mode's), ``changed`` (the state's names)
    and ``channels`` (channel, 0, name)."""
    from earnest.gsm.extraction import locate_solution_reference
    from earnest.sandbox import Limits, Sandbox

    programs = [locate_solution_reference(r)[0] for r in responses]
    todo = [i for i, p in enumerate(programs) if p is not None]
    own = sandbox is None
    # the scan reads the process's state twice per answer: limits that hold on a loaded machine
    box = Sandbox(limits=Limits(cpu_seconds=4, wall_seconds=60.0)) if own else sandbox
    try:
        results = box.run_many([programs[i] for i in todo], fidelity="reference", channels=True) if todo else []
    finally:
        if own:
            box.close()
    out = [{"parsed": True, "located": p is not None, "error_class": "no_function" if p is None else "",
            "changed": [], "channels": []} for p in programs]
    for i, res in zip(todo, results):
        out[i].update(error_class=res.error_class, changed=list(res.channels),
                      channels=[(categorize(n), 0, n) for n in res.channels])
    return out


# ------------------------------------------------------------------------------------ inputs

def _jsonl(path: Path):
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if isinstance(row.get("response"), str):
                yield f"{path.name}:{row.get('id', i)}", row["response"], path.name


def _corpus(path: Path):
    text = path.read_text(encoding="utf-8")
    head, sep, body = text.partition("\n---\n")
    yield path.name, body if sep else text, f"{path.parent.name}/*.txt"


_RULE = re.compile(r"^-{10,}\s*$", re.M)


def _notebook(path: Path):
    """Model answers printed in a notebook's outputs: the pieces between lines of dashes (the
    authors' notebooks print ANSWER, a line of dashes, the response, a line of dashes) that hold
    code (an indented assignment or return, or a def)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    k = 0
    for ci, cell in enumerate(nb.get("cells", [])):
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain") or ""
            text = "".join(text) if isinstance(text, list) else str(text)
            for piece in _RULE.split(text):
                if re.search(r"^(?:    |\t)\S.*(?:=|\breturn\b)|^def \w+\(", piece, re.M):   # code lines
                    k += 1
                    yield f"{path.name}:cell{ci}:{k}", piece.strip("\n"), path.name


def answers(paths: list[Path]):
    for p in paths:
        if p.is_dir():
            yield from answers(sorted(x for x in p.iterdir() if x.suffix in (".jsonl", ".txt", ".ipynb")))
        elif p.suffix == ".jsonl":
            yield from _jsonl(p)
        elif p.suffix == ".ipynb":
            yield from _notebook(p)
        elif p.suffix == ".txt":
            yield from _corpus(p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", type=Path, help="JSON lines, corpus .txt files, notebooks or folders of them")
    ap.add_argument("--json", type=Path, help="write the full report here")
    ap.add_argument("--static", action="store_true",
                    help="search the programs for the channels' constructs instead of running them")
    args = ap.parse_args(argv)
    report = {"channels": CHANNELS, "method": "static" if args.static else "state before and after",
              "sources": {}, "hits": []}
    found = list(answers(args.inputs))
    scans = ([scan_response(response) for _, response, _ in found] if args.static
             else scan_responses([response for _, response, _ in found]))
    for (name, response, source), res in zip(found, scans):
        s = report["sources"].setdefault(source, {"answers": 0, "parsed": 0, "with_channel": 0,
                                                  "by_channel": {c: 0 for c in CHANNELS}})
        s["answers"] += 1
        s["parsed"] += int(res["parsed"])
        if res["channels"]:
            s["with_channel"] += 1
        for channel in sorted({c for c, _, _ in res["channels"]}):
            s["by_channel"][channel] += 1
        for channel, line, text in res["channels"]:
            report["hits"].append({"answer": name, "channel": channel, "line": line, "construct": text,
                                   "parsed": res["parsed"]})
    print(f"{'source':44} {'answers':>7} {'parsed':>6} {'w/ channel':>10}  by channel")
    for source, s in report["sources"].items():
        by = ", ".join(f"{c} {n}" for c, n in s["by_channel"].items() if n) or "-"
        print(f"{source:44} {s['answers']:7d} {s['parsed']:6d} {s['with_channel']:10d}  {by}")
    for hit in report["hits"]:
        print(f"  {hit['answer']}: {hit['channel']} (line {hit['line']}): {hit['construct']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())

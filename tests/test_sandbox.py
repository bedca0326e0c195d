"""The code sandbox: static refusal, process isolation, limits, classification, no stray processes."""

from __future__ import annotations

import ast
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from earnest.sandbox import Limits, Sandbox, check_source, find_violations
from hostile_checks import LIMITS, descendants, wait_until_clean


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=LIMITS) as sandbox:
        yield sandbox


# ---------------------------------------------------------------- static check

@pytest.mark.parametrize("source", [
    "import os",
    "from subprocess import run",
    "x = open('f')",
    "eval('1')",
    "x = ().__class__",
    "__builtins__",
    "getattr(1, 'real')",
    "import math as __m__",
    "'{0.__class__}'.format(1)",
    "(x for x in []).gi_frame",
    "type(1).mro()",
    "from random import _os",
    "from . import x",
    "def __init__(): pass",
    "\uff45\uff56\uff41\uff4c('1')",  # fullwidth 'eval': the parser normalises it (NFKC)
])
def test_static_check_refuses(source):
    assert find_violations(ast.parse(source)), source


@pytest.mark.parametrize("source", [
    "import math\nx = math.sqrt(2)",
    "from fractions import Fraction\nx = Fraction(1, 3)",
    "from decimal import Decimal, ROUND_HALF_UP",
    "import statistics\nx = statistics.mean([1, 2])",
    "def solution():\n    _ = 3\n    total_ = [i for i in range(10)]\n    return sum(total_) // 2",
    "x = '{:.2f}'.format(1.5)",
    "x = round(2.5) + abs(-3) + max(1, 2)",
])
def test_static_check_allows_ordinary_code(source):
    assert find_violations(ast.parse(source)) == []


def test_check_source_classifies_syntax():
    assert check_source("def solution(:\n").error_class == "syntax_error"
    assert check_source("x = 1\x00").error_class == "syntax_error"
    assert check_source("import os\n").error_class == "forbidden_construct"
    assert check_source("def solution():\n    return 1\n") is None
    long = "def solution():\n" + "    x = 1\n" * 50_000 + "    return x\n"
    assert check_source(long).error_class == "resource_limit"


# ---------------------------------------------------------------- ordinary results

def test_results_and_classes(box):
    cases = {
        "def solution():\n    return 3 * 6\n": ("", 18.0),
        "def solution():\n    return 7 / 2\n": ("", 3.5),
        "from fractions import Fraction\ndef solution():\n    return Fraction(3, 4)\n": ("", 0.75),
        "from decimal import Decimal\ndef solution():\n    return Decimal('2.50')\n": ("", 2.5),
        "import math\ndef solution():\n    return math.ceil(17.2)\n": ("", 18.0),
        "def solution():\n    x = 1\n": ("none_returned", None),
        "def solution():\n    return\n": ("none_returned", None),
        "def solution():\n    return 'eighteen'\n": ("not_a_number", None),
        "def solution():\n    return True\n": ("not_a_number", None),
        "def solution():\n    return 2j\n": ("not_a_number", None),
        "def solution():\n    return undefined_name\n": ("name_error", None),
        "def solution():\n    y = x\n    x = 1\n    return y\n": ("name_error", None),
        "def solution():\n    return 1 + 'a'\n": ("type_value_error", None),
        "def solution():\n    return int('abc')\n": ("type_value_error", None),
        "def solution(n):\n    return n\n": ("type_value_error", None),
        "def solution():\n    return 5 / 0\n": ("zero_division_error", None),
        "def solution():\n    return (1).numerator.foo\n": ("attribute_error", None),
        "def solution():\n    return {'a': 1}['b']\n": ("unclassified", None),
        "def solution():\n    return [1][3]\n": ("unclassified", None),
        "def solution():\n    return math.sqrt(4)\n": ("name_error", None),  # math not imported
        "x = 1\n": ("no_function", None),
        "def solution():\n    return 10**400\n": ("", float("inf")),
        "def solution():\n    return -10**400\n": ("", float("-inf")),
    }
    results = box.run_many(list(cases))
    for (source, (cls, value)), result in zip(cases.items(), results):
        assert result.error_class == cls, (source, result)
        if value is not None:
            assert result.value == value, (source, result)
    exact = box.run("def solution():\n    return 123456789012345678901234567890\n")
    assert exact.exact == 123456789012345678901234567890


def test_print_is_allowed_within_the_limit(box):
    r = box.run("def solution():\n    for i in range(10):\n        print('step', i)\n    return 4\n")
    assert (r.error_class, r.value) == ("", 4.0)


# ---------------------------------------------------------------- process-level isolation
# These bypass the static check and give the snippet the real builtins, to show that the
# operating-system limits hold on their own.

def test_os_level_limits_without_static_check(tmp_path, box):
    sentinel = tmp_path / "SENTINEL"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    snippets = {
        "write": f"def solution():\n    open({str(sentinel)!r}, 'w').write('x')\n    return 1\n",
        "fork": "import os\ndef solution():\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    return 1\n",
        "socket": "import socket\ndef solution():\n    socket.socket()\n    return 1\n",
        "system": f"import os\ndef solution():\n    return os.system('touch {sentinel}')\n",
    }
    for name, source in snippets.items():
        result = box._run_unchecked(source, full_builtins=True)
        # an exception, or (os.system) a failure status: glibc reports a refused spawn as 127
        assert result.error_class != "" or result.value != 0, (name, result)
    assert not sentinel.exists()
    if box.capabilities().get("chroot"):
        # as root the child is chrooted into an empty directory and runs as nobody
        r = box._run_unchecked(f"import os\ndef solution():\n    os.unlink({str(victim)!r})\n    return 1\n",
                               full_builtins=True)
        assert r.error_class != ""
        assert victim.exists()
    assert wait_until_clean(box) == set()


def test_wall_clock_timeout_kills_a_sleeping_child():
    with Sandbox(workers=1, limits=Limits(cpu_seconds=5, wall_seconds=1.0)) as sandbox:
        r = sandbox._run_unchecked("import time\ndef solution():\n    time.sleep(60)\n", full_builtins=True)
        assert r.error_class == "timeout" and "wall-clock" in r.detail
        assert wait_until_clean(sandbox) == set()
        r = sandbox.run("def solution():\n    return 1\n")
        assert r.value == 1.0


def test_worker_death_is_survived_and_kills_the_child():
    with Sandbox(workers=1, limits=Limits(cpu_seconds=30, wall_seconds=30)) as sandbox:
        sandbox.run("def solution():\n    return 0\n")  # start the worker
        (worker,) = sandbox.worker_pids()
        holder = {}
        t = threading.Thread(target=lambda: holder.update(r=sandbox.run("def solution():\n    while True:\n        pass\n")))
        t.start()
        deadline = time.monotonic() + 10
        helpers = set(sandbox.helper_pids())
        while not descendants(worker) - helpers and time.monotonic() < deadline:
            time.sleep(0.02)
        assert descendants(worker) - helpers, "the child never started"
        os.kill(worker, signal.SIGKILL)
        t.join(30)
        assert holder["r"].error_class == "unclassified"
        # the orphaned child died with its worker (PR_SET_PDEATHSIG)
        assert wait_until_clean(sandbox) == set()
        r = sandbox.run("def solution():\n    return 5\n")
        assert r.value == 5.0 and sandbox.worker_pids() != [worker]


def test_close_leaves_nothing():
    sandbox = Sandbox(workers=2, limits=LIMITS)
    sandbox.run_many(["def solution():\n    return 1\n"] * 4)
    workers = set(sandbox.worker_pids())
    assert workers and workers <= descendants(os.getpid())
    sandbox.close()
    assert not workers & descendants(os.getpid())
    assert wait_until_clean(sandbox) == set()
    with pytest.raises(RuntimeError):
        sandbox.run("def solution():\n    return 1\n")


def test_a_missing_layer_is_named_with_its_remedy_and_landlock_alone_says_what_stays_open():
    from earnest.sandbox import LAYER_HINTS, missing_layers_warning

    text = missing_layers_warning(["seccomp", "namespaces"], ["landlock"], 1000)
    assert "without seccomp, namespaces" in text and LAYER_HINTS["seccomp"] in text
    assert LAYER_HINTS["namespaces"] in text
    # an ordinary user's answers under Landlock alone reach the user's other processes, IPC and keys
    assert "resource limits and priority" in text and "SysV IPC" in text
    # root's answers run as nobody, and with another layer beside Landlock these calls are stopped
    assert "resource limits" not in missing_layers_warning(["seccomp", "namespaces"], ["landlock"], 0)
    assert "resource limits" not in missing_layers_warning(["namespaces"], ["seccomp", "landlock"], 1000)


# ---------------------------------------------------------------- result integrity (caller side)

class _Interrupted(Exception):
    pass


def test_an_interrupted_request_never_hands_its_reply_to_the_next_answer():
    """A caller interrupted while an answer runs (Ctrl-C, an exception from its own signal
    handler) keeps using the sandbox: the next answers get their own results, not the previous
    one's reply that was still on its way (before the fix every later answer got its predecessor's)."""
    def interrupt(signum, frame):
        raise _Interrupted()

    spin = "def solution():\n    x = 0\n    for i in range(10 ** 9):\n        x += 1\n    return 111\n"
    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        with Sandbox(workers=1, limits=Limits(cpu_seconds=2, wall_seconds=3)) as sandbox:
            assert sandbox.run("def solution():\n    return 1\n").value == 1.0
            for _ in range(2):
                signal.setitimer(signal.ITIMER_REAL, 0.3)
                with pytest.raises(_Interrupted):
                    sandbox.run(spin)
                signal.setitimer(signal.ITIMER_REAL, 0)
                got = [sandbox.run(f"def solution():\n    return {k}\n") for k in (2, 3)]
                assert [(r.error_class, r.value) for r in got] == [("", 2.0), ("", 3.0)], got
            assert wait_until_clean(sandbox) == set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------- a cluster job's environment

REPO_SRC = str(Path(__file__).resolve().parents[1] / "src")


def _run_script(script: str, prefix=(), preexec=None) -> str:
    import subprocess
    import sys

    proc = subprocess.run([*prefix, sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": REPO_SRC, "LC_ALL": "C.UTF-8"},
                          cwd="/", preexec_fn=preexec)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc.stdout


def _rootless_prefix() -> list[str]:
    import shutil
    import subprocess

    prefix = ["unshare", "--user", "--map-root-user"]
    if not shutil.which("unshare") or subprocess.run(prefix + ["true"], capture_output=True).returncode != 0:
        pytest.skip("no unprivileged user namespaces here (unshare --user --map-root-user)")
    return prefix


def test_root_in_a_rootless_container_runs_answers_as_an_ordinary_user():
    """uid 0 with only one uid mapped (podman rootless, ``unshare -r``, Apptainer --fakeroot): no
    65534 to switch to; the sandbox works as for an ordinary user (before, every answer's set-up
    failed at setuid and came back ``unclassified``)."""
    out = _run_script(
        "from earnest.sandbox import Sandbox\n"
        "with Sandbox(workers=1) as sb:\n"
        "    print([r.value for r in sb.run_many(['def solution():\\n    return 7\\n'] * 3)])\n"
        "    print(sb.capabilities())\n", prefix=_rootless_prefix())
    values, caps = out.splitlines()[:2]
    assert values == "[7.0, 7.0, 7.0]", out
    assert "'setuid': False" in caps and "'user'" in caps, caps  # a user namespace of its own


def _hard_address_space_limit():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (600 * 1024 ** 2, 600 * 1024 ** 2))


def test_a_set_up_that_fails_before_model_code_stops_the_run_instead_of_scoring_it():
    """A child whose set-up fails before any model code runs is an error of the machine, not a
    class of the answer. Where it is the configuration's (a cluster job's hard address-space limit,
    ``ulimit -v``, SGE's h_vmem, below the sandbox's memory limit: every answer would fail alike) the
    run stops with SandboxUnavailable saying why; smaller limits still work. Where it is a quota of
    the moment (the user namespaces, the keys of the answers' uid: issue 53.4) only that answer is
    affected: it comes back marked as the machine's (``infrastructure``), the batch goes on. A
    hostile answer cannot fake either: the child marks its pipe before model code runs."""
    script = (
        "from earnest.sandbox import Limits, Sandbox, SandboxUnavailable\n"
        "for mem in (1024 ** 3, 256 * 1024 ** 2):\n"
        "    with Sandbox(workers=1, limits=Limits(memory_bytes=mem)) as sb:\n"
        "        try:\n"
        "            print([(r.error_class, r.value) for r in sb.run_many(['def solution():\\n    return 7\\n'] * 2)])\n"
        "        except SandboxUnavailable as exc:\n"
        "            print('unavailable:', exc)\n")
    first, second = _run_script(script, preexec=_hard_address_space_limit).splitlines()[:2]
    assert first.startswith("unavailable:") and "RLIMIT_AS" in first and "memory_bytes" in first, first
    assert second == "[('', 7.0), ('', 7.0)]", second
    # the answer's own user namespace refused (the user's namespace quota reached after start)
    out = _run_script(
        "from earnest.sandbox import Sandbox, SandboxUnavailable\n"
        "with Sandbox(workers=1) as sb:\n"
        "    print(sb.run('def solution():\\n    return 1\\n').value, 'user-per-answer' in sb.capabilities()['namespaces'])\n"
        "    open('/proc/sys/user/max_user_namespaces', 'w').write('1')\n"
        "    try:\n"
        "        print([(r.error_class, r.value, 'before any model code ran' in r.infrastructure)\n"
        "               for r in sb.run_many(['def solution():\\n    return 2\\n'] * 2)])\n"
        "    except SandboxUnavailable as exc:\n"
        "        print('unavailable:', exc)\n"
        "    open('/proc/sys/user/max_user_namespaces', 'w').write('100')\n"
        "    print(sb.run('def solution():\\n    return 3\\n').value)\n", prefix=_rootless_prefix())
    lines = out.splitlines()
    if lines[0] != "1.0 True":
        pytest.skip("no user namespace per answer inside a user namespace here")
    assert lines[1] == "[('unclassified', None, True), ('unclassified', None, True)]", lines
    assert lines[2] == "3.0", lines
    # a forged report of a failed set-up is the answer's own result, nothing more
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        forge = ("import os\ndef solution():\n    os.write(3, b'{\"error\": \"unclassified\", \"detail\": "
                 "\"sandbox setup failed: x\"}')\n    os._exit(0)\n")
        r = sandbox._run_unchecked(forge, full_builtins=True)
        assert r.error_class == "unclassified" and sandbox.run("def solution():\n    return 4\n").value == 4.0


@pytest.mark.parametrize("field, value", [("wall_seconds", -1), ("wall_seconds", float("nan")),
                                          ("wall_seconds", float("inf")), ("memory_bytes", -1),
                                          ("cpu_seconds", 0), ("cpu_seconds", 1.5), ("output_chars", -5),
                                          ("memory_bytes", "512M")])
def test_limits_out_of_range_are_refused_naming_the_field(field, value):
    """A negative or NaN wall-clock limit ended every worker (each answer ``unclassified``, one
    restart each); memory_bytes=-1 is RLIM_INFINITY (no memory limit at all)."""
    with pytest.raises(ValueError, match=f"Limits.{field}"):
        Limits(**{field: value})


def test_a_batch_keeps_order_and_count_through_hostile_answers_and_killed_workers():
    """300 answers on 3 workers, every 7th hostile in another way (stopping itself, flooding its
    pipe, a result written late, byte by byte, twice, nested 60,000 deep, a lone surrogate and NUL,
    a crash, an exit without a result, a signal-handler spin) while workers are killed from
    outside: every innocent answer comes back in its place with its own value, or, where its
    worker was killed under it, ``unclassified``; never another answer's."""
    hostile = [
        "import os, signal\ndef solution():\n    os.kill(os.getpid(), signal.SIGSTOP)\n",
        "import os\ndef solution():\n    while True:\n        os.write(3, b'{\"error\": \"\", \"value\": \"1\"}' * 999)\n",
        "import os, time\ndef solution():\n    time.sleep(1.9)\n    os.write(3, b'{\"error\": \"\", \"value\": \"8\"}')\n    time.sleep(9)\n",
        "import os\ndef solution():\n    for c in b'{\"error\": \"\", \"value\": \"8\"}':\n        os.write(3, bytes([c]))\n    os._exit(0)\n",
        "import os\ndef solution():\n    os.write(3, b'{\"error\": \"\", \"value\": \"8\"}' * 2)\n    os._exit(0)\n",
        "import os\ndef solution():\n    os.write(3, b'[' * 60000)\n    os._exit(0)\n",
        "import os\ndef solution():\n    os.write(3, b'{\"error\": \"name_error\", \"detail\": \"\\\\ud800\\\\u0000\"}')\n    os._exit(0)\n",
        "import ctypes\ndef solution():\n    ctypes.string_at(0)\n",
        "import os\ndef solution():\n    os._exit(3)\n",
        "import signal\ndef solution():\n    signal.signal(signal.SIGXCPU, lambda *a: None)\n    while True:\n        pass\n",
    ]
    sources, expected = [], []
    for i in range(300):
        if i % 7 == 3:
            sources.append(hostile[(i // 7) % len(hostile)])
            expected.append(None)
        else:
            sources.append(f"def solution():\n    return {i} * 3 + 1\n")
            expected.append(i * 3 + 1)
    with Sandbox(workers=3, limits=Limits(cpu_seconds=1, wall_seconds=2.0), disable=("static",)) as sandbox:
        sandbox.run("def solution():\n    return 0\n")
        stop = threading.Event()

        def killer():
            while not stop.wait(0.7):
                pids = sandbox.worker_pids()
                if pids:
                    try:
                        os.kill(pids[len(pids) // 2], signal.SIGKILL)
                    except ProcessLookupError:
                        pass

        t = threading.Thread(target=killer)
        t.start()
        try:
            results = sandbox._run_many_unchecked(sources, full_builtins=True)
        finally:
            stop.set()
            t.join()
        assert len(results) == len(sources)
        right = 0
        for i, (want, r) in enumerate(zip(expected, results)):
            if want is None:
                continue
            if r.error_class == "":
                assert r.value == want, (i, r)
                right += 1
            else:
                assert r.error_class == "unclassified" and "worker died" in r.detail, (i, r)
        assert right > 150, right
        assert wait_until_clean(sandbox) == set()


def test_a_detail_is_printable_text_whatever_the_answer_raised(box):
    """An innocent answer's exception message with a lone surrogate, NUL or a terminal escape
    comes back as text that encodes as UTF-8 and prints safely (before, ``detail.encode()`` failed)."""
    r = box.run("def solution():\n    raise ValueError('\\ud800 \\x00 \\x1b[2J \\u00e9')\n")
    assert r.error_class == "type_value_error"
    assert r.detail == "ValueError: \\ud800 \\x00 \\x1b[2J \u00e9", r.detail
    r.detail.encode("utf-8")


def test_close_during_a_batch_is_a_clear_error_and_leaves_nothing():
    """``close()`` from another thread while ``run_many`` runs: the batch ends with "sandbox is
    closed" (before, sometimes AttributeError: the worker's process vanished under the request),
    no worker is started after it, nothing is left."""
    for trial in range(12):
        sandbox = Sandbox(workers=6, limits=LIMITS)
        outcome = {}

        def batch():
            try:
                outcome["results"] = sandbox.run_many(["def solution():\n    return 1\n"] * 5000)
            except BaseException as exc:  # noqa: BLE001 - the test looks at it
                outcome["error"] = exc

        t = threading.Thread(target=batch)
        t.start()
        time.sleep(0.3 + 0.05 * trial)
        sandbox.close()
        t.join(60)
        assert not t.is_alive()
        error = outcome.get("error")
        assert isinstance(error, RuntimeError) and "closed" in str(error), repr(error)
        time.sleep(0.3)
        assert wait_until_clean(sandbox) == set()
        assert sandbox.worker_pids() == []


def test_a_worker_that_died_while_idle_neither_kills_the_caller_nor_costs_the_next_answer():
    """A worker killed between answers (the OOM killer, an administrator): the next answer never
    reached it, so it runs on a fresh worker and gets its own result (before: ``unclassified``);
    a caller whose SIGPIPE is at its default (a command-line tool made for ``| head``) is not
    killed by the write to the dead worker (before: it died of SIGPIPE, status 141, no message)."""
    out = _run_script(
        "import os, signal, time\n"
        "signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
        "from earnest.sandbox import Sandbox\n"
        "with Sandbox(workers=2) as sb:\n"
        "    print(sb.run_many(['def solution():\\n    return 1\\n'] * 4)[0].value, flush=True)\n"
        "    for pid in sb.worker_pids():\n"
        "        os.kill(pid, signal.SIGKILL)\n"
        "    time.sleep(0.5)\n"
        "    print([(r.error_class, r.value) for r in sb.run_many(['def solution():\\n    return 2\\n'] * 4)], flush=True)\n"
        "    print(sb.run('def solution():\\n    return 3\\n').value, flush=True)\n")
    assert out.splitlines() == ["1.0", str([("", 2.0)] * 4), "3.0"], out


def test_a_worker_that_cannot_start_says_which_limit():
    """Too few descriptors for the workers: the error names RLIMIT_NOFILE (before it blamed the
    interpreter: "cannot start the interpreter ... (sandbox.python)")."""
    out = _run_script(
        "import os, resource\n"
        "from earnest.sandbox import Sandbox, SandboxUnavailable\n"
        "n = len(os.listdir('/proc/self/fd'))\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (n + 4, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "try:\n"
        "    with Sandbox(workers=4) as sb:\n"
        "        sb.run_many(['def solution():\\n    return 1\\n'] * 8)\n"
        "    print('ran')\n"
        "except SandboxUnavailable as exc:\n"
        "    print(exc)\n")
    assert "RLIMIT_NOFILE" in out and "sandbox.python" not in out, out


def test_default_workers_follow_the_cpus_this_process_may_use():
    """A Slurm job given one core of a 64-core node ran 8 workers on it: the default follows the
    process's CPU affinity (its allocation), not the node's core count."""
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(before)})
        assert Sandbox().n_workers == 2
    finally:
        os.sched_setaffinity(0, before)
    assert Sandbox().n_workers == min(8, 2 * len(before))


def test_a_source_within_the_character_limit_runs_whatever_its_characters(box):
    """A source of fewer than MAX_SOURCE_CHARS characters outside the BMP (12 bytes each once
    JSON-escaped) outgrew the request frame and came back resource_limit without running."""
    from earnest.sandbox import MAX_SOURCE_CHARS

    head = "def solution():\n    return 7\n# "
    source = head + "\U0001F600" * (MAX_SOURCE_CHARS - len(head))
    assert len(source) == MAX_SOURCE_CHARS
    res = box.run(source)
    assert (res.error_class, res.value) == ("", 7.0), res
    res = box.run(source + "x")
    assert res.error_class == "resource_limit", res


def test_one_function_decides_the_layers_and_their_names():
    """layers_in_force decides the layer list and the names describe() (the scored tables' sandbox
    column) shows: the worker reports its layers with it, capabilities() and describe() with it."""
    from earnest.sandbox.layers import FILE_READ_BLOCKERS, layers_in_force

    caps = {"static_policy": True, "seccomp": "allowlist", "seccomp_compiler": "earnest", "landlock": 6,
            "namespaces": ["mount", "net", "pid"], "chroot": False, "no_new_privs": True, "setuid": True,
            "rlimits": True}
    assert layers_in_force(caps) == [
        ("static", "static"), ("seccomp", "seccomp-allowlist(earnest)"), ("landlock", "landlock-abi6"),
        ("namespaces", "namespaces(mount,net,pid)"), ("no_new_privs", "no_new_privs"), ("setuid", "setuid"),
        ("rlimits", "rlimits")]
    bare = dict(caps, static_policy=False, seccomp="", seccomp_compiler="", landlock=0, namespaces=["user"],
                chroot=True, setuid=False)
    assert layers_in_force(bare) == [("chroot", "chroot"), ("no_new_privs", "no_new_privs"), ("rlimits", "rlimits")]
    with Sandbox(workers=1, limits=LIMITS) as box:
        caps = box.capabilities(start=True)
        (worker,) = [w for w in box._all if w.info]
        shown = layers_in_force(caps)
        assert caps["layers"] == [name for name, _ in shown] == ["static"] + worker.info["layers"]
        assert caps["file_reads_blocked_by"] == [n for n, _ in shown if n in FILE_READ_BLOCKERS]
        assert box.describe() == f"python {caps['python']}; " + " + ".join(s for _, s in shown)

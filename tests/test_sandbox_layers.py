"""The sandbox's kernel layers, each shown holding on its own (issue 20).

tests/sandbox_attacks.py is the hostile corpus: raw system calls with the real builtins and the
static policy off, and Python-layer escapes with the static policy off and on, in batches beside
innocent answers. It runs here as whoever runs the tests (root in CI: setuid to nobody is then a
further layer) and as the unprivileged user ``nobody`` (how a cluster user runs: user namespaces
instead of root), under every configuration: all layers, the seccomp allowlist alone, namespaces
alone, Landlock alone. A test also shows the corpus failing where a configuration is not meant to
hold (Landlock alone lets metadata calls and SysV IPC through), so that "ok" means something.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import sandbox_attacks as sa
from earnest.sandbox import LAYERS, Limits, Sandbox, SandboxUnavailable
from helpers import KEY_FILLER_START, NOBODY, key_quota_filled, nobody_command, nobody_copy, nobody_interpreter

# run as nobody: never beside tests/test_sandbox_keyquota.py's filler of nobody's key quota (pytest-xdist)
pytestmark = pytest.mark.xdist_group("uid65534")

REPO = Path(__file__).resolve().parents[1]
ATTACKS = REPO / "tests" / "sandbox_attacks.py"
API_KEY = "sk-earnest-test-0123456789"
LIMITS = Limits(cpu_seconds=1, wall_seconds=3.0)


def _env(home: str) -> dict:
    # the caller's environment carries an API key: no answer may see it
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "OPENAI_API_KEY": API_KEY}


def _check_output(out: str, configs: list[str]) -> None:
    assert "FAIL" not in out, out[-6000:]
    for config in configs:
        assert f"\nok {config}\n" in "\n" + out, out[-6000:]
    assert "ok refusal" in out, out[-6000:]


@pytest.mark.slow
def test_every_layer_holds_alone_as_the_current_user(tmp_path):
    proc = subprocess.run([sys.executable, str(ATTACKS)], cwd=tmp_path, env=_env(str(tmp_path)),
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    _check_output(out, ["all", "seccomp", "seccomp-earnest", "namespaces", "landlock"])
    if os.geteuid() == 0:
        assert "'setuid'" in out  # root adds setuid to nobody


def _nobody_copy() -> tuple[list[str], str, Path, dict]:
    """(command, home, copy, environment) that run the corpus as nobody, in an IPC namespace of its
    own (made as root before dropping to nobody, who may not: the IPC objects it sees are its own,
    whatever other processes of the machine create meanwhile)."""
    drop = nobody_command()
    assert drop is not None, "neither setpriv nor runuser is installed (util-linux)"
    assert shutil.which("unshare"), "unshare is not installed (util-linux)"
    home = tempfile.mkdtemp(prefix="earnest-nobody-")
    os.chown(home, NOBODY, NOBODY)
    copy = nobody_copy(Path(home), ["sandbox_attacks.py"])
    env = _env(home)
    exe = nobody_interpreter(drop, env)
    assert exe is not None, "no Python interpreter is usable by nobody"
    return ["unshare", "--ipc", "--"] + drop + [exe], home, copy, {**env, sa.OWN_IPC_NAMESPACE: "1"}


@pytest.mark.slow
def test_every_layer_holds_alone_as_nobody():
    if os.geteuid() != 0:
        pytest.skip("not root: the test above already ran unprivileged")
    command, home, copy, env = _nobody_copy()
    try:
        proc = subprocess.run(command + [str(copy / "tests" / "sandbox_attacks.py")], cwd=home,
                              env=env, capture_output=True, text=True, timeout=900)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-6000:]
        _check_output(out, ["all", "seccomp", "seccomp-earnest", "namespaces", "landlock"])
        assert "uid 65534;" in out and "'user'" in out, out[:3000]  # namespaces through a user namespace
        assert "'user-per-answer'" in out, out[:3000]  # and one per answer (its own user keyring)
        assert "'setuid'" not in out
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _check_control(out: str) -> None:
    lines = [line for line in out.splitlines() if line.startswith(("works ", "VACUOUS "))]
    assert lines and not [line for line in lines if line.startswith("VACUOUS")], out[-6000:]
    # every attack of the corpus is in it (an attack the control skipped would prove nothing)
    names = {name for name, _, _ in sa.attacks(sa.Targets.DUMMY_CTX)}
    assert {line.split()[1].rstrip(":") for line in lines} == names, out[-6000:]


@pytest.mark.slow
def test_every_attack_works_where_no_layer_stops_it(tmp_path):
    """The control: each attack with no sandbox at all, in a disposable caller of its own, does
    what it tries (a read, a signal by proxy, a neighbour's limit, an exec ...): an attack that
    fails even there would make 'stopped' above a test that cannot fail."""
    proc = subprocess.run([sys.executable, str(ATTACKS), "--control"], cwd=tmp_path, env=_env(str(tmp_path)),
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    _check_control(out)


@pytest.mark.slow
def test_every_attack_works_where_no_layer_stops_it_as_nobody():
    if os.geteuid() != 0:
        pytest.skip("not root: the test above already ran unprivileged")
    command, home, copy, env = _nobody_copy()
    try:
        proc = subprocess.run(command + [str(copy / "tests" / "sandbox_attacks.py"), "--control"], cwd=home,
                              env=env, capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-6000:]
        _check_control(out)
    finally:
        shutil.rmtree(home, ignore_errors=True)


PROBE_BREACH = """
import sys
sys.path.insert(0, {tests!r})
import sandbox_attacks as sa
disable, _ = sa.CONFIGS["landlock"]
sa.CONFIGS["landlock"] = (disable, {{"files", "env", "net", "meta", "ipc", "ipc_call"}})
targets = sa.Targets()
try:
    for line in sa.run_config("landlock", targets):
        print(line)
finally:
    targets.close()
"""


@pytest.mark.slow
def test_the_corpus_sees_what_a_layer_does_not_stop(tmp_path):
    """Landlock alone does not stop metadata calls or SysV IPC: the corpus reports them, so its
    'ok' elsewhere is the seccomp allowlist's or the namespaces' doing, not a blind test."""
    code = PROBE_BREACH.format(tests=str(REPO / "tests"))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(str(tmp_path)),
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    seen = ["shmget_leftover: got through", "shm_read_from_previous: got through",
            "effect: IPC objects left behind"]
    if os.geteuid() != 0:  # as root, setuid to nobody already keeps it off the (root's) secret
        seen += ["stat_secret: got through", "inotify: got through"]
    for attack in seen:
        assert attack in out, out[-4000:]
    # what Landlock does stop it still stops
    assert "read_secret_file" not in out and "write_victim" not in out and "tcp_connect" not in out


OWN_IPC = """
import ctypes, sys
sys.path.insert(0, {tests!r})
import sandbox_attacks as sa
targets = sa.Targets()
print("ready", flush=True)
sys.stdin.readline()  # meanwhile the test creates a segment where it runs
before = targets.effects()
mine = ctypes.CDLL(None).shmget(0, 4096, 0o1600)
left = targets.effects()
targets.reset()
print(repr((targets.ipc_private, mine >= 0, before, left, targets.effects())), flush=True)
targets.close()
"""


def test_the_corpus_sees_only_its_own_ipc_objects(tmp_path):
    """The corpus's IPC check counts the objects of its own run: a segment that another process of
    the machine creates meanwhile is neither "left behind" nor removed by it; one created where the
    corpus's answers run (its own IPC namespace, shared with answers that have none) is, and is
    removed. (Not root: no namespace of its own; then the objects of its uid are counted.)"""
    if os.geteuid() != 0:
        pytest.skip("not root: no IPC namespace of its own for the corpus")
    import ast
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    proc = subprocess.Popen([sys.executable, "-c", OWN_IPC.format(tests=str(REPO / "tests"))], cwd=tmp_path,
                            env=_env(str(tmp_path)), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    foreign = -1
    try:
        assert proc.stdout.readline() == "ready\n"
        foreign = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE: a new segment, here
        assert foreign >= 0, ctypes.get_errno()
        out, _ = proc.communicate("go\n", timeout=120)
    finally:
        proc.kill()
        if foreign >= 0:
            alive = libc.shmctl(foreign, 2, (ctypes.c_char * 256)()) >= 0  # IPC_STAT
            libc.shmctl(foreign, 0, None)  # IPC_RMID
    private, made, before, left, after = ast.literal_eval(out.strip().splitlines()[-1])
    assert private and made, out
    assert before == [] and after == [], out  # the test's segment is not the corpus's
    assert [e for e in left if e.startswith("IPC objects left behind: ['shm:")], out  # its own is
    assert alive  # and reset() left the test's segment alone


def test_no_layer_that_blocks_file_reads_means_no_model_code():
    with Sandbox(workers=1, limits=LIMITS, disable=("seccomp", "landlock", "namespaces")) as box:
        with pytest.raises(SandboxUnavailable) as err:
            box.run("def solution():\n    return 1\n")
    text = str(err.value)
    assert "no sandbox layer blocks file reads" in text
    for hint in ("libseccomp2", "Landlock", "user namespaces"):
        assert hint in text
    # the batch entry point raises the same, in the caller's thread
    with Sandbox(workers=2, limits=LIMITS, disable=("seccomp", "landlock", "namespaces")) as box:
        with pytest.raises(SandboxUnavailable):
            box.run_many(["def solution():\n    return 1\n"] * 3)


def test_unknown_layer_names_are_refused():
    with pytest.raises(ValueError, match="unknown layer"):
        Sandbox(disable=("seccom",))


def test_capabilities_name_the_layers_in_force():
    with Sandbox(workers=1, limits=LIMITS) as box:
        caps = box.capabilities(start=True)
        assert caps["seccomp"] == "allowlist"
        assert caps["layers"][0] == "static" and "seccomp" in caps["layers"]
        assert set(caps["file_reads_blocked_by"]) <= set(LAYERS) | {"chroot"}
        assert "seccomp-allowlist" in box.describe() and "(earnest)" not in box.describe()
        if "mount" in caps["namespaces"]:
            assert {"net", "pid", "ipc"} <= set(caps["namespaces"])
    with Sandbox(workers=1, limits=LIMITS, disable=("namespaces", "static")) as box:
        caps = box.capabilities(start=True)
        assert caps["namespaces"] == [] and "namespaces" not in caps["layers"] and not caps["static_policy"]
        assert "static" not in caps["layers"]


def test_earnest_compiles_the_allowlist_where_libseccomp_is_missing():
    """Without libseccomp (``seccomp_compiler="earnest"`` stands in for its absence) the allowlist
    is still in force, compiled by earnest for this machine; sandbox_attacks.py's
    ``seccomp-earnest`` configuration shows it holding alone against the whole corpus."""
    from earnest.sandbox.kernel import seccomp as sb

    with Sandbox(workers=1, limits=LIMITS, disable=("namespaces", "landlock", "static"),
                 seccomp_compiler="earnest") as box:
        caps = box.capabilities(start=True)
        assert caps["seccomp"] == "allowlist" and caps["seccomp_compiler"] == "earnest", caps
        assert caps["file_reads_blocked_by"] == ["seccomp"]
        assert "seccomp-allowlist(earnest)" in box.describe()  # the scored table's sandbox column
        read, exec_map, plain_map, big = box._run_many_unchecked([
            "def solution():\n    import os\n    try:\n        os.stat('/')\n        return 1\n"
            "    except OSError as exc:\n        return -exc.errno",
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.mmap.restype = ctypes.c_long\n"
            "def solution():\n    return libc.mmap(None, 4096, 7, 0x22, -1, 0)",  # PROT_EXEC: refused
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.mmap.restype = ctypes.c_long\n"
            "def solution():\n    return 1 if libc.mmap(None, 4096, 3, 0x22, -1, 0) > 0 else 0",
            "def solution():\n    return len([0] * 10**7) + (3**100000).bit_length()"], full_builtins=True)
        assert read.value == -1.0 and exec_map.value == -1.0, (read, exec_map)  # EPERM
        assert plain_map.value == 1.0 and big.value == 10**7 + (3**100000).bit_length(), (plain_map, big)
    with pytest.raises(ValueError, match="seccomp_compiler"):
        Sandbox(seccomp_compiler="bpf")
    assert sb._bpf_allowlist("sparc64") is None  # no numbers for it: libseccomp or no allowlist


def test_earnest_syscall_numbers_are_the_kernels():
    """earnest's own tables name the same numbers as libseccomp's resolver, for every architecture
    earnest compiles for."""
    import ctypes

    from earnest.sandbox.kernel import seccomp as sb

    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    for machine, arch in sb._AUDIT_ARCH.items():
        numbers = sb._syscall_numbers(machine)
        assert set(numbers) == set(sb.ALLOWED_SYSCALLS), machine
        resolved = {name: lib.seccomp_syscall_resolve_name_arch(arch, name.encode()) for name in numbers}
        assert resolved == numbers, machine
        program = sb._bpf_allowlist(machine)
        assert program and len(program) % 8 == 0


NOTHING_TO_STEAL = """import os, ctypes, errno
def solution():
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    held = []
    for fd in range(64):
        try:
            os.write(fd, b"")
            held.append(fd)
        except OSError as exc:
            if exc.errno != errno.EBADF:
                held.append(fd)
    env = len(os.environ) + sum(libc.getenv(k) is not None for k in (b"PATH", b"OPENAI_API_KEY", b"TMPDIR"))
    return 1000 * env + sum(1 << fd for fd in held)
"""

# the first answer is longer than the second, its marker at the end: without the worker's wiping,
# the marker would still lie in the request buffer past the second answer's own request
MARKER_A = "def solution():\n    return 1\n" + "# padding\n" * 300 + "# earnest-private-marker-7731\n"
MARKER_B = """import sys, gc
def solution():
    needle = 'earnest-private-' + 'marker-7731'
    seen = 0
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, (bytes, bytearray, memoryview)):
                seen += needle.encode() in bytes(value)
            elif isinstance(value, str) and value is not needle:
                seen += needle in value
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, dict):
            seen += any(isinstance(v, str) and v is not needle and needle in v for v in list(obj.values()))
    return seen
"""


@pytest.mark.parametrize("disable", [(), ("namespaces", "landlock"), ("seccomp", "landlock")],
                         ids=["all", "seccomp-alone", "namespaces-alone"])
def test_nothing_to_steal(disable, monkeypatch):
    """An answer holds one descriptor (its result pipe, fd 3) and an empty environment, and finds
    nothing of the previous answer's request in the memory it shares with its worker."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with Sandbox(workers=1, limits=LIMITS, disable=disable) as box:
        r = box._run_unchecked(NOTHING_TO_STEAL, full_builtins=True)
        assert (r.error_class, r.value) == ("", float(1 << 3)), r
        a, b = box._run_many_unchecked([MARKER_A, MARKER_B], full_builtins=True)
        assert (a.value, b.error_class, b.value) == (1.0, "", 0.0), (a, b)


# an answer that rewrites what the next answer would use: module attributes, classes' methods,
# builtins, sys.modules, the decimal context, the worker's own json encoder (its own result forged:
# the known residue); the next answer in the same worker must see none of it
MONKEYPATCH = """import fractions, math, statistics, builtins, sys, decimal, json
def solution():
    fractions.Fraction.__add__ = lambda s, o: 999
    math.pi = 3.0
    builtins.sum = lambda *a: 7
    builtins.int = float
    statistics.median = lambda xs: -1
    decimal.getcontext().prec = 2
    json.dumps = lambda *a, **k: '{"error": "", "value": "1234"}'
    sys.modules.clear()
    return 1
"""
AFTER_MONKEYPATCH = """import math, statistics, decimal
from fractions import Fraction
def solution():
    d = decimal.Decimal(1) / decimal.Decimal(3)
    return (Fraction(1, 2) + Fraction(1, 2)) + sum([1]) + math.floor(math.pi) + statistics.median([5]) + len(str(d))
"""  # 1 + 1 + 3 + 5 + 30

# the raw memory of the child (every page near a live object or a buffer of the worker's, read
# with process_vm_readv on itself: no crash on unmapped pages; namespaces alone let the call
# through) holds no copy of the previous answer's marker, only the needle this answer builds
MEMORY_SCAN = """import ctypes, gc, os, sys
def solution():
    libc = ctypes.CDLL(None, use_errno=True)
    class IOV(ctypes.Structure):
        _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]
    needle = b'earnest-private-' + b'marker-7731'
    mib = {id(o) >> 20 for o in gc.get_objects()}
    frame = sys._getframe()
    while frame is not None:
        mib |= {ctypes.addressof((ctypes.c_char * 1).from_buffer(v)) >> 20
                for v in frame.f_locals.values() if isinstance(v, bytearray) and len(v)}
        frame = frame.f_back
    buf = ctypes.create_string_buffer(1 << 20)
    hits = 0
    for m in sorted({m + d for m in mib for d in range(-8, 9) if m + d > 0}):
        n = libc.process_vm_readv(os.getpid(), ctypes.byref(IOV(ctypes.addressof(buf), 1 << 20)), 1,
                                  ctypes.byref(IOV(m << 20, 1 << 20)), 1, 0)
        if n > 0:
            hits += buf.raw[:n].count(needle)
    return hits
"""


@pytest.mark.parametrize("disable", [(), ("namespaces", "landlock"), ("seccomp", "landlock")],
                         ids=["all", "seccomp-alone", "namespaces-alone"])
def test_no_state_reaches_the_next_answer(disable):
    with Sandbox(workers=1, limits=LIMITS, disable=disable + ("static",)) as box:
        patched, after = box._run_many_unchecked([MONKEYPATCH, AFTER_MONKEYPATCH], full_builtins=True)
        assert patched.value == 1234.0  # its own result forged, nothing else
        assert (after.error_class, after.value) == ("", 40.0), after
        assert (box.run(AFTER_MONKEYPATCH).error_class, box.run(AFTER_MONKEYPATCH).value) == ("", 40.0)
        if disable == ("seccomp", "landlock"):
            alone = box._run_many_unchecked([MEMORY_SCAN], full_builtins=True)[0]
            marker, scan = box._run_many_unchecked([MARKER_A, MEMORY_SCAN], full_builtins=True)
            assert (marker.value, alone.error_class) == (1.0, ""), (marker, alone)
            # the needle itself is found (the scan works); the previous answer's marker is not
            assert alone.value >= 1 and scan.value == alone.value, (alone, scan)


#: answers that abuse their result pipe (fd 3) or the worker's reading of it, each costing at most
#: its own answer: two reports, bytes that are not UTF-8, JSON nested past any parser, a report
#: larger than the frame, fd 3 replaced by another pipe or closed, data spliced onto it
PROTOCOL_ABUSE = {
    "two_reports": "import os\ndef solution():\n    os.write(3, b'{\"value\": 7}')\n    os.write(3, b'{\"value\": 8}')\n"
                   "    return 1\n",
    "not_utf8": "import os\ndef solution():\n    os.write(3, b'\\xff\\xfe{\"value\": 7}')\n    os._exit(0)\n",
    "nested": "import os\ndef solution():\n    os.write(3, b'[' * 100000 + b']' * 100000)\n    os._exit(0)\n",
    "oversized": "import os\ndef solution():\n    os.write(3, b'{\"value\": 1, \"detail\": \"' + b'x' * (1 << 22) + b'\"}')\n"
                 "    os._exit(0)\n",
    "dup2_onto_3": "import os\ndef solution():\n    r, w = os.pipe()\n    os.dup2(w, 3)\n    return 5\n",
    "close_3": "import os\ndef solution():\n    os.close(3)\n    return 5\n",
    "splice_onto_3": "import os\ndef solution():\n    r, w = os.pipe()\n    os.write(w, b'{}')\n    os.splice(r, 3, 2)\n"
                     "    return 9\n",
    # the worker's own failures, forged (issue 39.1): they once ended the whole batch
    "forged_fork_error": "import os\ndef solution():\n    os.write(3, b'{\"fork_error\": \"forged\"}')\n    os._exit(0)\n",
    "forged_setup_error": "import os\ndef solution():\n    os.write(3, b'{\"setup_error\": \"forged\"}')\n"
                          "    os._exit(0)\n",
    "forged_restart": "import os\ndef solution():\n    os.write(3, b'{\"restart\": true, \"setup_failed\": true}')\n"
                      "    os._exit(0)\n",
}


@pytest.mark.parametrize("disable", [(), ("namespaces", "landlock"), ("seccomp", "landlock"), ("seccomp", "namespaces")],
                         ids=["all", "seccomp-alone", "namespaces-alone", "landlock-alone"])
def test_abusing_the_result_pipe_costs_only_the_answer_itself(disable):
    """None of these forges a success (at most its own answer's value) or costs a neighbour its result."""
    innocent = "def solution():\n    return 42\n"
    batch = []
    for source in PROTOCOL_ABUSE.values():
        batch += [source, innocent]
    with Sandbox(workers=2, limits=LIMITS, disable=disable + ("static",)) as box:
        results = box._run_many_unchecked(batch, full_builtins=True)
        for name, abuse, neighbour in zip(PROTOCOL_ABUSE, results[::2], results[1::2]):
            assert (neighbour.error_class, neighbour.value) == ("", 42.0), (name, neighbour)
            assert abuse.error_class == "unclassified" or abuse.value in (1.0, 5.0, 9.0), (name, abuse)
        assert box.run(innocent).value == 42.0


#: A process of uid argv[1] that fills that uid's key quota by its bytes (a few user keys, each as
#: large as still fits, down to one byte) and shows that a new session keyring is refused (EDQUOT);
#: on a line from the test it shrinks its largest key to one byte (the kernel gives the bytes back
#: at once, unlike a key's removal, which waits for its collector) and says so.
BYTE_FILLER = KEY_FILLER_START + """
keys, size = [], 32767  # a user key's largest payload
while size:
    k = libc.syscall(ADD_KEY, b"user", b"%d" % len(keys), b"x" * size, size, -3)
    if k >= 0:
        keys.append(k)
    elif ctypes.get_errno() == 122:  # EDQUOT: half as large
        size //= 2
    else:
        break
err = ctypes.get_errno()
fresh = libc.syscall(KEYCTL, 1, None)  # what an answer's child does: a new keyring
print(len(keys), err, fresh, ctypes.get_errno(), flush=True)
sys.stdin.readline()
print(libc.syscall(KEYCTL, 2, keys[0], b"x", 1), flush=True)  # KEYCTL_UPDATE: one byte
sys.stdin.read()  # hold the keys until the test ends
"""


@pytest.mark.skipif(os.geteuid() != 0 or os.uname().machine not in ("x86_64", "aarch64"),
                    reason="needs root (a uid of the batch's own) and x86_64 or aarch64")
def test_an_answer_that_cannot_have_a_keyring_of_its_own_does_not_run():
    """The child joins a fresh session keyring before model code runs; where the kernel refuses it
    (the key quota of the answers' uid exhausted), the answer does not run with the worker's keyring,
    shared by every answer: it comes back not run, marked as the machine's failure (issue 53.4: that
    answer's, never the batch's), and answers run again once keys can be had.
    The quota is that of the batch's own answer uid, held whole by a process of that uid (not the
    machine's ``keys/maxbytes``, which every other uid's keys on the machine would meet too)."""
    from earnest.sandbox.kernel.namespaces import pick_answer_uid

    uid = pick_answer_uid()
    with Sandbox(workers=1, limits=LIMITS, disable=("seccomp",), answer_uid=uid) as box:
        if box.capabilities(start=True).get("session_keyring") != "own":
            pytest.skip("this kernel has no keyrings")
        with key_quota_filled(BYTE_FILLER, uid) as (filler, _):
            r = box.run("def solution():\n    return 1\n")
            assert r.value is None and r.error_class == "unclassified", r
            assert "session keyring of its own" in r.infrastructure, r
            filler.stdin.write("free\n")
            filler.stdin.flush()
            assert filler.stdout.readline().strip() == "0"  # the bytes are back
            assert box.run("def solution():\n    return 2\n").value == 2.0


SCORING = REPO / "tests" / "hostile_scoring.py"


def _scoring_run(config: str) -> dict:
    """hostile_scoring.py under ``config``, as whoever runs the tests (scoring needs pandas, which
    the interpreter nobody can use may lack; the corpus itself runs as nobody above)."""
    import json

    home = tempfile.mkdtemp(prefix="earnest-scoring-")
    try:
        proc = subprocess.run([sys.executable, str(SCORING), config], cwd=home, env=_env(home),
                              capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("config", ["all", "seccomp", "namespaces"])
def test_the_scored_table_is_unchanged_by_hostile_neighbours(config):
    """The corpus through score_table, as a scoring job runs it: each attack is an answer that
    escapes the Python layer (earnest mode with the static policy off; reference mode with its
    forbidden-string check on, hidden from it) and is scored against gold answer 1, so an attack that
    gets through is scored correct. The innocent answers' rows are identical with and without
    hostile neighbours, in both modes, and nothing is left behind."""
    out = _scoring_run(config)
    must_stop = set(out["must_stop"])
    for mode in ("earnest", "reference"):
        run = out[mode]
        assert run["innocent_identical"], (mode, run)
        assert run["innocent_rows"] > 30 and run["innocent_correct"] > 0, (mode, run)
        breaks = [(name, kind) for name, kind in run["hostile_correct"] if kind in must_stop]
        assert breaks == [], (mode, breaks)
        if config != "namespaces":  # the allowlist refuses even the harmless calls
            assert run["hostile_correct"] == [], (mode, run["hostile_correct"])
        assert "seccomp" not in run["layers"] or config in ("all", "seccomp"), run["layers"]
    assert out["effects"] == [] and out["survivors"] == [], out


@pytest.mark.slow
def test_the_scoring_corpus_reaches_the_kernel():
    """The control: under Landlock alone (not meant to stop SysV IPC) the same answers create IPC
    objects and are scored correct, so the escapes and attacks above did run, in both modes."""
    out = _scoring_run("landlock")
    for mode in ("earnest", "reference"):
        got = {name for name, _ in out[mode]["hostile_correct"]}
        assert {"shmget_leftover", "msgget_leftover"} <= got, (mode, out[mode])
        assert out[mode]["innocent_identical"]
    assert any(e.startswith("IPC objects left behind") for e in out["effects"]), out["effects"]

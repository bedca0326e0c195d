"""Hostile code against the sandbox: checks that run with nothing but the standard library and
``earnest`` (no pytest), so that tests/test_sandbox_unprivileged.py can run them as the
unprivileged user ``nobody`` — how everyone runs on a Slurm cluster: no chroot, no setuid, no
network namespace, only the layers that need no root. tests/test_sandbox_hostile.py runs the same
checks as whoever runs the tests.

The OS-level checks give the snippet the real builtins and skip the static check
(``_run_unchecked(full_builtins=True)``): the equivalent of a snippet that found a way past the
policy. Then nothing outside the temporary directory may change, no process may survive or be
signalled, no other answer's result may change, and the batch must finish.

``python tests/hostile_checks.py`` runs every check and prints one line per check.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from earnest.gsm.extraction import extract_code_many  # noqa: E402
from earnest.sandbox import Limits, Sandbox, SandboxUnavailable  # noqa: E402
from earnest.sandbox.protocol import _temp_prefix  # noqa: E402

HOSTILE = Path(__file__).parent / "data" / "hostile"
LIMITS = Limits(cpu_seconds=1, wall_seconds=4.0, memory_bytes=256 * 1024 * 1024, output_chars=16 * 1024)


# ---------------------------------------------------------------- process inspection (/proc)

def _proc_entries() -> list[tuple[int, int, bytes]]:
    """(pid, ppid, cmdline) of every visible process."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: split after the last ')'
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] == b"Z":  # a zombie is gone already, only not reaped
            continue
        out.append((int(name), int(fields[1]), cmdline))
    return out


def descendants(pid: int) -> set[int]:
    entries = _proc_entries()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp, _ in entries if pp in frontier and p not in found}
        found |= frontier
    return found


def stray_processes(box: Sandbox) -> set[int]:
    """Processes carrying the sandbox's token that are not its live workers (forked children)."""
    token = box.token.encode()
    workers = set(box.worker_pids()) | set(box.helper_pids())
    return {p for p, _, cmd in _proc_entries() if token in cmd and p not in workers}


def wait_until_clean(box: Sandbox, timeout: float = 5.0) -> set[int]:
    """Stray processes still alive after waiting a little (SIGKILL delivery is asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        strays = stray_processes(box)
        if not strays or time.monotonic() > deadline:
            return strays
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def load_corpus(tmp: Path) -> list[tuple[str, set[str], str]]:
    victim_dir = tmp / "victim_dir"
    victim_dir.mkdir()
    (victim_dir / "keep.txt").write_text("keep")
    (tmp / "victim.txt").write_text("keep")
    cases = []
    for path in sorted(HOSTILE.glob("*.txt")):
        header, _, response = path.read_text(encoding="utf-8").partition("\n---\n")
        assert header.startswith("expect: "), path
        expected = {"" if c == "ok" else c for c in header[len("expect: "):].strip().split("|")}
        response = (response.replace("{SENTINEL}", str(tmp / "SENTINEL"))
                    .replace("{VICTIM_DIR}", str(victim_dir))
                    .replace("{VICTIM}", str(tmp / "victim.txt")))
        cases.append((path.stem, expected, response))
    return cases


def _fn(body: str) -> str:
    return "def solution():\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


@contextlib.contextmanager
def victims():
    """A temporary directory with files, a directory and a listening unix socket that the
    snippets try to harm or reach; yields (dir, received socket data, listing before)."""
    tmp = Path(tempfile.mkdtemp(prefix="earnest-victims-"))
    (tmp / "victim.txt").write_text("keep")
    (tmp / "secret.txt").write_text("s3cret")
    (tmp / "victim_dir").mkdir()
    (tmp / "victim_dir" / "keep.txt").write_text("keep")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(tmp / "sock"))
    server.listen(8)
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            received.append(conn.recv(1024) or b"<connected>")
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    before = sorted(p.name for p in tmp.iterdir())
    try:
        yield tmp, received, before
    finally:
        stop.set()
        t.join(2)
        server.close()
        shutil.rmtree(tmp, ignore_errors=True)


def assert_untouched(tmp: Path, received: list[bytes], before: list[str]) -> None:
    assert (tmp / "victim.txt").read_text() == "keep"
    assert (tmp / "victim_dir" / "keep.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp.iterdir()) == before, "a file appeared or vanished"
    assert received == [], "a snippet reached the socket"


# ---------------------------------------------------------------- checks

def check_corpus() -> None:
    """The static corpus (tests/data/hostile): every case ends in its expected class."""
    tmp = Path(tempfile.mkdtemp(prefix="earnest-corpus-"))
    cwd = tmp / "cwd"
    cwd.mkdir()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        cases = load_corpus(tmp)
        assert len(cases) >= 60
        with Sandbox(workers=2, limits=LIMITS) as sandbox:
            # every case ends classified: runaway ones as timeout / resource_limit within limits
            results = extract_code_many([response for _, _, response in cases], sandbox)
            for (name, expected, _), result in zip(cases, results):
                assert result.error_class in expected, (name, result)
            # nothing written outside the per-snippet directories, nothing deleted
            assert not (tmp / "SENTINEL").exists()
            assert (tmp / "victim.txt").read_text() == "keep"
            assert (tmp / "victim_dir" / "keep.txt").exists()
            assert list(cwd.iterdir()) == []
            # no process left behind: the workers have no children, and no forked copy of a
            # worker (which would carry the sandbox token) survives anywhere
            workers = set(sandbox.worker_pids())
            helpers = set(sandbox.helper_pids())  # each worker's pid-namespace init
            assert workers <= descendants(os.getpid())
            assert all(descendants(w) <= helpers for w in workers)
            assert wait_until_clean(sandbox) == set()
            # reference mode: the same answers end in the reference's classes only, contained alike
            from earnest.gsm.failure_classes import classes

            reference = set(classes("code", "reference", scoring=False)) | {""}
            for (name, _, _), result in zip(cases, extract_code_many([r for _, _, r in cases], sandbox,
                                                                     fidelity="reference")):
                assert result.error_class in reference, (name, result)
            assert not (tmp / "SENTINEL").exists()
            assert (tmp / "victim.txt").read_text() == "keep"
            # the batch carried on: an ordinary snippet after the corpus still works
            ok = extract_code_many(["    return 6 * 7\n"], sandbox)[0]
            assert (ok.error_class, ok.value) == ("", 42.0)
            dirs = sandbox.temp_dirs()
        assert wait_until_clean(sandbox) == set()
        assert not workers & descendants(os.getpid())
        # a worker has a directory only where it chroots (root without namespaces)
        assert not any(os.path.exists(d) for d in dirs)
    finally:
        os.chdir(old)
        shutil.rmtree(tmp, ignore_errors=True)


def check_os_layers() -> None:
    """A snippet with real builtins cannot delete, rename, create, chmod, connect, signal, fork,
    exec or trace — as root and as an ordinary user."""
    me = os.getpid()
    with victims() as (tmp, received, before):
        attacks = {
            "unlink": f"import os\nos.unlink({str(tmp / 'victim.txt')!r})\nreturn 1",
            "rename": f"import os\nos.rename({str(tmp / 'victim.txt')!r}, {str(tmp / 'moved.txt')!r})\nreturn 1",
            "rmtree": f"import shutil\nshutil.rmtree({str(tmp / 'victim_dir')!r})\nreturn 1",
            "write_outside": f"open({str(tmp / 'SENTINEL')!r}, 'w').write('x')\nreturn 1",
            "append_victim": f"open({str(tmp / 'victim.txt')!r}, 'a').write('x')\nreturn 1",
            "close_fds_then_write": (f"import os\nos.close(0)\nos.close(1)\n"
                                     f"fd = os.open({str(tmp / 'SENTINEL')!r}, os.O_CREAT | os.O_WRONLY)\nreturn fd"),
            "write_in_cwd": "open('inside.txt', 'w').write('x')\nreturn 1",
            "mkdir": f"import os\nos.mkdir({str(tmp / 'newdir')!r})\nreturn 1",
            "symlink": f"import os\nos.symlink('/etc/passwd', {str(tmp / 'link')!r})\nreturn 1",
            "chmod": f"import os\nos.chmod({str(tmp / 'victim.txt')!r}, 0o777)\nreturn 1",
            "socket_module": (f"import socket\ns = socket.socket(socket.AF_UNIX)\n"
                              f"s.connect({str(tmp / 'sock')!r})\ns.send(b'leak')\nreturn 1"),
            "socket_libc": "import ctypes\nreturn ctypes.CDLL(None).socket(1, 1, 0)",
            "kill_caller": f"import os\nos.kill({me}, 9)\nreturn 1",
            "kill_worker": "import os\nos.kill(os.getppid(), 9)\nreturn 1",
            "kill_worker_group": "import os\nos.killpg(os.getpgid(os.getppid()), 9)\nreturn 1",
            "fork": "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nreturn 1",
            "exec": "import os\nos.execv('/bin/true', ['true'])\nreturn 1",
            "ptrace": "import ctypes, os\nreturn ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)",
        }
        with Sandbox(workers=2, limits=LIMITS) as box:
            box.run("def solution():\n    return 0\n")
            caps = box.capabilities()
            assert caps["no_new_privs"] and caps["seccomp"], caps  # libseccomp is installed here
            for name, body in attacks.items():
                r = box._run_unchecked(_fn(body), full_builtins=True)
                # an exception, or a failure status from a libc call (-1)
                assert r.error_class != "" or r.value == -1.0, (name, r)
            if caps["landlock"]:
                # reading a file outside is refused too (without Landlock a snippet could read
                # what the user can, but not send it anywhere)
                r = box._run_unchecked(_fn(f"return len(open({str(tmp / 'secret.txt')!r}).read())"),
                                       full_builtins=True)
                assert r.error_class != "", r
            assert wait_until_clean(box) == set()
            assert box.run("def solution():\n    return 6 * 7\n").value == 42.0
        assert_untouched(tmp, received, before)


def check_siblings() -> None:
    """A snippet cannot kill its siblings (kill of every nearby pid, kill(-1)) or change their
    results; a forged report changes only the forger's own answer."""
    slow = "def solution():\n    n = 0\n    for i in range(3_000_000):\n        n += 1\n    return 42\n"
    killer = _fn("""
        import os
        me = os.getpid()
        hit = 0
        for pid in range(max(2, me - 300), me + 300):
            if pid != me:
                try:
                    os.kill(pid, 9)
                    hit += 1
                except OSError:
                    pass
        try:
            os.kill(-1, 9)
        except OSError:
            pass
        return hit
    """)
    forge = "import os\ndef solution():\n    os.write(3, b'{\"error\": \"\", \"value\": \"1\"}')\n    os._exit(0)\n"
    with victims() as (tmp, received, before):
        with Sandbox(workers=3, limits=Limits(cpu_seconds=4, wall_seconds=8.0)) as box:
            box.run("def solution():\n    return 0\n")
            # without seccomp kill(-1) would reach this user's other processes: refuse to try
            assert box.capabilities().get("seccomp"), box.capabilities()
            results: list = [None] * 6

            def go(i, source, full):
                results[i] = box._run_unchecked(source, full_builtins=True) if full else box.run(source)

            threads = [threading.Thread(target=go, args=(0, slow, False)),
                       threading.Thread(target=go, args=(1, killer, True)),
                       threading.Thread(target=go, args=(2, slow, False))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            go(3, forge, True)
            go(4, slow, False)
            go(5, killer, True)
            assert [results[i].value for i in (0, 2, 4)] == [42.0] * 3, results
            assert results[1].value == 0.0 and results[5].value == 0.0, ("a kill went through", results)
            assert results[3].value == 1.0
            assert wait_until_clean(box) == set()
        assert_untouched(tmp, received, before)


MALFORMED = [
    b'{"error": "", "value": "eighteen"}',
    b'{"error": "", "value": 18}',
    b'{"error": "", "value": "1e999999999999999999999999999999999999999999"}',
    b'{"error": "", "value": "1", "exact": "1/0"}',
    b'{"error": "", "value": "1", "exact": "5"}',
    b'{"error": "", "value": "1", "exact": "' + b"9" * 900 + b'"}',
    b'{"error": "no_such_class"}',
    b'{"error": ["x"]}',
    b'[1, 2, 3]',
    b'"just a string"',
    b'not json at all \xff\xfe',
    b'[' * 100_000,
    b'{"error": "", "value": "' + b"1" * 70_000 + b'"}',
]


def check_malformed_reports() -> None:
    """Whatever a snippet writes on the result channel, the caller does not crash: anything
    malformed is that answer's ``unclassified``; the next answer is unaffected."""
    with Sandbox(workers=1, limits=LIMITS) as box:
        for payload in MALFORMED:
            forge = f"import os\ndef solution():\n    os.write(3, {payload!r})\n    os._exit(0)\n"
            r = box._run_unchecked(forge, full_builtins=True)
            assert r.error_class == "unclassified" and "malformed" in r.detail, (payload[:40], r)
            assert box.run("def solution():\n    return 5\n").value == 5.0


def check_no_process_for_an_answer() -> None:
    """A worker that cannot fork a child for an answer (its user's process limit reached: on a
    cluster every process and thread of the user counts) stops the batch with a clear error
    instead of scoring innocent answers ``unclassified`` (each one also cost a worker restart);
    with the limit back the same sandbox answers right. Root is exempt from RLIMIT_NPROC, so as
    root (CI) there is nothing to show; the nobody run (tests/test_sandbox_unprivileged.py) shows it."""
    if os.geteuid() == 0:
        return
    with Sandbox(workers=1, limits=LIMITS) as box:
        assert box.run("def solution():\n    return 1\n").value == 1.0
        (worker,) = box.worker_pids()
        soft, hard = resource.prlimit(worker, resource.RLIMIT_NPROC)
        resource.prlimit(worker, resource.RLIMIT_NPROC, (1, hard))
        try:
            box.run_many(["def solution():\n    return 2\n"] * 3)
        except SandboxUnavailable as exc:
            assert "RLIMIT_NPROC" in str(exc), exc
        else:
            raise AssertionError("innocent answers that never ran came back as results")
        finally:
            if box.worker_pids() == [worker]:
                resource.prlimit(worker, resource.RLIMIT_NPROC, (soft, hard))
        assert [r.value for r in box.run_many(["def solution():\n    return 3\n"] * 3)] == [3.0] * 3


def check_returned_subclasses() -> None:
    """A returned float/int subclass is read through the base type (its __repr__ is not trusted)."""
    cases = {
        "class W(float):\n    def __repr__(self):\n        return 'eighteen'\n"
        "    def __float__(self):\n        return 'x'\n"
        "def solution():\n    return W(18)\n": 18.0,
        "class I(int):\n    def __repr__(self):\n        return 'x'\n"
        "    def __index__(self):\n        raise ValueError\n"
        "def solution():\n    return I(7)\n": 7.0,
    }
    with Sandbox(workers=1, limits=LIMITS) as box:
        for source, value in cases.items():
            r = box._run_unchecked(source, full_builtins=True)
            assert (r.error_class, r.value) == ("", value), r


def check_stdio() -> None:
    """What a snippet writes to fds 0-2 never reaches the result channel: the child holds no
    descriptor but its result pipe (fd 3), so those writes fail."""
    source = _fn("""
        import os, sys, warnings
        failed = 0
        for fd, text in ((1, b'{"error": "", "value": "1"}'), (2, b'{"error": "", "value": "2"}')):
            try:
                os.write(fd, text)
            except OSError:
                failed += 1
        try:
            sys.stdout.write('garbage')
            sys.stdout.flush()
        except OSError:
            pass
        warnings.warn('noise')
        return 5 + failed
    """)
    with Sandbox(workers=1, limits=LIMITS) as box:
        r = box._run_unchecked(source, full_builtins=True)
        assert (r.error_class, r.value) == ("", 7.0), r


_PARENT = """
import sys, threading, time
sys.path.insert(0, {src!r})
from earnest.sandbox import Limits, Sandbox
box = Sandbox(workers=2, limits=Limits(cpu_seconds=3, wall_seconds=3.0))
box.run("def solution():\\n    return 1\\n")
threading.Thread(target=box.run, args=("def solution():\\n    while True:\\n        pass\\n",), daemon=True).start()
time.sleep(0.3)
print(" ".join(map(str, box.worker_pids())), "|", " ".join(box.temp_dirs()), flush=True)
time.sleep(60)
"""


def check_killing_the_caller() -> None:
    """kill -9 of the calling process (mid-snippet): its workers, their children and their
    temporary directories all go away."""
    proc = subprocess.Popen([sys.executable, "-c", _PARENT.format(src=str(SRC))],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        pids_text, _, dirs_text = line.partition("|")
        workers = [int(p) for p in pids_text.split()]
        dirs = dirs_text.split()
        assert workers and all(os.path.isdir(d) for d in dirs), line
        kids = set().union(*(descendants(w) for w in workers))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 15
        everything = workers + sorted(kids)
        while time.monotonic() < deadline and (any(map(alive, everything)) or any(map(os.path.exists, dirs))):
            time.sleep(0.1)
        assert not any(map(alive, everything)), "a worker or snippet outlived its caller"
        assert not any(map(os.path.exists, dirs)), "a temporary directory outlived its caller"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def check_stale_directories() -> None:
    """A directory left by a worker that was killed outright is removed by the next worker;
    a live process's directory and another host's are kept."""
    import tempfile as tf

    tmp = Path(tf.mkdtemp(prefix="earnest-stale-"))
    saved_env, saved_dir = os.environ.get("TMPDIR"), tf.tempdir
    try:
        os.environ["TMPDIR"] = str(tmp)
        tf.tempdir = None
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        prefix = _temp_prefix()
        stale = tmp / f"{prefix}{int(dead.stdout)}-abc123"
        (stale / "7").mkdir(parents=True)
        live = tmp / f"{prefix}{os.getpid()}-def456"
        live.mkdir()
        # another host's directory (a TMPDIR shared between nodes): its pids are not ours
        other_host = tmp / f"earnest-sandbox-elsewhere.example-{int(dead.stdout)}-ghi789"
        other_host.mkdir()
        with Sandbox(workers=1, limits=LIMITS) as fresh:
            assert fresh.run("def solution():\n    return 2\n").value == 2.0
            bases = fresh.temp_dirs()  # only a root worker without namespaces has one (its chroot)
        assert not stale.exists()
        assert live.exists() and other_host.exists()
        for base in bases:
            assert Path(base).name.startswith(prefix) and Path(base).parent == tmp
        assert sorted(p.name for p in tmp.iterdir()) == sorted([live.name, other_host.name])
    finally:
        if saved_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved_env
        tf.tempdir = saved_dir
        shutil.rmtree(tmp, ignore_errors=True)


CHECKS = {name[len("check_"):]: fn for name, fn in sorted(globals().items())
          if name.startswith("check_") and callable(fn)}


def main() -> int:
    failed = 0
    with Sandbox(workers=1) as box:
        box.run("def solution():\n    return 0\n")
        print(f"uid {os.geteuid()}; earnest from {SRC}; capabilities {box.capabilities()}", flush=True)
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - report every check
            failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc!r}"[:4000], flush=True)
        else:
            print(f"ok {name}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

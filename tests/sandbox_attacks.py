"""A hostile corpus against the kernel layers of the sandbox (issue 20), runnable on its own.

Every attack is a ``solution()`` that tries one effect through raw system calls (``ctypes``, the
real builtins, the static policy off: the model of an answer that has escaped the Python layer
completely) and returns 1 when the effect worked, 0 when it did not (any error also counts as
"did not"). The effects the snippet cannot see itself (another process's limits, priority,
affinity, IPC objects left behind, files, a listening socket, survivors) are checked from here.
Python-layer escapes (``ESCAPES``) run with the sandbox's own namespace and the static policy off,
reach ``os`` or the real builtins, and then try to read the secret.

The batch interleaves innocent answers (``INNOCENT``), whose results must come back right.

``python tests/sandbox_attacks.py CONFIG ...`` runs the corpus under each configuration (``all``,
``seccomp``, ``namespaces``, ``landlock``: the layers left on; the others are switched off with
``Sandbox(disable=...)``; ``seccomp-earnest``: the allowlist alone as earnest compiles it) and
prints ``ok CONFIG ATTACK`` or ``FAIL CONFIG ATTACK: why`` lines;
exit status 1 if any attack that the configuration must stop got through. Standard library and
``earnest`` only, so that tests/test_sandbox_layers.py can run it as ``nobody``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
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

from earnest.sandbox import Limits, Sandbox, SandboxUnavailable  # noqa: E402

LIMITS = Limits(cpu_seconds=1, wall_seconds=3.0, memory_bytes=256 * 1024 * 1024, output_chars=16 * 1024)
SECRET = "s3cret-6f1d"
#: 8 bytes at a known address in the neighbour (a fork of the Targets process): what
#: process_vm_readv must fail to read
MARKER = b"nb-mark!"
API_KEY = "sk-earnest-test-0123456789"
SHM_KEY, MSG_KEY, PLANT_KEY = 0x5EA7001, 0x5EA7002, 0x5EA7003
CLONE_NEWIPC = 0x08000000
#: set to "1" by a caller that started this program in an IPC namespace of its own (``unshare --ipc``)
OWN_IPC_NAMESPACE = "EARNEST_ATTACKS_OWN_IPC_NAMESPACE"
#: keys (keyctl): one in the caller's session keyring holding the API key, one an answer plants
#: in its user keyring for the next answer to find (per run: a stale one from another run is not ours)
SESSION_KEY = "earnest-caller-key"
PLANT_KEYNAME = f"earnest-attack-key-{os.getpid()}"
SYS_KEYCTL, SYS_ADD_KEY = 250, 248  # x86_64's numbers: those attacks run there only
X86_64 = os.uname().machine == "x86_64"
KEY_SPEC_PROCESS, KEY_SPEC_SESSION, KEY_SPEC_USER = -2, -3, -4

#: Configurations: the layers left on (the other kernel layers disabled), and what they must stop.
#: "files": reading, writing, creating, stat-ing paths; "env": the caller's environment;
#: "procs": system calls on other processes; "ipc": SysV IPC objects that outlive the answer or
#: reach another; "net": sockets; "escape": new processes and survivors; "self": this answer's
#: own limits and privileges (harmless to others, stopped only by the allowlist); "keys": the user's
#: persistent keyring (where Kerberos keeps tickets), which Landlock alone leaves to an ordinary user;
#: "channel": a value passed to an answer running at the same time (a futex keyed by a file's page,
#: which crosses namespaces and Landlock domains); "memory": memory held beyond ``memory_bytes``
#: (SysV segments, counted in no limit of the answer's).
CONFIGS = {
    "all": ((), {"files", "meta", "env", "keys", "procs", "ipc", "ipc_call", "net", "escape", "self", "channel",
                 "memory"}),
    "seccomp": (("namespaces", "landlock"), {"files", "meta", "env", "keys", "procs", "ipc", "ipc_call", "net",
                                            "escape", "self", "channel", "memory"}),
    "namespaces": (("seccomp", "landlock"), {"files", "meta", "env", "keys", "procs", "ipc", "net", "escape",
                                             "memory"}),
    "landlock": (("seccomp", "namespaces"), {"files", "env", "net"}),
}


def must_stop_for(config: str, caps: dict) -> set:
    """What ``config`` must stop on this machine: the namespaces stop SysV memory only where the
    kernel lets the worker set its IPC namespace's limits (``sysv-ipc-off``; not RHEL 8's)."""
    must_stop = set(CONFIGS[config][1])
    if "seccomp" in CONFIGS[config][0] and "sysv-ipc-off" not in caps.get("namespaces", []):
        if "memory" in must_stop:
            print(f"# {config}: this kernel keeps SysV IPC in a user namespace: memory not checked", flush=True)
        must_stop.discard("memory")
    return must_stop
#: The allowlist compiled by earnest itself (what runs where libseccomp is missing) must hold alone
#: exactly as libseccomp's program does.
CONFIGS["seccomp-earnest"] = CONFIGS["seccomp"]
#: Sandbox(seccomp_compiler=...) per configuration ("auto" where not named).
COMPILER = {"seccomp-earnest": "earnest"}

PRELUDE = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def ok(rc):
    return 1 if rc >= 0 else 0
"""


def _fn(body: str) -> str:
    return PRELUDE + "def solution():\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


#: Finds the bytes of ``int 0x80`` in libc's executable segment (through dladdr and the ELF program
#: headers in memory: no file, no new executable memory) and calls them: a 32-bit system call with
#: whatever eax holds. The allowlist kills it (another architecture); elsewhere the code after the
#: two bytes crashes the child.
INT80 = """class DlInfo(ctypes.Structure):
    _fields_ = [('fname', ctypes.c_char_p), ('fbase', ctypes.c_void_p), ('sname', ctypes.c_char_p), ('saddr', ctypes.c_void_p)]
import struct
info = DlInfo()
libc.dladdr(ctypes.c_void_p(ctypes.cast(libc.getpid, ctypes.c_void_p).value), ctypes.byref(info))
base = info.fbase
head = ctypes.string_at(base, 64)
phoff, = struct.unpack_from('<Q', head, 32)
phentsize, phnum = struct.unpack_from('<HH', head, 54)
for i in range(phnum):
    typ, flags, off, vaddr, paddr, filesz, memsz = struct.unpack_from('<IIQQQQQ', ctypes.string_at(base + phoff + i * phentsize, 56))
    if typ == 1 and flags & 1:
        j = ctypes.string_at(base + vaddr, filesz).find(b'\\xcd\\x80')
        if j >= 0:
            ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_double, ctypes.c_double)(base + vaddr + j)(1.0, 2.0)
            return 1
return 0"""


#: F_SETOWN the result pipe (fd 3) to ``target``, F_SETSIG ``sig``, O_ASYNC, then fill the pipe: the
#: worker's read sends the signal (the effect is seen from outside; the value says nothing)
FASYNC = """import fcntl
fcntl.fcntl(3, fcntl.F_SETOWN, {target})
fcntl.fcntl(3, 10, {sig})  # F_SETSIG
fcntl.fcntl(3, fcntl.F_SETFL, fcntl.fcntl(3, fcntl.F_GETFL) | os.O_ASYNC)
os.write(3, b"x" * 70000)
return 0"""


VFORK = """stack = (ctypes.c_uint64 * 512)()
stack[500] = ctypes.cast(libc._exit, ctypes.c_void_p).value
top = ctypes.c_void_p(ctypes.addressof(stack) + 8 * 500)
pid = libc.syscall(56, 0x4000 | 0x100 | 17, top, None, None, None)  # clone(CLONE_VFORK | CLONE_VM | SIGCHLD)
if pid > 0:
    os.waitpid(pid, 0)
return 1 if pid > 0 else 0"""


#: 7 SysV segments of 64 MB, each attached, filled and detached (RLIMIT_AS counts a segment only
#: while it is attached): 1 if all were held at once
SHM_MEMORY = """libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
for i in range(7):
    ident = libc.shmget(0, 64 << 20, 0o1600)
    if ident < 0:
        return 0
    addr = libc.shmat(ident, None, 0)
    if addr in (None, 2 ** 64 - 1):
        return 0
    ctypes.memset(addr, 1, 64 << 20)
    libc.shmdt(addr)
return 1"""


def attacks(ctx: dict) -> list[tuple[str, str, str]]:
    """(name, kind, source) for every attack; ctx holds the paths and pids they aim at."""
    secret, victim, vdir = ctx["secret"], ctx["victim"], ctx["victim_dir"]
    caller, neighbour = ctx["caller"], ctx["neighbour"]
    port, abstract = ctx["port"], ctx["abstract"]
    rl = "class RL(ctypes.Structure):\n    _fields_ = [('cur', ctypes.c_uint64), ('max', ctypes.c_uint64)]\n"
    a = [
        # files: content, metadata, writes
        ("read_secret_file", "files", f"return 1 if {SECRET!r} in open({secret!r}).read() else 0"),
        ("read_caller_environ", "files",
         f"return 1 if {API_KEY!r} in open('/proc/{caller}/environ', 'rb').read().decode('latin-1') else 0"),
        ("read_passwd", "files", "return 1 if 'root' in open('/etc/passwd').read() else 0"),
        ("listdir_root", "files", "return 1 if len(os.listdir('/')) > 0 else 0"),
        ("stat_secret", "meta", f"return 1 if os.stat({secret!r}).st_size > 0 else 0"),
        ("open_o_path", "meta", f"return ok(os.open({secret!r}, os.O_PATH))"),
        ("getxattr", "meta",
         f"buf = ctypes.create_string_buffer(64)\nrc = libc.getxattr({secret.encode()!r}, b'user.x', buf, 64)\n"
         "return 1 if rc >= 0 or ctypes.get_errno() in (61, 95) else 0"),  # ENODATA/ENOTSUP: the path was reached
        ("inotify", "meta", f"fd = libc.inotify_init()\nif fd < 0:\n    return 0\n"
                            f"return ok(libc.inotify_add_watch(fd, {str(vdir).encode()!r}, 0xfff))"),
        ("write_victim", "files", f"open({victim!r}, 'w').write('pwned')\nreturn 1"),
        ("create_file", "files", f"open({str(vdir / 'new.txt')!r}, 'x').write('x')\nreturn 1"),
        ("unlink_victim", "files", f"os.unlink({str(vdir / 'keep.txt')!r})\nreturn 1"),
        ("rename_victim", "files", f"os.rename({victim!r}, {victim + '.moved'!r})\nreturn 1"),
        ("mkdir", "files", f"os.mkdir({str(vdir / 'd')!r})\nreturn 1"),
        # environment
        ("own_environ", "env", f"return 1 if any({API_KEY!r} in v for v in os.environ.values()) or len(os.environ) > 0 else 0"),
        # other processes
        ("prlimit_caller_fsize", "procs",
         rl + f"new = RL(0, 0)\nreturn ok(libc.prlimit({caller}, 1, ctypes.byref(new), None))"),
        ("prlimit_caller_cpu", "procs",
         rl + f"new = RL(1, 1)\nreturn ok(libc.prlimit({caller}, 0, ctypes.byref(new), None))"),
        ("prlimit_neighbour_as", "procs",
         rl + f"new = RL(1 << 20, 1 << 20)\nreturn ok(libc.prlimit({neighbour}, 9, ctypes.byref(new), None))"),
        ("setpriority_caller", "procs", f"return ok(libc.setpriority(0, {caller}, 19))"),
        ("sched_setaffinity_caller", "procs",
         f"mask = ctypes.c_uint64(1)\nreturn ok(libc.sched_setaffinity({caller}, 8, ctypes.byref(mask)))"),
        ("sched_setscheduler_caller", "procs",
         f"p = ctypes.c_int(0)\nreturn ok(libc.sched_setscheduler({caller}, 5, ctypes.byref(p)))"),  # SCHED_IDLE
        ("kill_caller", "procs", f"return ok(libc.kill({caller}, 19))"),  # SIGSTOP
        ("kill_neighbour", "procs", f"return ok(libc.kill({neighbour}, 9))"),
        ("ptrace_neighbour", "procs", f"return ok(libc.ptrace(16, {neighbour}, None, None))"),  # PTRACE_ATTACH
        # a signal by proxy: the owner of the result pipe's file (F_SETOWN) gets F_SETSIG's signal
        # when the worker reads from the full pipe (no kill call of the answer's own)
        ("fasync_signal_caller", "procs", FASYNC.format(target=caller, sig=int(signal.SIGURG))),
        ("fasync_kill_neighbour", "procs", FASYNC.format(target=neighbour, sig=9)),
        ("fasync_kill_worker", "procs", FASYNC.format(target="os.getppid()", sig=9)),
        ("process_vm_read", "procs",
         f"buf = ctypes.create_string_buffer(8)\nclass IOV(ctypes.Structure):\n"
         f"    _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]\n"
         f"l = IOV(ctypes.addressof(buf), 8)\nr = IOV({ctx['marker']}, 8)\n"
         f"n = libc.process_vm_readv({neighbour}, ctypes.byref(l), 1, ctypes.byref(r), 1, 0)\n"
         f"return 1 if n == 8 and buf.raw == {MARKER!r} else 0"),  # the neighbour's memory, read
        # SysV IPC: leftovers, another process's segment, one answer to the next
        # creating an object is harmless in a private IPC namespace (it dies with the answer: the
        # leftovers are checked from outside); only the allowlist refuses the call itself
        ("shmget_leftover", "ipc_call", "return ok(libc.shmget(0, 48 << 20, 0o1666))"),  # IPC_PRIVATE | IPC_CREAT
        ("msgget_leftover", "ipc_call", f"return ok(libc.msgget({MSG_KEY}, 0o1666))"),
        ("shm_other_process", "ipc",
         f"libc.shmat.restype = ctypes.c_void_p\nid_ = libc.shmget({PLANT_KEY}, 0, 0)\nif id_ < 0:\n    return 0\n"
         f"addr = libc.shmat(id_, None, 0)\nif addr in (None, ctypes.c_void_p(-1).value):\n    return 0\n"
         f"ctypes.memmove(addr, b'pwned', 5)\nreturn 1"),
        ("shm_plant_for_next", "ipc_call", f"return ok(libc.shmget({SHM_KEY}, 4096, 0o1666))"),
        ("shm_read_from_previous", "ipc", f"return ok(libc.shmget({SHM_KEY}, 0, 0))"),
        # network and local sockets
        ("tcp_connect", "net",
         f"s = socket_module = None\nfd = libc.socket(2, 1, 0)\nif fd < 0:\n    return 0\n"
         f"class SA(ctypes.Structure):\n    _fields_ = [('f', ctypes.c_ushort), ('p', ctypes.c_ubyte * 2), "
         f"('a', ctypes.c_ubyte * 4), ('z', ctypes.c_ubyte * 8)]\n"
         f"sa = SA(2, ({port} >> 8, {port} & 255), (127, 0, 0, 1))\nreturn ok(libc.connect(fd, ctypes.byref(sa), 16))"),
        ("abstract_unix_connect", "net",
         f"fd = libc.socket(1, 1, 0)\nif fd < 0:\n    return 0\nname = b'\\0' + {abstract.encode()!r}\n"
         f"addr = ctypes.create_string_buffer(b'\\x01\\x00' + name, 2 + len(name))\n"
         f"return ok(libc.connect(fd, addr, 2 + len(name)))"),
        # new processes, survivors
        ("fork", "escape", "pid = os.fork()\nif pid == 0:\n    import time\n    time.sleep(30)\nreturn 1 if pid > 0 else 0"),
        ("pdeathsig_cleared_and_sleep", "escape",
         "libc.prctl(1, 0, 0, 0, 0)\nimport time\ntime.sleep(30)\nreturn 0"),
        # the new program reports the answer 1 on the result pipe: seen only if the exec worked
        ("execve", "escape", "os.execv('/bin/sh', ['sh', '-c', 'printf %s \"$0\" >&3', '{\"error\": \"\", \"value\": 1.0}'])\n"
                             "return 0"),
        # its own limits and privileges (an answer can only hurt itself with these)
        ("raise_own_cpu_limit", "self", rl + "new = RL(100, 100)\nreturn ok(libc.prlimit(0, 0, ctypes.byref(new), None))"),
        ("own_priority", "self", "return ok(libc.setpriority(0, 0, 10))"),
        ("prctl_other", "self", "return ok(libc.prctl(15, b'renamed', 0, 0, 0))"),  # PR_SET_NAME
        # another process's CPU clock (``~pid << 3 | CPUCLOCK_SCHED``): its time, and with it the
        # list of the node's processes, where there is no pid namespace
        ("clock_cpu_caller", "procs",
         "ts = (ctypes.c_long * 2)()\n"
         f"return ok(libc.clock_gettime(ctypes.c_int((~{caller} << 3) | 2), ts))"),
        ("clock_getres_caller", "procs",
         "ts = (ctypes.c_long * 2)()\n"
         f"return ok(libc.clock_getres(ctypes.c_int((~{caller} << 3) | 2), ts))"),
        # a futex without FUTEX_PRIVATE_FLAG on a page of libc (a file every answer maps): keyed by
        # the file and offset, the same futex for every answer running at once, a channel between
        # them (tests/test_sandbox_layers.py passes a value through it); FUTEX_WAKE of 1
        ("futex_shared_file_page", "channel",
         "addr = ctypes.cast(libc.getpid, ctypes.c_void_p).value & ~3\n"
         f"return ok(libc.syscall({202 if X86_64 else 98}, ctypes.c_void_p(addr), 1, 1, None, None, 0))"),
        # FUTEX_TRYLOCK_PI (private) on a word holding a thread id: the kernel looks the id up
        # (another process's: EPERM, a missing one: ESRCH), so without a pid namespace an answer
        # could tell when a neighbour's process ends (issue 53.5): the oracle works where the
        # caller's id and an id above pid_max get different answers; the allowlist refuses every PI
        # operation (EPERM for both), a pid namespace hides the caller (ESRCH for both)
        ("futex_trylock_pi_caller", "procs",
         "def trylock(tid):\n"
         "    word = ctypes.c_uint32(tid)\n"
         f"    rc = libc.syscall({202 if X86_64 else 98}, ctypes.byref(word), 8 | 128, 0, None, None, 0)\n"
         "    return 'ok' if rc >= 0 else ctypes.get_errno()\n"
         f"return 1 if trylock({caller}) != 3 and trylock(0x3fffffff) == 3 else 0"),
        # SysV segments created, filled and detached one by one: 448 MB held under a 256 MB limit
        ("shm_beyond_memory_limit", "memory", SHM_MEMORY),
    ]
    if X86_64:  # raw system call numbers (x86_64's)
        a += [
            # keyrings (keyctl): the caller's session keyring holds its API key; a key an answer plants
            # in its user keyring must neither reach the next answer nor outlive the answer
            ("keyring_caller_session", "env",
             f"k = libc.syscall({SYS_KEYCTL}, 10, {KEY_SPEC_SESSION}, b'user', {SESSION_KEY.encode()!r}, 0)\n"
             f"if k < 0:\n    return 0\nbuf = ctypes.create_string_buffer(64)\n"
             f"n = libc.syscall({SYS_KEYCTL}, 11, k, buf, 64)\nreturn 1 if {API_KEY.encode()!r} in buf.raw[:max(n, 0)] else 0"),
            ("keyring_caller_persistent", "keys",
             f"p = libc.syscall({SYS_KEYCTL}, 22, -1, {KEY_SPEC_PROCESS})\nif p < 0:\n    return 0\n"  # GET_PERSISTENT
             f"k = libc.syscall({SYS_KEYCTL}, 10, p, b'user', {SESSION_KEY.encode()!r}, 0)\nif k < 0:\n    return 0\n"
             f"buf = ctypes.create_string_buffer(64)\nn = libc.syscall({SYS_KEYCTL}, 11, k, buf, 64)\n"
             f"return 1 if {API_KEY.encode()!r} in buf.raw[:max(n, 0)] else 0"),
            # new system calls for the allowlist alone (harmless to others where it is off)
            ("io_uring_setup", "self", "p = (ctypes.c_char * 120)()\nreturn ok(libc.syscall(425, 4, p))"),
            ("userfaultfd", "self", "return ok(libc.syscall(323, 1))"),  # UFFD_USER_MODE_ONLY
            ("perf_event_open", "self",
             "attr = (ctypes.c_char * 128)()\nctypes.memmove(attr, (1).to_bytes(4, 'little') + (128).to_bytes(4, 'little'), 8)\n"
             "attr[40] = 0x60  # exclude_kernel | exclude_hv: what perf_event_paranoid 2 leaves to anyone\n"
             "return ok(libc.syscall(298, attr, 0, -1, -1, 0))"),  # a software counter on itself
            ("bpf_map_create", "self", "attr = (ctypes.c_uint32 * 20)(2, 4, 4, 1)\nreturn ok(libc.syscall(321, 0, attr, 80))"),
            ("memfd_create", "self", "return ok(libc.syscall(319, b'x', 0))"),
            ("mmap_exec", "self",
             "libc.mmap.restype = ctypes.c_void_p\n"
             "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
             "a = libc.mmap(None, 4096, 7, 0x22, -1, 0)\nreturn 1 if a not in (None, 2 ** 64 - 1) else 0"),
            ("mprotect_rwx", "self",
             "buf = ctypes.create_string_buffer(8192)\na = (ctypes.addressof(buf) + 4095) & ~4095\n"
             "return ok(libc.mprotect(ctypes.c_void_p(a), 4096, 7))"),
            ("personality_read_implies_exec", "self", "return ok(libc.personality(0x0400000))"),
            # vfork's semantics (CLONE_VM | CLONE_VFORK) on a stack of its own, whose first return
            # address is _exit: the child ends at once without touching the parent's stack, which a
            # child of a plain vfork would run Python on (the parent then crashes: no answer at all)
            ("vfork", "self", VFORK),
            ("clone3", "self", "args = (ctypes.c_uint64 * 11)()\nargs[4] = 17\npid = libc.syscall(435, args, 88)\n"
                               "if pid == 0:\n    libc.syscall(60, 0)\nreturn 1 if pid > 0 else 0"),
            ("unshare_user", "self", "return ok(libc.unshare(0x10000000))"),
            ("keyctl_add_key", "self", f"return ok(libc.syscall({SYS_ADD_KEY}, b'user', b'k', b'v', 1, {KEY_SPEC_PROCESS}))"),
            # other ABIs: x32 numbers and the 32-bit int 0x80 entry (seccomp kills other architectures)
            ("x32_getpid", "self", "return 1 if libc.syscall(0x40000000 | 39) > 0 else 0"),
            ("int80_gadget", "self", INT80),
        ]
    return [(name, kind, _fn(body)) for name, kind, body in a]


#: Python-layer escapes (issue 20's list) run with the sandbox's namespace and the static policy
#: off: each reaches the real builtins or ``os`` and then tries to read the secret. The value says
#: how far it got: 1 the secret was read, 2 the escape worked and a kernel layer refused the read
#: (a bare ``except``: the namespaces hold no exception names), an error: the escape itself failed,
#: which the runner reports, so that an escape the namespaces have outgrown does not pass unseen.
ESCAPED = 2.0

#: the reference namespace has neither ``isinstance`` nor ``type``: a module's ``__builtins__`` is
#: a dict or the builtins module
_AS_DICT = "    B = b if b.__class__ is {}.__class__ else b.__dict__\n"


def escapes(ctx: dict) -> list[tuple[str, str, str]]:
    secret = ctx["secret"]
    read = (f"    try:\n        return 1 if {SECRET!r} in B['open']({secret!r}).read() else 0\n"
            "    except:\n        return 2\n")
    return [
        ("type_int_class_builder", "earnest", "def solution():\n"
         "    T = type(int)\n"
         "    C = T('C', (), {'__getitem__': lambda self, k: k})\n"
         "    b = statistics.mean.__globals__['__builtins__']\n" + _AS_DICT + read + "import statistics\n"),
        ("match_args_getattr", "earnest", "import statistics\n"
         "class Meta(type(int)):\n"   # the one-argument type() is the real one
         "    def __instancecheck__(cls, obj):\n"
         "        return True\n"
         "class Any(metaclass=Meta):\n"
         "    __match_args__ = ('__globals__',)\n"
         "def solution():\n"
         "    match statistics.mean:\n"
         "        case Any(g):\n"
         "            b = g['__builtins__']\n" + _AS_DICT + read),
        ("random_seed_globals_os", "reference",
         "def solution():\n"
         "    o = random.Random.seed.__globals__['_os']\n"
         "    op = o.open\n"   # not "open(...)" on one line: the reference's check would refuse it
         f"    try:\n        return 1 if {SECRET!r} in o.read(op({secret!r}, 0), 100).decode() else 0\n"
         "    except:\n        return 2\n"
         "ret = solution()"),
        ("typing_globals_builtins", "reference",
         "def solution():\n"
         "    b = typing.get_origin.__globals__['__builtins__']\n" + _AS_DICT + read +
         "ret = solution()"),
    ]


def check_escape(name: str, res, policy: str) -> list[str]:
    """The failure lines for one escape's result (see ESCAPED)."""
    if res.error_class == "" and res.value == 1.0:
        return [f"escape {name} (static policy {policy}): read the secret"]
    if (res.error_class, res.value) != ("", ESCAPED):
        return [f"escape {name} (static policy {policy}) did not reach the real builtins, so it "
                f"tests nothing: {res}"]
    return []


INNOCENT = [
    ("def solution():\n    eggs = 16 - 3 - 4\n    return eggs * 2\n", 18.0),
    ("import math\ndef solution():\n    return math.comb(10, 3) + math.isqrt(99)\n", 129.0),
    ("from fractions import Fraction\ndef solution():\n    return Fraction(7, 2) * 4\n", 14.0),
    ("def solution():\n    total = 0\n    for i in range(1000):\n        total += i % 7\n    return total\n", 2997.0),
    ("import statistics\ndef solution():\n    return statistics.median([3, 1, 4, 1, 5])\n", 3.0),
    ("def solution():\n    return sum(x * x for x in range(30))\n", 8555.0),
]


class Targets:
    """What the attacks aim at: a secret file, victims, a listening TCP port and abstract unix
    socket, a 'neighbour' process of the same user, a SysV segment of this process."""

    def __init__(self) -> None:
        # the IPC objects seen (and removed) are this run's own: in an IPC namespace of its own
        # (unshare as root here; ``unshare --ipc`` before dropping to nobody, which says so in
        # OWN_IPC_NAMESPACE), an answer that shares this process's namespace (namespaces off) leaves
        # its objects here, and no other process of the machine adds or loses any
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.ipc_private = os.environ.get(OWN_IPC_NAMESPACE) == "1" or self.libc.unshare(CLONE_NEWIPC) == 0
        # elsewhere (not root, no namespace): the objects created by this uid, which the answers run as
        self.ipc_owner = None if self.ipc_private or os.geteuid() == 0 else os.getuid()
        self.tmp = Path(tempfile.mkdtemp(prefix="earnest-attacks-"))
        self.secret = self.tmp / "secret.txt"
        self.secret.write_text(SECRET)
        self.secret.chmod(0o600)
        self.victim = self.tmp / "victim.txt"
        self.victim.write_text("keep")
        self.victim_dir = self.tmp / "victim_dir"
        self.victim_dir.mkdir()
        (self.victim_dir / "keep.txt").write_text("keep")
        self.hits: list[str] = []
        # a signal an answer sends this process by proxy (fasync) is counted, not obeyed
        self.signals: list[int] = []
        signal.signal(signal.SIGURG, lambda signum, frame: self.signals.append(signum))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.abstract_name = f"earnest-attack-{os.getpid()}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.abstract_name)
        self.unix.listen(8)
        self._stop = threading.Event()
        for server in (self.tcp, self.unix):
            server.settimeout(0.2)
            threading.Thread(target=self._accept, args=(server,), daemon=True).start()
        # a neighbour of the same user: a sleeping process whose limits, life and memory must not change
        self.marker = ctypes.create_string_buffer(MARKER, len(MARKER))
        # it says when it runs (a handshake, not a wait): every attack on it meets a live process
        ready_r, ready_w = os.pipe()
        self.neighbour = os.fork()
        if self.neighbour == 0:
            os.close(ready_r)
            os.write(ready_w, b"r")
            os.close(ready_w)
            time.sleep(600)
            os._exit(0)
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"r", "the neighbour did not start"
        os.close(ready_r)
        self.neighbour_limits = {r: resource.prlimit(self.neighbour, r) for r in (resource.RLIMIT_AS,)}
        self.libc.shmat.restype = ctypes.c_void_p
        self.plant = self.libc.shmget(PLANT_KEY, 4096, 0o1666)
        self.plant_addr = self.libc.shmat(self.plant, None, 0) if self.plant >= 0 else None
        if self.plant_addr:
            ctypes.memmove(self.plant_addr, b"intact", 6)
        # a session keyring of this process's own with the API key in it (as a login session's
        # keyring would hold tokens): no answer may read it
        self.libc.syscall.restype = ctypes.c_long
        self.session_key = self.persistent = self.persistent_key = -1
        if X86_64:
            self.libc.syscall(SYS_KEYCTL, 1, f"earnest-attacks-{os.getpid()}".encode())  # JOIN_SESSION_KEYRING
            self.session_key = self.libc.syscall(SYS_ADD_KEY, b"user", SESSION_KEY.encode(), API_KEY.encode(),
                                                 len(API_KEY), KEY_SPEC_SESSION)
            # and in this user's persistent keyring (linked into this process's keyring to reach it)
            self.persistent = self.libc.syscall(SYS_KEYCTL, 22, -1, KEY_SPEC_PROCESS)  # GET_PERSISTENT
            self.persistent_key = (self.libc.syscall(SYS_ADD_KEY, b"user", SESSION_KEY.encode(), API_KEY.encode(),
                                                     len(API_KEY), ctypes.c_long(self.persistent))
                                   if self.persistent >= 0 else -1)
        self.caller_limits = {r: resource.getrlimit(r) for r in (resource.RLIMIT_FSIZE, resource.RLIMIT_CPU)}
        self.caller_nice = os.getpriority(os.PRIO_PROCESS, 0)
        self.caller_affinity = os.sched_getaffinity(0)
        self.caller_policy = os.sched_getscheduler(0)
        self.ipc_before = self.ipc_objects()

    def _accept(self, server) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            self.hits.append(str(server.family))
            conn.close()

    #: the shape of ctx() for listing the attacks without targets
    DUMMY_CTX = {"secret": "/nonexistent", "victim": "/nonexistent", "victim_dir": Path("/nonexistent"),
                 "caller": 1, "neighbour": 1, "port": 1, "abstract": "x", "marker": 0}

    def ctx(self) -> dict:
        return {"secret": str(self.secret), "victim": str(self.victim), "victim_dir": self.victim_dir,
                "caller": os.getpid(), "neighbour": self.neighbour, "port": self.tcp.getsockname()[1],
                "abstract": self.abstract_name, "marker": ctypes.addressof(self.marker)}

    def ipc_objects(self) -> set[str]:
        """The SysV IPC objects ("kind:id") of this process's IPC namespace (see ``ipc_owner``)."""
        out = set()
        for kind in ("shm", "msg", "sem"):
            try:
                header, *lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
            except (OSError, ValueError):
                continue
            cuid = header.split().index("cuid")
            out |= {f"{kind}:{line.split()[1]}" for line in lines
                    if line.strip() and self.ipc_owner in (None, int(line.split()[cuid]))}
        return out

    def effects(self) -> list[str]:
        """Every effect seen from outside (empty: none)."""
        seen = []
        if (not self.victim.is_file() or self.victim.read_text() != "keep"
                or not (self.victim_dir / "keep.txt").exists()):
            seen.append("a victim file changed")
        if sorted(p.name for p in self.victim_dir.iterdir()) != ["keep.txt"]:
            seen.append("the victim directory changed")
        if sorted(p.name for p in self.tmp.iterdir()) != ["secret.txt", "victim.txt", "victim_dir"]:
            seen.append("a file appeared beside the victims")
        if self.hits:
            seen.append(f"a socket was reached ({self.hits})")
        if self.signals:
            seen.append(f"the caller received a signal ({self.signals})")
        if {r: resource.getrlimit(r) for r in self.caller_limits} != self.caller_limits:
            seen.append("the caller's limits changed")
        if {r: resource.prlimit(self.neighbour, r) for r in self.neighbour_limits} != self.neighbour_limits:
            seen.append("the neighbour's limits changed")
        try:
            os.kill(self.neighbour, 0)
            fields = Path(f"/proc/{self.neighbour}/stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] in ("T", "t", "Z"):
                seen.append(f"the neighbour is {fields[0]}")
            elif _dying(self.neighbour, int(fields[6])):  # killed, and not yet run to its end
                seen.append("the neighbour was killed (it is exiting)")
        except ProcessLookupError:
            seen.append("the neighbour was killed")
        if os.getpriority(os.PRIO_PROCESS, 0) != self.caller_nice:
            seen.append("the caller's priority changed")
        if os.sched_getaffinity(0) != self.caller_affinity:
            seen.append("the caller's CPU affinity changed")
        if os.sched_getscheduler(0) != self.caller_policy:
            seen.append("the caller's scheduling policy changed")
        if self.plant_addr and ctypes.string_at(self.plant_addr, 6) != b"intact":
            seen.append("this process's shared memory segment was overwritten")
        left = self.ipc_objects() - self.ipc_before
        if left:
            seen.append(f"IPC objects left behind: {sorted(left)}")
        if planted_key(remove=False):
            seen.append("a key left behind in the answers' user keyring")
        return seen

    def reset(self) -> None:
        """Undo what a configuration that is not meant to stop everything let through."""
        for r, lim in self.caller_limits.items():  # first: a file size limit of 0 stops the rest
            try:
                resource.setrlimit(r, lim)
            except (ValueError, OSError):
                pass
        for obj in self.ipc_objects() - self.ipc_before:
            kind, ident = obj.split(":")
            getattr(self.libc, f"{kind}ctl")(int(ident), 0, None)  # IPC_RMID
        self.victim.write_text("keep")
        for p in self.victim_dir.iterdir():
            if p.name != "keep.txt":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        (self.victim_dir / "keep.txt").write_text("keep")
        for p in self.tmp.iterdir():
            if p.name not in ("secret.txt", "victim.txt", "victim_dir"):
                shutil.rmtree(p) if p.is_dir() else p.unlink()
        self.hits.clear()
        self.signals.clear()
        planted_key(remove=True)

    def close(self) -> None:
        self._stop.set()
        self.tcp.close()
        self.unix.close()
        os.kill(self.neighbour, 9)
        os.waitpid(self.neighbour, 0)
        if self.plant >= 0:
            self.libc.shmctl(self.plant, 0, None)
        if self.persistent_key >= 0:
            self.libc.syscall(SYS_KEYCTL, 9, self.persistent_key, ctypes.c_long(self.persistent))  # UNLINK
        shutil.rmtree(self.tmp, ignore_errors=True)


def _dying(pid: int, flags: int) -> bool:
    """Whether ``pid`` (its /proc stat ``flags``) has been killed but is not yet a zombie: a SIGKILL
    pending (the kernel queues it as it is sent; on a loaded machine the process may not have run
    since) or the process exiting (PF_EXITING), so that a kill is seen however late it takes effect."""
    if flags & 0x4:  # PF_EXITING
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone meanwhile
    masks = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("SigPnd:", "ShdPnd:"))]
    return any(mask & (1 << (signal.SIGKILL - 1)) for mask in masks)


def planted_key(remove: bool) -> bool:
    """Whether the key an answer planted is in the user keyring its uid has on the host (as root:
    nobody's, looked up by a child that becomes nobody); ``remove`` unlinks it."""
    if not X86_64:
        return False
    pid = os.fork()
    if pid == 0:
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            k = libc.syscall(SYS_KEYCTL, 10, KEY_SPEC_USER, b"user", PLANT_KEYNAME.encode(), 0)  # SEARCH
            if k >= 0 and remove:
                libc.syscall(SYS_KEYCTL, 9, k, KEY_SPEC_USER)  # UNLINK
            os._exit(1 if k >= 0 else 0)
        finally:
            os._exit(2)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 1


#: Answers one after the other in one worker: a key planted in the user keyring for the next
#: answer, and signals to the pid namespace's init (whose death would end the worker).
PLANT_FOR_NEXT = _fn(f"return ok(libc.syscall({SYS_ADD_KEY}, b'user', {PLANT_KEYNAME.encode()!r}, b'42', 2, {KEY_SPEC_USER}))")
READ_FROM_PREVIOUS = _fn(f"return ok(libc.syscall({SYS_KEYCTL}, 10, {KEY_SPEC_USER}, b'user', {PLANT_KEYNAME.encode()!r}, 0))")
SIGNAL_INIT = _fn("return sum(1 for sig in (15, 1, 2, 10, 19) if libc.kill(1, sig) == 0)")
#: the pid namespace's init re-limited (its descriptors: RLIMIT_NOFILE 5); an answer of the same
#: uid may (as an ordinary user without the allowlist): the next answer must meet a fresh init
RELIMIT_INIT = _fn("class RL(ctypes.Structure):\n    _fields_ = [('cur', ctypes.c_uint64), ('max', ctypes.c_uint64)]\n"
                   "new = RL(5, 5)\nreturn ok(libc.prlimit(1, 7, ctypes.byref(new), None))")


def run_sequential(disable: tuple, must_stop: set, compiler: str = "auto") -> list[str]:
    """The answers that need an order (one worker): cross-answer keys, the init's signals."""
    failures = []
    with Sandbox(workers=1, limits=LIMITS, disable=tuple(disable) + ("static",), seccomp_compiler=compiler) as box:
        per_answer = "user-per-answer" in box.capabilities(start=True).get("namespaces", [])
        # elsewhere (Landlock alone) the key would stay in the uid's keyring; the namespaces stop it
        # with a user namespace per answer, where the kernel gives nobody one
        if X86_64 and "ipc" in must_stop and (per_answer or "seccomp" not in disable):
            plant, read = box._run_many_unchecked([PLANT_FOR_NEXT, READ_FROM_PREVIOUS], full_builtins=True)
            if read.error_class == "" and read.value == 1.0:
                failures.append("keyring_read_from_previous: got through (ipc)")
        elif "ipc" in must_stop:
            print("# keyring check skipped: no user namespace per answer on this machine", flush=True)
        box.run("def solution():\n    return 1\n")
        helpers, workers = box.helper_pids(), box.worker_pids()
        if helpers:  # a pid namespace: its init is pid 1 for the answers
            box._run_unchecked(SIGNAL_INIT, full_builtins=True)
            after = box.run("def solution():\n    return 6 * 7\n")
            if (after.error_class, after.value) != ("", 42.0):
                failures.append(f"innocent answer after signals to the init wrong: {after}")
            if box.helper_pids() != helpers or box.worker_pids() != workers:
                failures.append("signal_namespace_init: the init (and with it the worker) ended (escape)")
            before = resource.prlimit(next(iter(box.helper_pids())), resource.RLIMIT_NOFILE)
            relimit = box._run_many_unchecked([RELIMIT_INIT], full_builtins=True)[0]
            after = box.run("def solution():\n    return 6 * 7\n")
            if (after.error_class, after.value) != ("", 42.0):
                failures.append(f"innocent answer after the init's limits wrong: {after}")
            for pid in box.helper_pids():
                try:
                    limit = resource.prlimit(pid, resource.RLIMIT_NOFILE)
                except OSError:
                    continue
                if limit != before:
                    failures.append(f"relimit_namespace_init ({relimit.value}): the next answer's init has "
                                    f"RLIMIT_NOFILE {limit}")
    return failures


def survivors(token: str) -> list[int]:
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(name))
        except OSError:
            continue
    return found


def run_config(config: str, targets: Targets) -> list[str]:
    """Run the corpus under one configuration; returns the failure lines (empty: it held)."""
    disable = CONFIGS[config][0]
    compiler = COMPILER.get(config, "auto")
    failures: list[str] = []
    ctx = targets.ctx()
    with Sandbox(workers=2, limits=LIMITS, disable=tuple(disable) + ("static",), seccomp_compiler=compiler) as box:
        caps = box.capabilities(start=True)
        must_stop = must_stop_for(config, caps)
        # an attack this configuration is not meant to stop runs only where it harms no one but
        # itself (under Landlock alone, prlimit on the caller would cripple this process)
        corpus = [a for a in attacks(ctx) if a[1] in must_stop or a[1] in ("self", "ipc_call")]
        # a batch: innocent, attack, innocent, attack, ... (two workers: neighbours run side by side)
        batch, expect = [], []
        for i, (name, kind, source) in enumerate(corpus):
            good, value = INNOCENT[i % len(INNOCENT)]
            batch += [good, source]
            expect += [("innocent", value), (name, kind)]
        if compiler == "earnest" and caps.get("seccomp_compiler") != "earnest":
            failures.append(f"the allowlist was compiled by {caps.get('seccomp_compiler')!r}, not {compiler!r}")
        token = box.token
        # an attack that needs an earlier one (CONTROL_GROUPS: the segment planted for the next
        # answer) runs after the whole batch, never beside the answer it needs
        later = {name for group in CONTROL_GROUPS for name in group[1:]}
        first = [k for k, e in enumerate(expect) if e[0] not in later]
        after = [k for k, e in enumerate(expect) if e[0] in later]
        results = box._run_many_unchecked([batch[k] for k in first], full_builtins=True)
        results += box._run_many_unchecked([batch[k] for k in after], full_builtins=True) if after else []
        expect = [expect[k] for k in first + after]
        for (name, what), res in zip(expect, results):
            if name == "innocent":
                if (res.error_class, res.value) != ("", what):
                    failures.append(f"innocent neighbour wrong: {res}")
            elif what in must_stop and res.error_class == "" and res.value == 1.0:
                failures.append(f"{name}: got through ({what})")
            elif name == "int80_gadget" and "seccomp" not in disable and "SIGSYS" not in res.detail:
                # it cannot say 1 (the bytes after int 0x80 crash it): the allowlist's kill is the
                # evidence that the 32-bit call was refused rather than run
                failures.append(f"{name}: not killed by the allowlist (SIGSYS): {res}")
        # Python-layer escapes with the sandbox's own namespace, the static policy off ...
        for name, mode, source in escapes(ctx):
            failures += check_escape(name, box.run_many([source], fidelity=mode)[0], "off")
    failures += run_sequential(disable, must_stop, compiler)
    # ... and on (reference mode no longer refuses them statically: the kernel layers hold)
    with Sandbox(workers=1, limits=LIMITS, disable=tuple(disable), seccomp_compiler=compiler) as box:
        for name, mode, source in escapes(ctx):
            res = box.run_many([source], fidelity=mode)[0]
            if mode == "earnest" and res.error_class == "forbidden_construct":
                continue  # earnest's static policy refuses dunders: it classifies them, as it should
            failures += check_escape(name, res, "on")
    strays = [p for p in survivors(token) if p != os.getpid()]
    deadline = time.monotonic() + 5
    while strays and time.monotonic() < deadline:
        time.sleep(0.1)
        strays = [p for p in survivors(token) if p != os.getpid()]
    effects = targets.effects()
    stopped_effects = {
        "a victim file changed": "files", "the victim directory changed": "files",
        "a file appeared beside the victims": "files", "a socket was reached": "net",
        "the caller's limits changed": "procs", "the neighbour's limits changed": "procs",
        "the neighbour": "procs", "the caller's priority changed": "procs", "the caller received a signal": "procs",
        "the caller's CPU affinity changed": "procs", "the caller's scheduling policy changed": "procs",
        "this process's shared memory segment was overwritten": "ipc", "IPC objects left behind": "ipc",
        "a key left behind": "ipc",
    }
    for effect in effects:
        kind = next((k for prefix, k in stopped_effects.items() if effect.startswith(prefix)), "other")
        if kind in must_stop or kind == "other":
            failures.append(f"effect: {effect}")
    if strays and "escape" in must_stop:
        failures.append(f"processes survived the sandbox: {strays}")
    targets.reset()
    print(f"# {config}: uid {os.getuid()}; layers {caps.get('layers')}; namespaces {caps.get('namespaces')}",
          flush=True)
    return failures


def check_refusal() -> list[str]:
    """No layer that blocks file reads: model code does not run; the error names the layers."""
    try:
        with Sandbox(workers=1, limits=LIMITS, disable=("seccomp", "landlock", "namespaces")) as box:
            box.run("def solution():\n    return 1\n")
    except SandboxUnavailable as exc:
        text = str(exc)
        missing = [w for w in ("seccomp", "landlock", "namespaces", "libseccomp2") if w not in text]
        return [f"refusal message lacks {missing}: {text}"] if missing else []
    return ["model code ran with no layer blocking file reads"]


#: The control: every attack once with no layer at all (no sandbox; the real builtins, as the
#: current user), each group of attacks in a disposable caller of its own (its Targets: an attack
#: that works harms only that caller and its neighbour), in the sandbox's shape: caller -> a worker
#: that reads the result pipe -> the answer's process (the result pipe as fd 3). An attack that does
#: not work even there proves nothing where a layer "stops" it. Attacks that need an earlier one run
#: in one caller, in order.
CONTROL_GROUPS = [("shm_plant_for_next", "shm_read_from_previous")]

#: Attacks that cannot work on some machines even with no layer, each with the probe (run
#: unsandboxed, as the control's answer) that says whether this machine is one of them: the control
#: counts such an attack only where its probe says the kernel offers the call.
MACHINE_DEPENDENT = {
    # the x32 ABI is built into few kernels (and off by default on Debian's: syscall.x32=n)
    "x32_getpid": "return 1 if libc.syscall(0x40000000 | 39) > 0 or ctypes.get_errno() != 38 else 0",
    # unprivileged BPF is off on many kernels (kernel.unprivileged_bpf_disabled)
    "bpf_map_create": "return 1 if os.geteuid() == 0 or "
                      "open('/proc/sys/kernel/unprivileged_bpf_disabled').read().strip() == '0' else 0",
}


#: How long the control's worker reads an escape's result pipe: an escape's child (or what it
#: started) may hold it open for 30 s; still alive after this, it has outlived its worker's deadline.
#: Every other attack is read to its end (the pipe's EOF as the child exits), however slow the
#: machine: a signal by proxy is sent only when the worker reads the full pipe.
ESCAPE_DEADLINE = 4.0
#: and any other attack's child, if it never ends: control() gives its caller 60 s in all
OTHER_DEADLINE = 55.0


def _control_worker(source: str, report_w: int, deadline_s: float) -> None:
    """The worker of the control: run source in a child (fd 3 its result pipe), read the result as
    the sandbox's worker does (a signal by proxy reaches this process), report on report_w."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        os.dup2(w, 3)
        try:
            space: dict = {"__name__": "answer"}
            exec(source, space)  # noqa: S102 - the point: an answer with no layer around it
            out = {"error": "", "value": float(space["solution"]())}
        except BaseException as exc:  # noqa: BLE001
            out = {"error": type(exc).__name__, "detail": str(exc)[:200]}
        os.write(3, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data, deadline = b"", time.monotonic() + deadline_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            break
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    pid, status = os.waitpid(child, os.WNOHANG)
    alive = pid == 0
    try:
        os.killpg(child, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if alive:
        status = os.waitpid(child, 0)[1]
    try:
        out = json.loads(data[-4096:].decode())
    except ValueError:
        out = {"error": "no result", "detail": repr(data[:100])}
    out["alive"] = alive
    out["child_signal"] = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    os.write(report_w, json.dumps(out).encode())
    os._exit(0)


def control_caller(names: list[str]) -> None:
    """One disposable caller of the control: a line of JSON per attack (what it returned, the
    effects seen from here)."""
    targets = Targets()
    try:
        sources = {name: (kind, src) for name, kind, src in attacks(targets.ctx())}
        sources.update({f"probe:{name}": ("probe", _fn(body)) for name, body in MACHINE_DEPENDENT.items()})
        for name in names:
            r, w = os.pipe()
            worker = os.fork()
            if worker == 0:
                os.close(r)
                _control_worker(sources[name][1], w,
                                ESCAPE_DEADLINE if sources[name][0] == "escape" else OTHER_DEADLINE)
            os.close(w)
            data = b""
            while chunk := os.read(r, 1 << 16):
                data += chunk
            os.close(r)
            status = os.waitpid(worker, 0)[1]
            out = json.loads(data.decode()) if data else {"error": "no report"}
            if os.WIFSIGNALED(status):
                out["worker_signal"] = os.WTERMSIG(status)
            out["effects"] = targets.effects()
            out["name"] = name
            print(json.dumps(out), flush=True)
    finally:
        for obj in targets.ipc_objects() - targets.ipc_before:  # leave no IPC object on the host
            kind, ident = obj.split(":")
            getattr(targets.libc, f"{kind}ctl")(int(ident), 0, None)
        planted_key(remove=True)
        targets.close()


def control() -> dict[str, str]:
    """Every attack with no layer: name -> how it was seen to work, or 'VACUOUS: ...'."""
    probe = [f"probe:{name}" for name in MACHINE_DEPENDENT]
    grouped = {name for group in CONTROL_GROUPS for name in group}
    kinds = {name: kind for name, kind, _ in attacks({**Targets.DUMMY_CTX})}
    groups = [tuple(probe)] + list(CONTROL_GROUPS) + [(name,) for name in kinds if name not in grouped]
    seen: dict[str, str] = {}
    for group in groups:
        proc = subprocess.Popen([sys.executable, __file__, "--control-caller", *group],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stopped = False
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = ""
            if state == "T":  # stopped by the answer (SIGSTOP): the effect; let it finish
                stopped = True
                os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
        lines = {d["name"]: d for d in map(json.loads, filter(None, out.splitlines()))}
        for name in group:
            d = lines.get(name)
            if d is None:
                seen[name] = f"VACUOUS: no report (caller rc {proc.returncode}): {err[-500:]}"
            elif d.get("value") == 1.0:
                seen[name] = "returned 1"
            elif d["effects"]:
                seen[name] = f"effects {d['effects']}"
            elif d.get("worker_signal"):
                seen[name] = f"the worker was killed by signal {d['worker_signal']}"
            elif stopped:
                seen[name] = "the caller was stopped"
            elif d["alive"] and kinds.get(name) == "escape":
                seen[name] = "outlived its worker's deadline"
            elif name == "int80_gadget" and d.get("child_signal") not in (None, int(signal.SIGSYS)):
                # no filter killed it (SIGSYS): the 32-bit call went through, then the bytes after it crashed it
                seen[name] = f"not killed by a filter: the child ended by signal {d['child_signal']}"
            else:
                seen[name] = f"VACUOUS: {d}"
    for name in MACHINE_DEPENDENT:
        if seen.pop(f"probe:{name}") != "returned 1" and seen[name].startswith("VACUOUS"):
            seen[name] = "not offered by this kernel (its probe says so)"
    return seen


def main(argv: list[str]) -> int:
    if argv[:1] == ["--control-caller"]:
        control_caller(argv[1:])
        return 0
    if argv[:1] == ["--control"]:
        seen = control()
        for name, how in seen.items():
            print(f"{'VACUOUS' if how.startswith('VACUOUS') else 'works'} {name}: {how}", flush=True)
        return 1 if any(how.startswith("VACUOUS") for how in seen.values()) else 0
    configs = argv or list(CONFIGS)
    targets = Targets()
    failed = False
    try:
        for config in configs:
            failures = run_config(config, targets)
            for line in failures:
                print(f"FAIL {config}: {line}", flush=True)
            if not failures:
                print(f"ok {config}", flush=True)
            failed |= bool(failures)
        refusal = check_refusal()
        for line in refusal:
            print(f"FAIL refusal: {line}")
        if not refusal:
            print("ok refusal")
        failed |= bool(refusal)
    finally:
        targets.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The seccomp allowlist: the system calls a child may make once model code runs, compiled into a
classic BPF program by libseccomp where it loads, else by earnest's own compiler (x86_64 and
aarch64). Standard library only.
"""

from __future__ import annotations

import os
import struct


_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2

# seccomp: libseccomp's constants (seccomp.h), which earnest's own compiler uses too
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO_EPERM = 0x00050000 | 1
_SCMP_CMP_EQ, _SCMP_CMP_MASKED_EQ = 4, 7
_PROT_EXEC = 0x4
_FUTEX_PRIVATE_FLAG = 128
#: clock ids the answer's clock calls may name: the system's clocks (0-15: CLOCK_REALTIME ..
#: CLOCK_TAI, the process's and thread's own CPU clocks); a negative id names another process's or
#: thread's CPU clock (``~pid << 3 | type``), whose time (and with it, the process list) is refused
_CLOCK_ID_MASK = 0xFFFFFFF0

#: The system calls a child may make once model code runs; everything else fails with EPERM
#: (and other architectures' calls kill it). Measured with ``strace -f`` on the worker running the
#: 89 golden code answers in both modes and answers that allocate, recurse, print and loop until
#: their limits: after the filter CPython made only brk, mmap, munmap, write and exit_group. The
#: rest are harmless calls it makes on other paths (large reallocations, random.seed(), clocks
#: without the vDSO, a signal interrupting a call, glibc's own locking). The child holds one
#: descriptor (its result pipe, fd 3) and no path: nothing here takes one.
ALLOWED_SYSCALLS = {
    # computing: memory. mmap/mprotect without PROT_EXEC (see _seccomp_filter); an mmap of a file
    # is impossible (the descriptors are a pipe and, in reference mode, /dev/null write-only)
    "brk": "the heap (pymalloc arenas, big ints)",
    "mmap": "large allocations (anonymous only; no PROT_EXEC)",
    "munmap": "freeing large allocations",
    "mremap": "growing large allocations (lists, bytearrays)",
    "mprotect": "glibc malloc's arena set-up (no PROT_EXEC)",
    "madvise": "glibc malloc returning memory",
    # computing: the interpreter itself
    "futex": "the GIL and locks (one thread: never contended); process-private operations only",
    "getrandom": "random.seed() / os.urandom without a file",
    "clock_gettime": "time and datetime.now() (also the vDSO's fallback); the system's and its own clocks only",
    "clock_getres": "time.get_clock_info (the same clocks)",
    "gettimeofday": "the vDSO's fallback",
    "clock_nanosleep": "time.sleep (bounded by the wall-clock limit; the same clocks)",
    "nanosleep": "time.sleep on older glibc",
    "sched_yield": "lock spinning in libc",
    "getpid": "CPython's fork/thread-state checks",
    "gettid": "CPython's thread state",
    "rt_sigprocmask": "glibc blocking signals around its own critical sections",
    "rt_sigreturn": "returning from a signal handler (SIGXCPU, SIGALRM end the child)",
    "restart_syscall": "a system call interrupted by a signal",
    # writing the result and ending
    "write": "the result on fd 3 (the only descriptor the child holds; in reference mode also fds 1 "
             "and 2, /dev/null opened write-only: the authors' stdout and stderr)",
    "exit": "ending",
    "exit_group": "ending (os._exit)",
}
#: Allowed only with these arguments: (argument index, comparison, mask or value, value).
#: Argument conditions, (index, op, mask, value): the call is allowed only where every
#: ``argument & mask == value`` (masks in the low 32 bits). A futex without FUTEX_PRIVATE_FLAG is
#: keyed by the page's file and offset where the page belongs to a file (libc's pages, which every
#: answer maps): such a futex reaches another answer's process whatever the namespaces and Landlock
#: domains, a channel between answers running at once; CPython and glibc use private futexes only.
#: A clock id outside 0-15 is another process's or thread's CPU clock (issue 39).
#: Each value is a list of alternatives (the call is allowed where one of them holds), each a list of
#: conditions that must all hold. The futex operations allowed are the private ones CPython and
#: glibc use (wait, wake, requeue, cmp_requeue, wake_op, wait_bitset, wake_bitset; FUTEX_CLOCK_REALTIME
#: either way): no priority-inheritance operation (LOCK_PI, UNLOCK_PI, TRYLOCK_PI, WAIT_REQUEUE_PI,
#: CMP_REQUEUE_PI, LOCK_PI2), which look up the thread id written in the futex word: without a pid
#: namespace, FUTEX_TRYLOCK_PI told existing thread ids from missing ones, so an answer could read
#: when a neighbour's process ended (issue 53.5). No answer needs them (no PI mutex in CPython).
_FUTEX_CMD_MASK = 0x7F | _FUTEX_PRIVATE_FLAG
#: FUTEX_WAIT, WAKE, REQUEUE, CMP_REQUEUE, WAKE_OP, WAIT_BITSET, WAKE_BITSET
FUTEX_ALLOWED_OPS = (0, 1, 3, 4, 5, 9, 10)
_ALLOWED_WITH_ARGS = {
    "mmap": [[(2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, 0)]],
    "mprotect": [[(2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, 0)]],
    "futex": [[(1, _SCMP_CMP_MASKED_EQ, _FUTEX_CMD_MASK, op | _FUTEX_PRIVATE_FLAG)] for op in FUTEX_ALLOWED_OPS],
    "clock_gettime": [[(0, _SCMP_CMP_MASKED_EQ, _CLOCK_ID_MASK, 0)]],
    "clock_getres": [[(0, _SCMP_CMP_MASKED_EQ, _CLOCK_ID_MASK, 0)]],
    "clock_nanosleep": [[(0, _SCMP_CMP_MASKED_EQ, _CLOCK_ID_MASK, 0)]],
}


#: The machines earnest compiles the allowlist for (no libseccomp), by ``os.uname().machine``:
#: the AUDIT_ARCH_* value the kernel puts in seccomp_data.arch.
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
#: ``ALLOWED_SYSCALLS``' numbers on each machine of ``_AUDIT_ARCH``, in its order: the kernel's
#: tables (arch/x86/entry/syscalls/syscall_64.tbl; asm-generic/unistd.h for aarch64), checked
#: against libseccomp's own resolution by tests/test_sandbox_layers.py.
_SYSCALL_NUMBERS = {
    "brk": (12, 214), "mmap": (9, 222), "munmap": (11, 215), "mremap": (25, 216), "mprotect": (10, 226),
    "madvise": (28, 233), "futex": (202, 98), "getrandom": (318, 278), "clock_gettime": (228, 113),
    "clock_getres": (229, 114), "gettimeofday": (96, 169), "clock_nanosleep": (230, 115),
    "nanosleep": (35, 101), "sched_yield": (24, 124), "getpid": (39, 172), "gettid": (186, 178),
    "rt_sigprocmask": (14, 135), "rt_sigreturn": (15, 139), "restart_syscall": (219, 128),
    "write": (1, 64), "exit": (60, 93), "exit_group": (231, 94),
}


def _syscall_numbers(machine: str) -> dict[str, int]:
    """``_SYSCALL_NUMBERS`` for one machine of ``_AUDIT_ARCH``: {name: number}."""
    column = list(_AUDIT_ARCH).index(machine)
    return {name: numbers[column] for name, numbers in _SYSCALL_NUMBERS.items()}


_X32_SYSCALL_BIT = 0x40000000
_SECCOMP_RET_KILL = 0x00000000
# classic BPF (linux/filter.h): ld word at an absolute offset, jumps on a constant, return
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_BPF_ALU_AND_K = 0x54
# struct seccomp_data: nr (u32) at 0, arch (u32) at 4, instruction_pointer (u64) at 8, args (u64) from 16
_SECCOMP_DATA_NR, _SECCOMP_DATA_ARCH, _SECCOMP_DATA_ARGS = 0, 4, 16


def _bpf_allowlist(machine: str) -> bytes | None:
    """The allowlist as a classic BPF program (``struct sock_filter`` records), compiled by earnest
    for ``machine`` (``os.uname().machine``), or None for a machine it has no numbers for. The same
    decisions as libseccomp's program: another architecture's call, or an x32 call on x86_64, kills;
    a call in ``ALLOWED_SYSCALLS`` is allowed (``_ALLOWED_WITH_ARGS``: only where its argument
    passes the masked test); every other call fails with EPERM."""
    if machine not in _AUDIT_ARCH:
        return None
    arch, numbers = _AUDIT_ARCH[machine], _syscall_numbers(machine)
    if set(numbers) != set(ALLOWED_SYSCALLS):
        raise OSError("earnest's seccomp table does not cover ALLOWED_SYSCALLS")
    # a program of labelled instructions: jump targets are labels, resolved to offsets at the end
    prog: list[tuple] = []
    labels: dict[str, int] = {}

    def ins(code, k, jt=None, jf=None):
        prog.append((code, k, jt, jf))

    def label(name):
        labels[name] = len(prog)

    ins(_BPF_LD_W_ABS, _SECCOMP_DATA_ARCH)
    ins(_BPF_JEQ_K, arch, None, "kill")
    ins(_BPF_LD_W_ABS, _SECCOMP_DATA_NR)
    if machine == "x86_64":
        ins(_BPF_JGE_K, _X32_SYSCALL_BIT, "kill", None)
    for name in sorted(ALLOWED_SYSCALLS, key=numbers.get):
        ins(_BPF_JEQ_K, numbers[name], f"args:{name}" if name in _ALLOWED_WITH_ARGS else "allow", None)
    ins(_BPF_RET_K, _SCMP_ACT_ERRNO_EPERM)
    label("allow")
    ins(_BPF_RET_K, _SCMP_ACT_ALLOW)
    label("kill")
    ins(_BPF_RET_K, _SECCOMP_RET_KILL)
    for name, alternatives in _ALLOWED_WITH_ARGS.items():
        label(f"args:{name}")
        for a, conditions in enumerate(alternatives):
            # a condition that fails goes on to the next alternative, the last one's to the denial
            fail = f"alt:{name}:{a + 1}" if a + 1 < len(alternatives) else f"deny:{name}"
            for index, op, mask, value in conditions:
                if op != _SCMP_CMP_MASKED_EQ or mask >> 32 or value & ~mask:
                    raise OSError(f"earnest's seccomp compiler has no rule for the condition on {name}")
                # (argument & mask) == value, mask in the low word: the low word of the little-endian
                # u64 (libseccomp compares the high word with a mask of 0 too: always equal)
                ins(_BPF_LD_W_ABS, _SECCOMP_DATA_ARGS + 8 * index)
                if value == 0:
                    ins(_BPF_JSET_K, mask, fail, None)
                else:
                    ins(_BPF_ALU_AND_K, mask)
                    ins(_BPF_JEQ_K, value, None, fail)
            ins(_BPF_RET_K, _SCMP_ACT_ALLOW)
            if a + 1 < len(alternatives):
                label(fail)
        label(f"deny:{name}")
        ins(_BPF_RET_K, _SCMP_ACT_ERRNO_EPERM)
    out = b""  # classic BPF jumps only forward: every label above follows its jumps
    for pos, (code, k, jt, jf) in enumerate(prog):
        offsets = [0 if target is None else labels[target] - pos - 1 for target in (jt, jf)]
        if not all(0 <= off <= 255 for off in offsets):
            raise OSError("earnest's seccomp program has a jump out of range")
        out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
    return out


def _seccomp_filter(use_libseccomp: bool = True):
    """The seccomp program — default deny: EPERM for every system call not in ``ALLOWED_SYSCALLS``
    (with ``_ALLOWED_WITH_ARGS``' argument conditions), other architectures' calls kill — compiled
    once in the worker into a ``struct sock_fprog`` that each child installs with one prctl, by
    libseccomp where it loads (and ``use_libseccomp``), else by earnest's own compiler
    (``_bpf_allowlist``: x86_64 and aarch64). Returns (fprog, buffer, compiler) or None."""
    import ctypes

    program = _libseccomp_program() if use_libseccomp else None
    compiler = "libseccomp"
    if program is None:
        program, compiler = _bpf_allowlist(os.uname().machine), "earnest"
    if not program or len(program) % 8:
        return None

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_char_p))
    return fprog, buffer, compiler  # the buffer must stay alive as long as the program


def _libseccomp_program() -> bytes | None:
    """The allowlist compiled by libseccomp (None where it does not load)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None

    class ArgCmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                    ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]

    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_SCMP_ACT_ERRNO_EPERM)
    if not ctx:
        return None
    try:
        for syscall in ALLOWED_SYSCALLS:
            nr = lib.seccomp_syscall_resolve_name(syscall.encode())
            if nr < 0:  # not a system call on this architecture
                continue
            for cmps in _ALLOWED_WITH_ARGS.get(syscall, [[]]):   # several rules of one call: either allows
                array = (ArgCmp * max(1, len(cmps)))(*[ArgCmp(*c) for c in cmps])
                rc = lib.seccomp_rule_add_array(ctx, _SCMP_ACT_ALLOW, nr, len(cmps), array if cmps else None)
                if rc < 0:
                    raise OSError(-rc, f"seccomp rule for {syscall} failed")
        r, w = os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctx, w)
            os.close(w)
            w = -1
            if rc != 0:
                raise OSError(-rc, "seccomp_export_bpf failed")
            program = b""
            while chunk := os.read(r, 65536):
                program += chunk
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
    finally:
        lib.seccomp_release(ctx)
    return program

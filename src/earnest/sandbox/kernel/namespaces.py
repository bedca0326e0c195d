"""Namespaces, credentials and keyrings: the worker's empty root in its own user, mount, network,
UTS and IPC namespaces, its pid namespace under an init of ours, each answer's own user namespace
and session keyring, and root's switch to nobody. Standard library only.
"""

from __future__ import annotations

import os
import select
import signal


_CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWUSER = 0x04000000, 0x08000000, 0x10000000
_CLONE_NEWPID, _CLONE_NEWNET, _CLONE_NEWNS = 0x20000000, 0x40000000, 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_NOBODY = 65534


def _enter_namespaces(libc, root: bool, mountpoint: str) -> list[str]:
    """Move the worker into its own mount, network and UTS namespaces (through a user namespace
    when not root: no privilege needed where the kernel allows unprivileged user namespaces) and
    make an empty, read-only tmpfs its root, so that no path leads anywhere. Returns the
    namespaces obtained ([] if none: the other layers then hold alone); each child adds its own
    pid, IPC and mount namespaces (``_child_outer``)."""
    import ctypes

    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWUTS | _CLONE_NEWIPC
    if not root:
        flags |= _CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return []
    if not root:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    # while /proc is still reachable: no SysV IPC object at all in the answers' IPC namespace
    sysv = ["sysv-ipc-off"] if _refuse_sysv_ipc() else []
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

    def mount(source, target, fstype, flags, data=None):
        if libc.mount(source, target, fstype, flags, data) != 0:
            raise OSError(ctypes.get_errno(), f"mount {target!r} failed")

    # nothing done here may propagate to the host's mounts
    mount(None, b"/", None, _MS_REC | _MS_PRIVATE)
    mount(b"none", mountpoint.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, b"size=4k,mode=0555")
    os.chdir(mountpoint)
    if libc.syscall(_SYS_PIVOT_ROOT, b".", b".") == 0:
        if libc.umount2(b".", _MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), "umount of the old root failed")
    else:  # no pivot_root (an initramfs root): chroot into the empty tmpfs instead
        os.chroot(".")
    os.chdir("/")
    mount(None, b"/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    return ["mount", "net", "uts", "ipc"] + ([] if root else ["user"]) + sysv


#: The IPC namespace's limits that leave no SysV object to create: a segment's, a queue's and a
#: semaphore set's memory is not counted in any of the answer's limits (RLIMIT_AS sees a segment
#: only while attached), so without them an answer could hold memory beyond ``memory_bytes``.
_SYSV_OFF = (("shmmni", "0"), ("shmall", "0"), ("msgmni", "0"), ("sem", "0 0 0 0"))


def _refuse_sysv_ipc() -> bool:
    """Set the worker's (new) IPC namespace's limits to no SysV object at all; False where the
    kernel does not let this namespace's owner change them (before Linux 5.x in a user namespace,
    such as RHEL 8's: the seccomp allowlist, which refuses the calls, is then the only guard)."""
    try:
        for name, value in _SYSV_OFF:
            with open(f"/proc/sys/kernel/{name}", "w") as fh:
                fh.write(value)
            with open(f"/proc/sys/kernel/{name}") as fh:
                if fh.read().split() != value.split():
                    return False
    except OSError:
        return False
    return True


_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}.get(
    os.uname().machine, -1)
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "ppc64le": 271, "s390x": 280, "riscv64": 219}.get(
    os.uname().machine, -1)
_KEYCTL_JOIN_SESSION_KEYRING = 1


def _new_session_keyring(libc) -> bool:
    """Join a new, empty, anonymous session keyring: the keys of the session this process came
    from (the caller's login session: Kerberos tickets, tokens a user stored with ``keyctl``) are
    no longer reachable through it (keys are found by possession, and a process possesses the keys
    of its own session keyring, whatever its uid). False where the kernel has no keyrings."""
    return libc is not None and _SYS_KEYCTL > 0 and libc.syscall(_SYS_KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, None) >= 0


def _answer_user_namespace(libc) -> bool:
    """A user namespace of the answer's own (before it runs): its user keyring (``@u``, kept per
    user namespace, not per process) is then a fresh one that dies with the answer, instead of the
    keyring of its uid that every answer of the worker (as root: every process of ``nobody`` on the
    host, for as long as it runs) shares and that outlives the answer. The capabilities it gives
    are dropped right after (``_drop_capabilities``)."""
    return libc.unshare(_CLONE_NEWUSER) == 0


def _become_nobody(uid: int = _NOBODY) -> None:
    """As root: drop every group and become the batch's answer uid (and the gid of that number), as
    each answer's child does (:func:`pick_answer_uid`; 65534 only where no uid of its own is free)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


#: where a batch's own answer uid is drawn from: far above any account's (useradd's range ends at
#: 60000, systemd's dynamic users at 65519, subordinate ranges usually start at 100000 and are
#: 65536 wide per user) and below 2**31 (some tools read uids as signed)
ANSWER_UID_RANGE = (0x50000000, 0x7FFF0000)


def _mapped_ids(name: str) -> list[tuple[int, int, int]]:
    try:
        with open(f"/proc/self/{name}") as fh:
            return [tuple(map(int, line.split())) for line in fh if line.strip()]
    except (OSError, ValueError):
        return []


def _uids_in_use() -> set[int]:
    used = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return used
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    for line in fh:
                        if line.startswith("Uid:"):
                            used.update(int(v) for v in line.split()[1:])
                            break
            except (OSError, ValueError):
                continue
    return used


def pick_answer_uid() -> int:
    """A uid (and gid) of this batch's own for its answers, as root: mapped in this user namespace,
    no account's (not in the password database) and no process's. Every answer of a batch ran as
    65534 before: any process of nobody on the machine shared their key quota (one that filled it
    sank the batch) and their process and signal scope; a uid of the batch's own shares nothing.
    65534 where no such uid is mapped (a container mapping a small range)."""
    import pwd
    import random

    uids, gids = _mapped_ids("uid_map"), _mapped_ids("gid_map")
    low, high = ANSWER_UID_RANGE

    def mapped(ranges, n):
        return any(inside <= n < inside + count for inside, _, count in ranges)

    used = None
    rng = random.SystemRandom()
    for _ in range(64):
        uid = rng.randrange(low, high)
        if not (mapped(uids, uid) and mapped(gids, uid)):
            continue
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        if used is None:
            used = _uids_in_use()
        if uid not in used:
            return uid
    return _NOBODY


def _probe_answer_user_namespace(libc, root: bool, uid: int = _NOBODY) -> bool:
    """Whether a child, as the answers' children will be (setuid to nobody as root), can have a
    user namespace of its own (unprivileged user namespaces allowed, no chroot)."""
    pid = os.fork()
    if pid == 0:
        try:
            if root:
                _become_nobody(uid)
            os._exit(0 if _answer_user_namespace(libc) else 1)
        finally:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _maps_nobody(uid: int = _NOBODY) -> bool:
    """Whether uid and gid ``uid`` (65534 by default) exist in this process's user namespace (always
    on a host; in a rootless container, where only the user's own uid is mapped to 0, not)."""
    for name in ("uid_map", "gid_map"):
        try:
            with open(f"/proc/self/{name}") as fh:
                ranges = [tuple(map(int, line.split())) for line in fh if line.strip()]
        except (OSError, ValueError):
            return True  # no /proc to ask: assume a host
        if not any(inside <= uid < inside + count for inside, _, count in ranges):
            return False
    return True


def _drop_capabilities(libc) -> None:
    """No capability left (the child is uid 0 inside its user namespace: capabilities there
    concern only its own namespaces, but it needs none of them)."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()
    if libc.capset(ctypes.byref(Header(_LINUX_CAPABILITY_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _namespace_init(request_r: int, ack_w: int, libc) -> None:
    """pid 1 of the worker's pid namespace: on each request from the worker, kill every other
    process in the namespace (anything an answer started: it outlives no answer), reap, ack."""
    # the worker's handlers (SIGTERM, SIGHUP: SystemExit; SIGINT: KeyboardInterrupt) would let an
    # answer in the namespace end its init with kill(1, SIGTERM); with the default actions the
    # kernel drops every signal sent to a namespace's init from inside it
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # no answer may trace it
    os.closerange(0, min(request_r, ack_w))
    for fd in range(min(request_r, ack_w) + 1, 1 << 10):
        if fd not in (request_r, ack_w):
            try:
                os.close(fd)
            except OSError:
                pass
    # an answer of the same uid (as an ordinary user, without the seccomp allowlist) may change
    # this process's resource limits (prlimit needs no privilege over a process of one's own uid):
    # after each answer they are compared with these, and a changed init is not trusted again
    import resource

    names = sorted(n for n in dir(resource) if n.startswith("RLIMIT_"))
    limits = [resource.getrlimit(getattr(resource, n)) for n in names]
    while True:
        try:
            if not os.read(request_r, 1):
                os._exit(0)
            try:
                os.kill(-1, signal.SIGKILL)  # all but pid 1 in this namespace
            except ProcessLookupError:
                pass
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break
            intact = [resource.getrlimit(getattr(resource, n)) for n in names] == limits
            os.write(ack_w, b"k" if intact else b"x")
        except InterruptedError:
            continue
        except OSError:
            os._exit(1)


def _start_namespace_init(libc):
    """Give the worker its own pid namespace with ``_namespace_init`` as pid 1 (the IPC namespace
    is already the worker's own: ``_enter_namespaces``); returns (request fd, ack fd, its pid), or
    None where the kernel refuses."""
    if libc.unshare(_CLONE_NEWPID) != 0:
        return None
    req_r, req_w = os.pipe()
    ack_r, ack_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _namespace_init(req_r, ack_w, libc)
        finally:
            os._exit(1)
    os.close(req_r)
    os.close(ack_w)
    return req_w, ack_r, pid


def _empty_namespaces(setup: dict) -> bool:
    """After an answer: kill whatever it left in the pid namespace and remove every SysV IPC
    object in the IPC namespace. False if the namespace's init is gone (the worker then ends)."""
    libc = setup["libc"]
    ok = True
    init = setup.get("init")
    if init is not None:
        try:
            os.write(init[0], b"c")
            ok = bool(select.select([init[1]], [], [], 10)[0]) and os.read(init[1], 1) == b"k"
        except OSError:
            ok = False
    if "ipc" in setup["namespaces"]:
        import ctypes

        buf = ctypes.create_string_buffer(512)
        # (control call, INFO command, STAT command)
        for call, info, stat in ((libc.shmctl, 14, 13), (libc.msgctl, 12, 11)):
            highest = call(0, info, buf)
            for index in range(max(highest, -1) + 1):
                ident = call(index, stat, buf)
                if ident >= 0:
                    call(ident, 0, None)  # IPC_RMID
        highest = libc.semctl(0, 0, 19, buf)  # SEM_INFO
        for index in range(max(highest, -1) + 1):
            ident = libc.semctl(index, 0, 18, buf)  # SEM_STAT
            if ident >= 0:
                libc.semctl(ident, 0, 0)
    return ok

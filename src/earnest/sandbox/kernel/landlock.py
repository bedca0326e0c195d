"""Landlock: a domain with every access right handled and no rule (no file access at all; TCP and
signals and abstract sockets out of the domain where the kernel's ABI has them). Standard library only.
"""

from __future__ import annotations

import os

# Landlock (include/uapi/linux/landlock.h); the system call numbers are the same on every
# architecture that has them.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_RESTRICT_SELF = 444, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1


def _landlock_abi(libc) -> int:
    if libc is None:
        return 0
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)
    return abi if abi > 0 else 0


def _landlock_deny_all(libc, abi: int) -> None:
    """Enforce a Landlock domain with every access right handled and no rule: no file access at
    all, no TCP (ABI >= 4), no signals out of the domain or abstract unix sockets (ABI >= 6)."""
    import ctypes

    fs = (1 << 13) - 1  # ABI 1: execute ... make_sym
    if abi >= 2:
        fs |= 1 << 13   # refer
    if abi >= 3:
        fs |= 1 << 14   # truncate
    if abi >= 5:
        fs |= 1 << 15   # ioctl_dev
    fields = [fs]
    if abi >= 4:
        fields.append(0b11)  # bind_tcp, connect_tcp
    if abi >= 6:
        fields.append(0b11)  # scope: abstract unix socket, signal
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    fd = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(fd)

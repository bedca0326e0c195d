"""The sandbox's layers: their names, which are in force and how each is shown, and how to get a
missing one.

:func:`layers_in_force` is the one place that decides the layer list and its display names: the
worker reports its layers with it, and the calling process's ``capabilities()`` and ``describe()``
(the scored tables' ``sandbox`` column) name them with it. Standard library only (the worker uses it).
"""

from __future__ import annotations


#: Every isolation layer, by the name ``Sandbox(disable=...)`` and ``capabilities()`` use.
LAYERS = ("static", "namespaces", "landlock", "seccomp")
#: The layers that block file reads (model code runs only where one of them is in force).
FILE_READ_BLOCKERS = ("seccomp", "landlock", "namespaces", "chroot")


def layers_in_force(caps: dict) -> list[tuple[str, str]]:
    """The layers in force, in order, each as (name, display name): the static policy (where
    ``caps["static_policy"]``), the kernel layers that block file reads (outermost first), then
    no_new_privs, setuid and rlimits. ``caps``: what the worker found (its hello's ``seccomp``,
    ``seccomp_compiler``, ``landlock``, ``namespaces``, ``chroot``, ``no_new_privs``, ``setuid``,
    ``rlimits``), as ``Sandbox.capabilities()`` returns it. The names are ``capabilities()["layers"]``
    (and the worker's ``file_reads_blocked_by``, those of ``FILE_READ_BLOCKERS``); the display
    names make ``Sandbox.describe()``, the scored tables' ``sandbox`` column."""
    namespaces = list(caps.get("namespaces") or [])
    present = [
        ("static", bool(caps.get("static_policy")), "static"),
        # who compiled it, where not libseccomp (the usual case keeps its plain name)
        ("seccomp", bool(caps.get("seccomp")),
         "seccomp-allowlist" + ("(earnest)" if caps.get("seccomp_compiler") == "earnest" else "")),
        ("landlock", (caps.get("landlock") or 0) > 0, f"landlock-abi{caps.get('landlock')}"),
        ("namespaces", "mount" in namespaces, "namespaces(" + ",".join(namespaces) + ")"),
        ("chroot", bool(caps.get("chroot")), "chroot"),
        ("no_new_privs", bool(caps.get("no_new_privs")), "no_new_privs"),
        ("setuid", bool(caps.get("setuid")), "setuid"),
        ("rlimits", bool(caps.get("rlimits")), "rlimits"),
    ]
    return [(name, shown) for name, held, shown in present if held]


#: How to get each layer that blocks file reads where it is missing.
LAYER_HINTS = {
    "seccomp": "a kernel with seccomp filters (CONFIG_SECCOMP_FILTER=y, every distribution kernel since 3.5); "
               "on machines other than x86_64 and aarch64 also libseccomp2 (Debian/Ubuntu: apt-get install "
               "libseccomp2; RHEL: dnf install libseccomp)",
    "landlock": "Linux >= 5.13 with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and 'landlock' in the lsm= "
                "boot parameter)",
    "namespaces": "unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Debian/Ubuntu also "
                  "kernel.unprivileged_userns_clone=1 and, on Ubuntu >= 23.10, "
                  "kernel.apparmor_restrict_unprivileged_userns=0), or run as root",
}


#: What Landlock alone leaves open to an ordinary user's answers (docs/sandbox.md), said where it is
#: the only layer.
LANDLOCK_ALONE_GAPS = (", but with Landlock alone an answer can change the resource limits and priority of this "
                       "user's other processes, this run's included, and pass SysV IPC objects and keys between "
                       "answers; add seccomp to close these")


def missing_layers_warning(missing: list[str], blockers: list[str], uid) -> str:
    """What the sandbox says once where some layers are ``missing`` on the machine and ``blockers``
    (the layers that block file reads) remain, for a worker running as ``uid``."""
    gaps = LANDLOCK_ALONE_GAPS if list(blockers) == ["landlock"] and uid != 0 else ""
    return (f"model code runs without {', '.join(missing)} on this machine; {', '.join(blockers)} still hold "
            f"(see the earnest.sandbox docstring){gaps}. To add them: "
            + "; ".join(f"{n}: {LAYER_HINTS[n]}" for n in missing))

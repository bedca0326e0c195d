"""Run model-written Python: the kernel is the boundary; the static policy only classifies.

Each snippet runs in a fresh fork of a pre-started worker interpreter (``python -I -S``, started
with an empty environment; ``Sandbox(python=...)`` chooses the interpreter). The layers, and what
each stops on its own (tests/test_sandbox_layers.py runs a hostile corpus under each one alone, as
root and as an unprivileged user, with the static policy off):

1. **seccomp allowlist** (no root needed; compiled by libseccomp through ctypes, or where it is
   missing by earnest itself for x86_64 and aarch64, ``_bpf_allowlist``): default deny — every system
   call not in ``ALLOWED_SYSCALLS`` fails with EPERM (memory, process-private futexes, the
   system's and its own clocks, getrandom, signal return, write on the descriptor it holds, exit;
   nothing that takes a path, no other process or its CPU clock, no IPC, no shared futex, no
   socket, no scheduling or priority call, no prctl, no fork or exec); other architectures' calls
   kill. Alone it stops every attack class of the corpus; it is the only layer that stops a futex
   shared between answers running at once (keyed by a page of libc, a file every answer maps, it
   crosses namespaces and Landlock domains).
2. **Namespaces** where the kernel allows unprivileged user namespaces (or as root): the worker
   gets its own user (not as root), mount, network, UTS, pid and IPC namespaces, with an empty
   read-only tmpfs as its root (no path leads anywhere: no file to read, write or stat; no
   network). Snippets run in the worker's pid namespace, under an init of ours
   (``_namespace_init``): a snippet sees no process but itself and that init (no-one to signal,
   trace or re-limit), and after every answer the init kills whatever it left and the worker
   removes every SysV IPC object in the namespace, so nothing it makes reaches the next answer;
   the namespace's own limits allow no SysV object at all (``sysv-ipc-off``, where the kernel lets
   the namespace's owner set them: a segment's memory is counted in no limit of the answer's), and
   an init whose limits an answer changed is replaced before the next answer.
   (Fresh pid and IPC namespaces per answer hold the same but cost three times the throughput:
   65 against 195 answers/s measured in the same run.) Each answer also gets a user namespace of
   its own (``user-per-answer``, where the kernel allows one to nobody; capabilities dropped): the
   user keyring (``keyctl``), which the kernel keeps per user namespace and uid and not per process,
   is then a fresh one that dies with the answer — otherwise a key one answer adds reaches the
   next answer and, as root (every answer is nobody), outlives it on the host. Alone this layer
   stops file, process, IPC (keyrings included), network and survivor attacks.
3. **Landlock** (Linux >= 5.13): no file access at all; TCP (ABI >= 4), signals and abstract
   sockets out of the domain (ABI >= 6). Alone it stops file content reads and writes, TCP; not
   ``stat``, IPC or keys in the user keyring, nor (as an ordinary user) the user's persistent
   keyring (``keyctl get_persistent``: Kerberos tickets may live there), nor calls on other
   processes of the same user (their limits, priority: ``prlimit64``, ``setpriority``; signals
   before ABI 6), which only the allowlist and the namespaces stop: with Landlock alone, as an
   ordinary user, an answer can re-limit the caller and its neighbours (tests/sandbox_attacks.py
   does not try it there).
4. **Always**: no_new_privs; as root setuid/setgid to the batch's own uid (``Sandbox.answer_uid``,
   not 65534, which every process of nobody shares; docs/sandbox.md) (and a chroot into an empty directory
   where there are no namespaces); capabilities dropped inside a user namespace; an empty
   environment; one descriptor (the result pipe, fd 3; reference mode adds fds 1 and 2, /dev/null
   write-only, as the authors' stdout and stderr); rlimits (CPU, address space, no file
   size, no processes, 4 descriptors, no core); parent-death signals and a wall-clock alarm; the
   worker's request and result buffers wiped after each snippet (a snippet that reads its own
   memory finds nothing of another answer's); a session keyring of its own, new and empty, in the
   worker and again in every child (the keys of the caller's login session, which a process holds
   whatever its uid, are out of reach, and no answer shares one with the next).
5. **Static policy** (``check_source``; ``Sandbox(disable=("static",))`` switches it off): it
   decides failure classes, not containment. earnest mode refuses imports outside
   ``ALLOWED_MODULES``, dunders and the like (``forbidden_construct``) and gives copies of the
   allowed modules without private, module-valued or string-to-code attributes; reference mode
   refuses only what the authors' forbidden-string check refuses (``forbidden_string``) and runs
   the rest as they do — their builtins (the real ``print``, to a strict UTF-8 stdout that keeps
   nothing) and the real modules — contained by the layers above.

Where no layer that blocks file reads (seccomp, namespaces, Landlock, root's chroot) is present,
model code does not run: ``SandboxUnavailable`` says which layer is missing and how to get it.
``Sandbox.capabilities()`` and ``describe()`` name the layers in force; scored tables carry them.
The calling process trusts nothing that comes back: a reply is size-limited before it is parsed
and validated field by field; anything malformed becomes that answer's ``unclassified`` result. A
snippet can still forge its own result (by writing to fd 3), never another answer's. An error of
the machine is not a class: a worker that cannot fork a child for an answer, or a child whose
set-up fails before model code runs (it marks its pipe with ``_READY`` once set up), is retried and
then ``SandboxUnavailable``; the worker says so in its own status, never in the answer's report
(``_WorkerFailure``), so no answer can end a batch by forging one; uid 0 without 65534 mapped (a rootless container) is an ordinary user.

Result classes: :data:`ERROR_CLASSES`, named as ``earnest.gsm.failure_classes`` names them (Appendix F of the GSM-Symbolic re-evaluation, plus
``timeout`` and ``resource_limit``; in reference mode these two are reported as ``unclassified``,
the reference's catch-all, since the reference has no limits; reference mode adds
``crashes_reference``, an answer the authors' code would crash on). ``run_many(...,
channels=True)`` (reference mode, the state-channel scanner only) also names the process state each
answer changed (``RunResult.channels``). Model code is compiled with the
running interpreter's own flags (``dont_inherit``): the sandbox's ``__future__`` imports never apply.

The package, one trade a module:

- :mod:`earnest.sandbox.policy`: the static policy (``check_source``) and the result classes;
- :mod:`earnest.sandbox.layers`: the layers' names, the one list of those in force and their
  display names (``layers_in_force``, used by the worker and by ``capabilities()`` / ``describe()``),
  and how to get a missing one;
- :mod:`earnest.sandbox.protocol`: the wire protocol between the caller and its workers, and the
  validation of every reply (``validate_reply``);
- :mod:`earnest.sandbox.pool`: the calling side, ``Sandbox`` (a pool of workers);
- :mod:`earnest.sandbox.worker`: the worker program and the children it forks for the answers
  (``python -I -S .../earnest/sandbox/worker.py --worker TOKEN TMPDIR DISABLED``);
- :mod:`earnest.sandbox.kernel`: kernel confinement, ``seccomp`` (the allowlist and earnest's own
  compiler), ``landlock``, ``namespaces`` (with credentials and keyrings).

The worker imports only the standard library and the modules above that do the same (all but
``pool``); it never runs this ``__init__``.
"""

from earnest.sandbox.kernel.seccomp import ALLOWED_SYSCALLS
from earnest.sandbox.layers import (LANDLOCK_ALONE_GAPS, LAYER_HINTS, LAYERS, layers_in_force,
                                    missing_layers_warning)
from earnest.sandbox.policy import (ALLOWED_MODULES, ATTRIBUTE_ERROR, BRIDGE_ATTRIBUTES, CRASHES_REFERENCE, ERROR_CLASSES,
                                    FORBIDDEN_ATTRIBUTE_PREFIXES, FORBIDDEN_ATTRIBUTES, FORBIDDEN_CONSTRUCT,
                                    FORBIDDEN_NAMES, FORBIDDEN_STRING, MAX_SOURCE_CHARS, NAME_ERROR, NO_FUNCTION,
                                    NONE_RETURNED, NOT_A_NUMBER, REFERENCE_BUILTINS, REFERENCE_ERROR_CLASSES,
                                    REFERENCE_FORBIDDEN, REFERENCE_MODULES, REFERENCE_RANDOM_SEED, RESOURCE_LIMIT,
                                    SAFE_BUILTINS, SYNTAX_ERROR, TIMEOUT, TYPE_VALUE_ERROR, UNCLASSIFIED,
                                    ZERO_DIVISION_ERROR, RunResult, check_source, find_violations)
from earnest.sandbox.pool import Limits, Sandbox, SandboxUnavailable, default_sandbox, resolve_python
from earnest.sandbox.protocol import validate_reply

__all__ = [
    "ALLOWED_MODULES", "ALLOWED_SYSCALLS", "ATTRIBUTE_ERROR", "BRIDGE_ATTRIBUTES", "CRASHES_REFERENCE", "ERROR_CLASSES",
    "FORBIDDEN_ATTRIBUTES", "FORBIDDEN_ATTRIBUTE_PREFIXES", "FORBIDDEN_CONSTRUCT", "FORBIDDEN_NAMES",
    "FORBIDDEN_STRING", "LANDLOCK_ALONE_GAPS", "LAYERS", "LAYER_HINTS", "MAX_SOURCE_CHARS", "NAME_ERROR",
    "NONE_RETURNED", "NOT_A_NUMBER", "NO_FUNCTION", "REFERENCE_BUILTINS", "REFERENCE_ERROR_CLASSES",
    "REFERENCE_FORBIDDEN", "REFERENCE_MODULES", "REFERENCE_RANDOM_SEED", "RESOURCE_LIMIT", "SAFE_BUILTINS",
    "SYNTAX_ERROR", "TIMEOUT", "TYPE_VALUE_ERROR", "UNCLASSIFIED", "ZERO_DIVISION_ERROR", "Limits", "RunResult",
    "Sandbox", "SandboxUnavailable", "check_source", "default_sandbox", "find_violations", "layers_in_force",
    "missing_layers_warning", "resolve_python", "validate_reply",
]

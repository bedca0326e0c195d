"""The worker: the program each pre-started interpreter runs, and what runs in the children it forks
for the answers (``python -I -S .../earnest/sandbox/worker.py --worker TOKEN TMPDIR DISABLED ANSWER_UID``).

It imports only the standard library and the sandbox's own modules that do the same
(:mod:`.policy`, :mod:`.protocol`, :mod:`.layers`, :mod:`.kernel`): started as a file, with ``-I -S``
and an empty environment, it reaches them through stand-ins for the ``earnest`` and
``earnest.sandbox`` packages (below), never through their ``__init__``.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import signal
import subprocess  # noqa: F401 - loaded as before the split (answers with the real builtins see the same modules)
import sys
import time
from fractions import Fraction

if __name__ == "__main__":
    # started as a file (``python -I -S worker.py``): no entry of sys.path leads to earnest, and the
    # packages' own __init__ are not for the worker; stand-ins whose __path__ finds the sandbox's modules
    import types

    _here = os.path.dirname(os.path.abspath(__file__))
    for _name, _path in (("earnest", os.path.dirname(_here)), ("earnest.sandbox", _here)):
        if _name not in sys.modules:
            _package = types.ModuleType(_name)
            _package.__path__ = [_path]
            sys.modules[_name] = _package

from earnest.sandbox.kernel.landlock import _landlock_abi, _landlock_deny_all  # noqa: E402
from earnest.sandbox.kernel.namespaces import (_PR_SET_PDEATHSIG, _answer_user_namespace, _become_nobody,  # noqa: E402
                                               _drop_capabilities, _empty_namespaces, _enter_namespaces,
                                               _maps_nobody, _new_session_keyring, _probe_answer_user_namespace,
                                               _start_namespace_init)
from earnest.sandbox.kernel.seccomp import _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _seccomp_filter  # noqa: E402
from earnest.sandbox.layers import FILE_READ_BLOCKERS, layers_in_force  # noqa: E402
from earnest.sandbox.policy import (_EARNEST, _REFERENCE, ALLOWED_MODULES, BRIDGE_ATTRIBUTES,  # noqa: E402
                                    REFERENCE_BUILTINS, REFERENCE_MODULES, REFERENCE_RANDOM_SEED, SAFE_BUILTINS,
                                    _describe, _short)
from earnest.sandbox.protocol import (_MAX_MESSAGE, _MAX_RESULT, _READY, _read_into,  # noqa: E402
                                      _receive_pair_head, _send, _send_pair, _temp_prefix)


_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36

# Values whose integer part needs more bits than a float can hold are reported as +-inf.
_MAX_EXACT_BITS = 1024

# modules the allowed modules import lazily from C (preloaded by the worker)
_INTERNAL_IMPORTS = ("_strptime", "time")


class _JobLimit(OSError):
    """A limit of the sandbox's above the job's own hard limit: no answer can run (set-up fails)."""


class _OutputLimit(BaseException):
    """Raised by the sandbox print once the output limit is passed (not an Exception on purpose)."""


def _reference_stream(fd: int, name: str, errors: str, line_buffering: bool):
    """A standard stream as Python builds it at start-up (``create_stdio``): a text stream over a
    buffered ``FileIO`` of ``fd`` (not closed with it), its ``name`` "<stdout>" or "<stderr>", mode
    "w", encoded as a UTF-8 locale's. In reference mode fds 1 and 2 are the worker's /dev/null, so
    what the answer writes there goes nowhere: it is neither kept nor shown."""
    raw = io.FileIO(fd, "w", closefd=False)
    raw.name = name
    stream = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors=errors,
                              line_buffering=line_buffering)
    stream.mode = "w"
    return stream


def _reference_stdio() -> None:
    """sys.stdout and sys.stderr as the authors' run has them, over fds 1 and 2 (/dev/null here):
    stdout's errors ``strict`` (a UTF-8 locale: a lone surrogate raises UnicodeEncodeError when
    printed), stderr's ``backslashreplace`` and line-buffered; ``fileno()`` 1 and 2, ``name``
    "<stdout>" and "<stderr>", reached the same way through ``typing.sys`` or ``random._os.sys``."""
    sys.stdout = sys.__stdout__ = _reference_stream(1, "<stdout>", "strict", False)
    sys.stderr = sys.__stderr__ = _reference_stream(2, "<stderr>", "backslashreplace", True)


def _crashes_reference(what: str) -> dict:
    return {"error": "crashes_reference", "detail": what}


def _reference_crash(exc: BaseException | None = None, value=None) -> dict | None:
    """The authors' code would not score this outcome (FIDELITY.md section 16), or None.

    ``exc``: what ran the answer raised. SystemExit ends their run (their ``except Exception`` lets
    it through); every other exception is formatted by their handler (``f"...: {exc}"``), and when
    that formatting raises (a KeyError whose key is an int of more than 4300 digits: ValueError) the
    error escapes their extractor. ``value``: what solution() returned. Not a number: their message
    formats it (``f"({res}, ...)"``), outside their ``try``. An int too large for a float: their
    ``abs(predicted - gold)`` raises OverflowError."""
    if exc is not None:
        if isinstance(exc, SystemExit):
            return _crashes_reference("SystemExit: the authors' run ends here (their except Exception "
                                      "does not catch it)")
        try:
            f"{exc}"
        except BaseException as inner:  # noqa: BLE001 - whatever formatting raises escapes theirs
            return _crashes_reference(f"formatting the {_short(type(exc).__name__, 60)} raised "
                                      f"{_short(type(inner).__name__, 60)}: their handler formats it, outside "
                                      "their try (the evaluation set is dropped)")
        return None
    if value is None or isinstance(value, float):
        return None
    if isinstance(value, int):
        try:
            int.__float__(_plain_int(value))
        except OverflowError:
            return _crashes_reference(f"an integer of {_plain_int(value).bit_length()} bits: their correctness "
                                      "check abs(predicted - gold) raises OverflowError (the evaluation set is "
                                      "dropped)")
        return None
    try:
        f"{value}"
    except BaseException as inner:  # noqa: BLE001
        return _crashes_reference(f"not a number, and formatting it raised {_short(type(inner).__name__, 60)}: "
                                  "their message formats it, outside their try (the evaluation set is dropped)")
    return None


def _module_copy(module):
    """A copy of ``module`` exposing only its public, non-module, non-eval attributes (earnest mode;
    reference mode gives model code the real modules, as the authors' run does)."""
    import types

    copy = types.ModuleType(module.__name__)
    for name in dir(module):
        if name.startswith("_") or name in BRIDGE_ATTRIBUTES:
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            continue
        setattr(copy, name, value)
    return copy
def _plain_int(value) -> int:
    """An int subclass's value as a plain int, without calling anything it overrides."""
    return int.__add__(value, 0) if type(value) is not int else value


def _encode_int(value: int) -> dict:
    if value.bit_length() <= _MAX_EXACT_BITS:
        try:
            as_float = float.__repr__(int.__float__(value))
        except OverflowError:
            as_float = "inf" if value > 0 else "-inf"
        return {"error": "", "value": as_float, "exact": int.__repr__(value)}
    return {"error": "", "value": "inf" if value > 0 else "-inf",
            "detail": f"integer of {value.bit_length()} bits"}


def _encode_value(value, mode: str = _EARNEST) -> dict:
    """What solution() returned, as the worker reports it (numbers as exact strings where sane).

    Subclasses are read through the base type's own methods, so an overridden ``__repr__`` or
    ``__float__`` cannot change what is reported.
    """
    import decimal  # preloaded by the worker

    if value is None:
        return {"error": "none_returned", "detail": "solution() returned None"}
    if mode == _REFERENCE:
        # the reference accepts int and float instances (bool too: True is 1) and nothing else
        if isinstance(value, float):
            return {"error": "", "value": float.__repr__(value)}
        if isinstance(value, int):
            return _encode_int(_plain_int(value))
        return {"error": "not_a_number", "detail": f"returned a {_short(type(value).__name__, 60)}"}
    if isinstance(value, bool):
        return {"error": "not_a_number", "detail": "returned a bool"}
    if isinstance(value, int):
        return _encode_int(_plain_int(value))
    if isinstance(value, float):
        return {"error": "", "value": float.__repr__(value)}
    if isinstance(value, Fraction):
        num, den = Fraction.numerator.__get__(value), Fraction.denominator.__get__(value)
        if type(num) is not int or type(den) is not int or den <= 0:
            return {"error": "not_a_number", "detail": "returned a malformed Fraction"}
        value = Fraction(num, den)
        try:
            as_float = float.__repr__(float(value))
        except OverflowError:
            as_float = "inf" if value > 0 else "-inf"
        if max(num.bit_length(), den.bit_length()) <= _MAX_EXACT_BITS:
            return {"error": "", "value": as_float, "exact": f"{value.numerator}/{value.denominator}"}
        return {"error": "", "value": as_float}
    if isinstance(value, decimal.Decimal):
        value = decimal.Decimal(decimal.Decimal.__str__(value))
        as_float = float.__repr__(float(value))  # Decimal -> float never raises (inf / nan / 0.0)
        if value.is_finite() and abs(value.adjusted()) <= 300 and len(value.as_tuple().digits) <= 400:
            return {"error": "", "value": as_float, "exact": str(Fraction(value))}
        return {"error": "", "value": as_float}
    kind = type(value).__name__
    if isinstance(value, complex):
        return {"error": "not_a_number", "detail": "returned a complex number"}
    return {"error": "not_a_number", "detail": f"returned a {_short(str(kind), 60)}"}


def _classify(exc: BaseException, mode: str = _EARNEST) -> str:
    if mode == _REFERENCE:
        # the reference's except clauses, in its order; everything else is its catch-all
        for kind, name in ((SyntaxError, "syntax_error"), (NameError, "name_error"),
                           (AttributeError, "attribute_error"),
                           (ZeroDivisionError, "zero_division_error"),
                           ((TypeError, ValueError), "type_value_error")):
            if isinstance(exc, kind):
                return name
        return "resource_limit" if isinstance(exc, _OutputLimit) else "unclassified"
    if isinstance(exc, (_OutputLimit, MemoryError, RecursionError)):
        return "resource_limit"
    if isinstance(exc, SyntaxError):
        return "syntax_error"
    if isinstance(exc, NameError):
        return "name_error"
    if isinstance(exc, ZeroDivisionError):
        return "zero_division_error"
    if isinstance(exc, AttributeError):
        return "attribute_error"
    if isinstance(exc, (TypeError, ValueError)):
        return "type_value_error"
    if isinstance(exc, ImportError):
        return "forbidden_construct"
    return "unclassified"


# ------------------------------------------------------------------ state a run leaves behind
# (the channel scanner: what an answer changes that a later answer of the authors' single process
# would see; FIDELITY.md section 15). Opt-in, reference mode only: scoring never takes a snapshot.

#: getters that count the snapshot's own work (no state an answer sets) or would copy the whole heap
_SNAPSHOT_SKIP = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.get_count",
                            "gc.get_stats", "sys.getallocatedblocks", "sys.getunicodeinternedsize",
                            "sys.gettotalrefcount"})
_C_CALLABLE = ("wrapper_descriptor", "method-wrapper", "method_descriptor", "builtin_function_or_method")
_PLAIN = (int, bool, float, complex, str, bytes, type(None), type(Ellipsis))


def _fingerprint(value, depth: int = 2):
    """A comparable summary of ``value`` that runs no Python code of the answer's: numbers, strings
    and bytes by value (hashed), lists, tuples, dicts and sets by their items (to ``depth``),
    instances by their ``__dict__``, C objects by their C ``repr`` (decimal's Context: precision,
    rounding, flags, traps ...), anything else by identity."""
    import types

    kind = type(value)
    if kind in _PLAIN:
        return (kind.__name__, hash(value))
    if depth <= 0:
        return ("id", id(value))
    if kind in (list, tuple):
        return (kind.__name__, len(value), tuple(_fingerprint(x, depth - 1) for x in value[:512]))
    if kind is dict:
        return ("dict", frozenset((_fingerprint(k, 0), _fingerprint(v, depth - 1))
                                  for k, v in list(dict.items(value))[:4096]))
    if kind in (set, frozenset):
        return (kind.__name__, frozenset(_fingerprint(x, 0) for x in list(value)[:4096]))
    if isinstance(value, types.ModuleType):   # a module has an entry of its own
        return ("module", id(value))
    if isinstance(value, type):
        return ("class", id(value), tuple(sorted((str(k), id(v)) for k, v in
                                                 list(type.__dict__["__dict__"].__get__(value).items()))))
    try:
        inner = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001 - no instance dict
        inner = None
    if type(inner) is dict:
        return ("object", id(value), _fingerprint(inner, depth - 1))
    if type(getattr(kind, "__repr__", None)).__name__ in _C_CALLABLE and kind.__repr__ is not object.__repr__:
        try:
            text = kind.__repr__(value)
        except Exception:  # noqa: BLE001
            text = None
        if type(text) is str:
            return ("repr", hash(text))
    return ("id", id(value))


def _state_snapshot(getters: dict | None = None, getters_only: bool = False) -> tuple[dict, dict]:
    """Every module of ``sys.modules``: each attribute's fingerprint, each class's own attributes,
    and what every public zero-argument getter of theirs (a C function or a bound method, named
    ``get...`` or ``is...``) returns (``sys.getrecursionlimit()``,
    ``decimal.getcontext()``, ``random.getstate()``, ``abc.get_cache_token()`` ...). Generic: no
    list of the channels; the getters are collected on the first snapshot (``getters`` None) and the
    same objects are called on the later ones, so nothing an answer put in their place runs."""
    import types

    state: dict = {}
    first = getters is None
    if first:
        getters = {}
    modules = list(dict.items(sys.__dict__["modules"])) if type(sys.__dict__.get("modules")) is dict else []
    state["sys.modules"] = frozenset((k, id(v)) for k, v in modules)
    for mname, module in ([] if getters_only else modules):
        if mname in ("__main__", "earnest") or mname.startswith("earnest."):   # the sandbox's own, not the authors'
            continue
        if type(module) is not types.ModuleType:
            state[f"sys.modules[{mname!r}]"] = ("not a module", id(module))
            continue
        namespace = types.ModuleType.__dict__["__dict__"].__get__(module)
        for name, value in list(dict.items(namespace)):
            if name == "__builtins__" or type(name) is not str:
                continue
            key = f"{mname}.{name}"
            state[key] = _fingerprint(value)
            if first and not name.startswith("_") and name.startswith(("get", "is")) \
                    and key not in _SNAPSHOT_SKIP and type(value).__name__ in ("builtin_function_or_method", "method"):
                getters[key] = value
    for key, getter in list(getters.items()):
        try:
            state[key + "()"] = _fingerprint(getter())
        except TypeError:   # it needs arguments: not a getter of state
            if first:
                del getters[key]
        except BaseException as exc:  # noqa: BLE001 - refused (EPERM): its class is the state
            state[key + "()"] = ("raises", type(exc).__name__)
    return state, getters


def _state_changes(before: dict, after: dict, noise: frozenset) -> list[str]:
    """The names whose state differs (a name gone or new counts), less ``noise``."""
    names = []
    for key in sorted(k for k in set(before) | set(after) if k not in noise and before.get(k) != after.get(k)):
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and old[0] == new[0] == "class" and old[1] == new[1]:
            # the same class, its own attributes changed: name them
            was, now = dict(old[2]), dict(new[2])
            names.extend(f"{key}.{a}" for a in sorted(set(was) | set(now)) if was.get(a) != now.get(a))
        else:
            names.append(key)
    return [_short(n, 120) for n in names[:64]]


def _one_argument_type(obj):
    """``type`` for snippets: the type of one object, never a new class."""
    return type(obj)


def _execute(source: str, limits: dict, modules: dict, full_builtins: bool = False,
             mode: str = _EARNEST, channels: bool = False) -> dict:
    """Run the snippet in this (already isolated) process and describe the outcome; with
    ``channels`` (reference mode) also the state it changed (``"channels"``: names of module
    attributes, classes' attributes and getters' results that differ after it ran)."""
    outcome = _execute_once(source, limits, modules, full_builtins, mode, channels)
    if channels and mode == _REFERENCE and _SCAN:
        before, getters, noise = _SCAN
        try:
            after, _ = _state_snapshot(getters)
            outcome["channels"] = _state_changes(before, after, noise)
        except BaseException as exc:  # noqa: BLE001 - e.g. a recursion limit the answer set too low
            outcome["channels"] = [f"(the state could not be read after the answer: {_describe(exc)})"]
        if _REFUSED:
            # in the authors' process that call may have changed its state
            outcome["channels"].append(REFUSED_CALL)
    return outcome


_SCAN: list = []
_REFUSED: list = []
#: the channel scanner's name for an answer that ended in an OSError: a system call the sandbox refused
REFUSED_CALL = "(a system call the sandbox refused)"


def _execute_once(source: str, limits: dict, modules: dict, full_builtins: bool, mode: str, channels: bool) -> dict:
    import builtins

    written = [0]
    # earnest mode: output goes nowhere and counts against a limit. Reference mode: the builtin
    # print itself, writing to a stdout of the authors' kind that keeps nothing (_reference_stdio):
    # it raises where theirs does (file=5, sep=5, end=0, a lone surrogate) and has no limit.
    cap = limits["out"] if mode != _REFERENCE else float("inf")

    def sandbox_print(*args, sep=" ", end="\n", file=None, flush=False):
        if written[0] > cap:
            raise _OutputLimit()
        written[0] += sum(len(str(a)) for a in args) + len(str(end)) + len(str(sep)) * max(0, len(args) - 1)
        if written[0] > cap:
            raise _OutputLimit()

    def sandbox_import(name, globals=None, locals=None, fromlist=(), level=0):
        if not level and name in _INTERNAL_IMPORTS and name in sys.modules:
            # imported by an allowed module's C code on first use (datetime.strptime); the static
            # policy refuses the name in model code
            return sys.modules[name]
        if level or name not in ALLOWED_MODULES or name not in modules:
            raise ImportError(f"import of {name!r} is not allowed")
        return modules[name]

    try:
        if mode == _REFERENCE:
            # the authors' namespace: their 28 builtins (print the real one) and the real modules
            # (``modules`` holds them in reference mode: every attribute, private and module-valued
            # ones included, as in their process; the kernel layers contain what they reach)
            # (sys.stdout and sys.stderr were set up by _child: _reference_stdio)
            # (random reseeds itself from the system in every fork: set the authors' starting state)
            modules["random"].seed(REFERENCE_RANDOM_SEED)
            if channels:
                # the getters called twice with nothing between: what differs there (a load average,
                # a counter) is noise, not the answer's (module attributes do not change by themselves)
                before, getters = _state_snapshot()
                again, _ = _state_snapshot(getters, getters_only=True)
                noise = frozenset(k for k in again if again[k] != before.get(k))
                _SCAN[:] = [before, getters, noise]
            safe = {name: getattr(builtins, name) for name in REFERENCE_BUILTINS}
            scope = {"__builtins__": safe}
            scope.update((name, modules[name]) for name in REFERENCE_MODULES)
            local: dict = {}
            # compiled with this interpreter's own flags only (not this file's __future__ imports),
            # as the reference's exec(str) compiles it
            exec(compile(source, "<solution>", "exec", dont_inherit=True), scope, local)
            value = local.get("ret")
            crash = _reference_crash(value=value)
            if crash is not None:
                return crash
        else:
            if full_builtins:  # tests of the OS-level limits only; never set for model output
                namespace = {"__builtins__": builtins, "__name__": "__sandbox__"}
            else:
                safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
                safe.update(print=sandbox_print, __import__=sandbox_import,
                            __build_class__=builtins.__build_class__, type=_one_argument_type)
                namespace = {"__builtins__": safe, "__name__": "__sandbox__"}
            try:
                code = compile(source, "<solution>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
                return {"error": "syntax_error", "detail": _describe(exc)}
            exec(code, namespace)
            solution = namespace.get("solution")
            if not callable(solution):
                return {"error": "no_function", "detail": "no callable solution() after running the code"}
            value = solution()
        if written[0] > cap:
            return {"error": "resource_limit", "detail": "output limit exceeded"}
        return _encode_value(value, mode)
    except BaseException as exc:  # noqa: BLE001 - every failure is a result here
        if channels and isinstance(exc, OSError):
            # a system call failed: the kernel layers refuse every call that changes the process
            # (chdir, umask, a signal handler, a thread; EPERM, or errno 0 where libc's wrapper cannot
            # fail), which the authors' process makes
            _REFUSED.append(exc.errno)
        if written[0] > cap:
            return {"error": "resource_limit", "detail": "output limit exceeded"}
        if mode == _REFERENCE:
            crash = _reference_crash(exc)
            if crash is not None:
                return crash
        detail = "output limit exceeded" if isinstance(exc, _OutputLimit) else _describe(exc)
        return {"error": _classify(exc, mode), "detail": detail}


def _child_outer(payload: memoryview, result_w: int, setup: dict, worker_pid: int) -> None:
    """The forked child: its own session (the worker kills the group), then the snippet
    (``_child``, which keeps no descriptor but the result pipe). In the worker's pid namespace it
    is pid 2 or more (the namespace's pid 1 ignores its own SIGXCPU and SIGALRM;
    ``_namespace_init`` is pid 1)."""
    libc = setup["libc"]
    try:
        os.setsid()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # the worker died before prctl took effect? (in the pid namespace the worker, outside it,
        # is parent 0; an orphan's parent is the namespace's init, 1)
        if os.getppid() != (0 if setup["init"] is not None else worker_pid):
            os._exit(1)
        _child(payload, result_w, setup)
    except BaseException as exc:  # noqa: BLE001
        try:
            os.write(result_w, json.dumps({"error": "unclassified",
                                           "detail": "sandbox setup failed: " + _describe(exc)}).encode())
        except BaseException:  # noqa: BLE001
            pass
    os._exit(70)


def _child(payload: memoryview, result_fd: int, setup: dict) -> None:
    """Body of the child that runs the snippet: keep only the result pipe (as fd 3), drop
    privileges, limit, lock down, run, report on fd 3, exit."""
    import resource

    libc, root = setup["libc"], setup["root"]
    try:
        request = json.loads(bytes(payload))
        source, limits = request["source"], request["limits"]
        mode = _REFERENCE if request.get("mode") == _REFERENCE else _EARNEST
        full_builtins = bool(request.get("full_builtins"))
        channels = request.get("channels") is True
    except BaseException:  # noqa: BLE001
        source = None
    try:
        reference_stdio = source is not None and mode == _REFERENCE and setup.get("devnull", -1) >= 0
        if reference_stdio:
            # the authors' stdout and stderr are open: fds 1 and 2 become /dev/null, opened write-only
            # by the worker at its start (no read, no mapping of it); writes go nowhere, with no
            # limit but the time limit's
            os.dup2(setup["devnull"], 1)
            os.dup2(setup["devnull"], 2)
        os.dup2(result_fd, 3)
        if reference_stdio:
            os.close(0)
            # the streams are built now, while fstat still works (not after the seccomp filter)
            _reference_stdio()
        else:
            os.closerange(0, 3)
        os.closerange(4, 1 << 16)
        if source is None:
            raise ValueError("malformed request")
        if root:
            if "chroot" in setup["layers"]:
                os.chroot(setup["base"])
                os.chdir("/")
            _become_nobody(setup["answer_uid"])
        # a session keyring of its own, empty (not the worker's, shared by its answers); where the
        # worker could join one, so must the child: a failure (EDQUOT while the keys of answers just
        # ended wait for the kernel's collection) fails the set-up, which the caller retries, and is
        # never ignored (the child would otherwise keep the worker's keyring, shared by its answers)
        if setup["session_keyring"] and not _new_session_keyring(libc):
            raise OSError("joining a session keyring of its own failed (the key quota of uid "
                          f"{os.getuid()}, /proc/sys/kernel/keys/maxkeys, exhausted?)")
        if "user-per-answer" in setup["namespaces"]:
            if not _answer_user_namespace(libc):
                raise OSError("unshare of the answer's user namespace failed")
            _drop_capabilities(libc)
        elif "user" in setup["namespaces"]:
            _drop_capabilities(libc)
        if libc is not None:
            # after setuid: a change of credentials clears the parent-death signal
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError("PR_SET_NO_NEW_PRIVS failed")
        os.environ.clear()  # and the C environment with it (unsetenv)
        # a wall-clock end of its own, in case the worker that would kill it is gone
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, float(limits["wall"]) + 2.0)
        cpu = max(1, int(limits["cpu"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for name, value, soft in (("RLIMIT_CPU", cpu + 1, cpu), ("RLIMIT_AS", limits["mem"], limits["mem"])):
            hard = resource.getrlimit(getattr(resource, name))[1]
            if hard != resource.RLIM_INFINITY and value > hard:  # a job's limit (ulimit -v, h_vmem)
                raise _JobLimit(f"{name} of {value} is above this job's hard limit of {hard}: lower the "
                              "sandbox's limit (cpu_seconds, memory_bytes) or raise the job's")
            resource.setrlimit(getattr(resource, name), (soft, value))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (4, 4))
        for name in ("RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE"):
            if hasattr(resource, name):
                resource.setrlimit(getattr(resource, name), (0, 0))
        if setup["landlock"]:
            _landlock_deny_all(libc, setup["landlock"])
        if setup["seccomp"] is not None:
            import ctypes  # preloaded by the worker

            if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(setup["seccomp"][0]), 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")
        os.write(3, _READY)  # set up: what follows on the pipe is the answer's
        modules = setup["reference_modules"] if mode == _REFERENCE else setup["modules"]
        outcome = _execute(source, limits, modules, full_builtins, mode, channels)
    except BaseException as exc:  # noqa: BLE001
        outcome = {"error": "unclassified", "detail": "sandbox setup failed: " + _describe(exc)}
        if isinstance(exc, _JobLimit):   # the configuration's, for every answer: the caller stops the run
            outcome["setup"] = "job_limit"
    try:
        data = json.dumps(outcome).encode()
    except BaseException:  # noqa: BLE001
        data = json.dumps({"error": "unclassified", "detail": "unreportable result"}).encode()
    try:
        while data:
            data = data[os.write(3, data):]
    finally:
        os._exit(0)


def _ended_by(pid: int, deadline: float) -> bool:
    """Whether child pid has ended by the deadline (left unreaped: its process group id stays
    its own until the worker has killed the group). Waits on a pidfd where the kernel has them
    (Linux >= 5.3), else polls."""
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    if os.waitid(os.P_PID, pid, flags) is not None:
        return True
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        try:
            left = deadline - time.monotonic()
            return left > 0 and bool(select.select([fd], [], [], left)[0])
        finally:
            os.close(fd)
    pause = 0.0002
    while time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
        if os.waitid(os.P_PID, pid, flags) is not None:
            return True
    return False


def _run_child(payload: memoryview, wall: float, setup: dict, result_buf: bytearray) -> tuple[dict, int]:
    """Fork the snippet's children, collect its report within ``wall`` seconds (into result_buf),
    kill its whole group in any case. Returns (status, length of the report)."""
    try:
        result_r, result_w = os.pipe()
    except OSError as exc:
        return {"fork_error": _describe(exc)}, 0
    worker_pid = os.getpid()
    deadline = time.monotonic() + wall
    try:
        pid = os.fork()
    except OSError as exc:  # no process for the answer (RLIMIT_NPROC, memory): the caller decides
        os.close(result_r)
        os.close(result_w)
        return {"fork_error": _describe(exc)}, 0
    if pid == 0:
        os.close(result_r)
        _child_outer(payload, result_w, setup, worker_pid)
        os._exit(1)  # not reached
    os.close(result_w)
    try:
        got, eof = _read_into(result_r, result_buf, deadline)
    finally:
        os.close(result_r)
    # the report is in (or the pipe closed): the children end by themselves, unless one closed
    # its pipe and kept running
    ended = eof and _ended_by(pid, deadline)
    timed_out = not ended and not (got and eof) and got < len(result_buf)
    # the first child is not reaped yet, so its process group id cannot have been reused
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, st = os.waitpid(pid, 0)
    while True:  # reap a snippet child that outlived its parent (the worker is their subreaper)
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    status = {"timed_out": timed_out, "oversized": got >= len(result_buf)}
    if not result_buf[:1] == _READY:
        status["setup_failed"] = True  # ended, or failed, before model code ran
    code = os.waitstatus_to_exitcode(st)
    if code >= 128:
        status["signal"] = code - 128  # the snippet's child died of this signal
    elif code < 0:
        status["signal"] = -code  # the first child died of this signal (the snippet's, or the worker's kill)
    return status, got


def _remove_stale_dirs(tmp: str) -> None:
    """Remove temporary directories of this host's workers that no longer exist (killed before
    they could clean up); other hosts' and live processes' directories are left alone."""
    import shutil

    pattern = re.compile(re.escape(_temp_prefix()) + r"(\d+)-")
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m is None:
            continue
        path = os.path.join(tmp, name)
        try:
            if os.lstat(path).st_uid != os.geteuid():
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


def _worker_main(tmp: str, disabled: frozenset, answer_uid: int = 65534) -> None:
    import fcntl  # noqa: F401 - preloaded for the children
    import importlib
    import random  # noqa: F401 - preloaded for the children (reference mode)
    import resource  # noqa: F401 - preloaded for the children
    import shutil
    import tempfile

    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a vanished caller is an error, not death

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    libc = None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
    except Exception:
        libc = None
    modules = {}
    for name in sorted(ALLOWED_MODULES | set(REFERENCE_MODULES)):
        modules[name] = _module_copy(importlib.import_module(name))
    # reference mode: the modules themselves, as the authors' namespace holds them (each child is a
    # fork: whatever an answer changes in them dies with it)
    reference_modules = {name: importlib.import_module(name) for name in REFERENCE_MODULES}
    for lazy in _INTERNAL_IMPORTS + ("encodings.idna",):  # imported on first use by datetime / str
        try:
            importlib.import_module(lazy)
        except ImportError:
            pass
    # (random reseeds itself in every fork of this process; reference mode's answers, the only ones
    # that reach it, set REFERENCE_RANDOM_SEED before model code runs)
    # root that can become nobody: root in a rootless container (podman, ``unshare -r``,
    # Apptainer --fakeroot) has uid 0 but no 65534 to switch to, and is an ordinary user here
    root = os.geteuid() == 0 and _maps_nobody(answer_uid)
    uid = os.getuid()
    _remove_stale_dirs(tmp)
    base = ""  # the empty directory a root worker without namespaces chroots into
    hello_sent, proto_out = False, None
    namespaces: list[str] = []
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        # reference mode's fds 1 and 2 (its answers' stdout and stderr, section 14 of FIDELITY.md)
        devnull_w = os.open(os.devnull, os.O_WRONLY)
        proto_in, proto_out = 0, os.dup(1)
        os.dup2(devnull, 1)  # nothing printed by mistake can corrupt the protocol stream
        os.close(devnull)
        if libc is not None:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        # none of the caller's session keys in the worker (each child joins a fresh one again)
        keyrings = _new_session_keyring(libc)
        # the filter and the Landlock probe need files (libseccomp, /proc): before the empty root
        landlock = _landlock_abi(libc) if "landlock" not in disabled else 0
        seccomp = None
        if "seccomp" not in disabled and libc is not None:
            try:
                seccomp = _seccomp_filter(use_libseccomp="libseccomp" not in disabled)
            except OSError:
                seccomp = None
        ns_error = ""
        init = None
        if "namespaces" not in disabled and libc is not None:
            try:
                # the empty root is mounted over the temporary directory in the worker's own mount
                # namespace: nothing is created on the host's file system, nothing is left there
                namespaces = _enter_namespaces(libc, root, tmp)
                if not namespaces:
                    ns_error = "unshare refused (unprivileged user namespaces not allowed?)"
            except OSError as exc:
                ns_error = _describe(exc)
                namespaces = []
            if namespaces and _probe_answer_user_namespace(libc, root, answer_uid):
                namespaces.append("user-per-answer")
            init = _start_namespace_init(libc) if namespaces else None
            if init is not None:
                namespaces.append("pid")
        chroot = root and "mount" not in namespaces and "namespaces" not in disabled
        if chroot:
            base = tempfile.mkdtemp(prefix=f"{_temp_prefix()}{os.getpid()}-", dir=tmp)
            os.chmod(base, 0o711)
        hello = {"pid": os.getpid(), "base": base, "uid": uid,
                 "python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable,
                 "namespaces": namespaces, "namespace_error": ns_error, "chroot": chroot,
                 "setuid": root, "no_new_privs": libc is not None, "landlock": landlock,
                 "seccomp": "allowlist" if seccomp is not None else "",
                 "seccomp_compiler": seccomp[2] if seccomp is not None else "", "rlimits": True,
                 "session_keyring": "own" if keyrings else "",
                 "init_pid": init[2] if init is not None else 0,
                 "answer_uid": answer_uid if root else uid}
        layers = [name for name, _ in layers_in_force(hello)]  # the one list the caller reports too
        blockers = [name for name in layers if name in FILE_READ_BLOCKERS]
        hello.update(file_reads_blocked_by=blockers, layers=layers)
        setup = {"libc": libc, "root": root, "base": base, "modules": modules, "devnull": devnull_w,
                 "reference_modules": reference_modules, "namespaces": namespaces,
                 "init": init, "landlock": landlock, "seccomp": seccomp, "session_keyring": keyrings,
                 "layers": layers, "answer_uid": answer_uid}
        hello_sent = True
        _send(proto_out, hello)
        request_buf = bytearray(_MAX_MESSAGE)
        result_buf = bytearray(_MAX_RESULT + 2)  # _READY, a report, one byte to see an oversized one
        while True:
            head = _receive_pair_head(proto_in)
            if head is None:
                break
            control, size = head
            wall = control.get("wall")
            if not isinstance(wall, (int, float)) or not 0 < wall < 1e6 or size > len(request_buf):
                break
            view = memoryview(request_buf)[:size]
            if _read_into(proto_in, view, None)[0] < size:
                break
            try:
                status, n = _run_child(view, float(wall), setup, result_buf)
            finally:
                view[:] = bytes(size)  # nothing of this request stays for the next child to find
            # nothing the answer started or made survives it; if that cannot be ensured, this
            # worker ends after its reply and the caller starts a fresh one for the next answer
            intact = _empty_namespaces(setup)
            if not intact:
                status["restart"] = True
            start = 1 if result_buf[:1] == _READY else 0
            try:
                _send_pair(proto_out, status, memoryview(result_buf)[start:n])
            finally:
                result_buf[:n] = bytes(n)
            if not intact:
                break
    except (OSError, SystemExit) as exc:  # the caller went away (EPIPE) or asked us to stop
        if not hello_sent and isinstance(exc, OSError) and proto_out is not None:
            try:  # the set-up failed (a fork for the namespace init, say): say why
                _send(proto_out, {"start_error": _describe(exc)})
            except OSError:
                pass
    finally:
        if base:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) >= 5 and sys.argv[1] == "--worker":
    _worker_main(sys.argv[3], frozenset(filter(None, sys.argv[4].split(","))),
                 int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5].isdigit() else 65534)

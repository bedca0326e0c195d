"""Kernel confinement of the worker and its children: the seccomp allowlist and its compiler
(:mod:`.seccomp`), Landlock (:mod:`.landlock`), namespaces, credentials and keyrings
(:mod:`.namespaces`). Standard library only: these run in the worker (``earnest.sandbox.worker``).
"""

"""The build process's first lines: lower its scheduling priority, then serve jobs.

Layer: backends (the command line of _build_process.py runs this file as a script).  It
imports nothing of jaxlite before the priority is lowered: importing jaxlite takes about a
second of CPU, and at the user's priority that second competed with the user's program
(W4's first 20 calls took 0.64-1.0 s with the priority lowered after the imports, 0.28-0.32
s with it lowered first).  ``lower_priority`` is also what ``_build_process.main`` calls,
so a build process started another way lowers its priority too.
"""
import contextlib
import os

PRIORITY_VAR = "JAXLITE_BUILD_PRIORITY"
"""The environment variable through which the user's process gives the build process
its absolute priority (its own, lowered by ``_build_process.BUILD_NICENESS``)."""


def lower_priority(niceness: int) -> None:
    """Sets this process's priority to ``PRIORITY_VAR``'s value (absolute: setting it twice
    changes nothing), or, without it, ``niceness`` lower than now (``os.nice``).  Where the
    system does not allow it, the process keeps its priority."""
    p = os.environ.get(PRIORITY_VAR)
    try:
        if p and hasattr(os, "setpriority"):
            os.setpriority(os.PRIO_PROCESS, 0, int(p))
        elif hasattr(os, "nice"):
            os.nice(niceness)
    except (OSError, ValueError):
        return           # not allowed (or a malformed value): normal priority


def idle_priority() -> None:
    """Lets every thread of this process run only on CPU time no other process wants
    (Linux ``SCHED_IDLE``; elsewhere, or where that is refused, the lowest niceness, 19).
    The build process calls it once its user's process has closed: the build it still
    finishes (for the persistent cache) then never slows the programs that run after.
    Linux keeps both per thread, hence every thread, by its id."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except (OSError, ValueError):
        tids = [0]
    idle = getattr(os, "SCHED_IDLE", None)
    for tid in tids:
        # refused (or the thread has ended): the next way, else it keeps its priority
        if idle is not None:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(tid, idle, os.sched_param(0))
                continue
        if hasattr(os, "setpriority"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, 19)

if __name__ == "__main__":
    import sys
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # (run as a script: this folder's modules are not top-level ones)
    lower_priority(0)    # (0: only the priority the user's process gave)
    from jaxlite.backends.cpu._build_process import main
    main()

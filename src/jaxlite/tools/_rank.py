"""What each rank of ``jaxlite launch`` runs: ``python _rank.py SCRIPT [ARGS...]``.

It sends this process's standard output and error (file descriptors 1 and 2, so C-level
writes, tracebacks and child processes' output included) to the launcher over the Unix
socket named by ``JAXLITE_LAUNCH_SOCKET``, one connection per stream, each opened with
the header line ``b"<rank> out\\n"`` or ``b"<rank> err\\n"``; the launcher prefixes each
whole line with ``[rank] ``.  Standard output is made line-buffered, so that a rank that
is killed (a timeout, another rank's failure) has still delivered every line it printed.
Then it hands over to mpi4py's runner (``python -m mpi4py SCRIPT ARGS``): SCRIPT runs as
``__main__`` and an uncaught exception aborts the whole job through ``MPI_Abort``.

When the script's run ends (normally, by ``sys.exit`` or an exception) it opens one more
connection, with the header ``b"<rank> done"``: a rank whose output reached the launcher
but that never says so ended abruptly (``os._exit``, a signal), and the launcher reports
it (MPICH's mpiexec may then exit with status 0).

Without ``JAXLITE_LAUNCH_SOCKET``, or when the socket cannot be reached (a rank on
another host), the output is left where it was and the script still runs.

Layer: tools.  Run by path, never imported as ``jaxlite.tools._rank``: importing the
``jaxlite`` package here would import it before the script runs (seconds of start-up,
and before the script could set the environment jaxlite reads at import).  Hence
standard library and mpi4py only.
"""
import os
import socket
import sys

SOCKET_ENV = "JAXLITE_LAUNCH_SOCKET"

# the environment variables in which MPI launchers give a process its rank
# (MPICH's hydra, Open MPI, PMIx)
_RANK_ENVS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def _rank() -> int:
    """This process's rank in ``MPI.COMM_WORLD``, from the launcher's environment when it
    says (MPI is not initialised for it), else from MPI."""
    for name in _RANK_ENVS:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()


def _redirect_output(path: str) -> None:
    """Points file descriptors 1 and 2 at two new connections to the socket ``path``
    (both or neither: on failure prints a note to stderr and leaves them alone)."""
    rank = _rank()
    conns = []
    try:
        for stream in ("out", "err"):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conns.append(conn)
            conn.connect(path)
            conn.sendall(f"{rank} {stream}\n".encode("ascii"))
    except OSError as e:
        for conn in conns:
            conn.close()
        print(f"jaxlite launch: rank {rank}: cannot reach the launcher at {path} "
              f"({e.strerror or e}); this rank's output is not prefixed", file=sys.stderr)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    for fd, conn in zip((1, 2), conns):
        os.dup2(conn.fileno(), fd)
        conn.close()
    sys.stdout.reconfigure(line_buffering=True)


def _say_done(path: str) -> None:
    """Tells the launcher this rank's program finished (returned, or ended by sys.exit
    or an exception, which mpi4py's runner reports itself): a connection with the header
    ``b"<rank> done"``.  A rank that ends without it (``os._exit``, a signal) is one the
    launcher reports, as MPICH's mpiexec then says nothing and may exit with status 0."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        conn.sendall(f"{_rank()} done\n".encode("ascii"))
        conn.close()
    except OSError:     # the launcher is gone or unreachable: nobody to tell
        return


def main() -> None:
    path = os.environ.get(SOCKET_ENV)
    if path:
        _redirect_output(path)
    from mpi4py.run import main as run_mpi4py   # reads sys.argv[1:]: SCRIPT ARGS...
    try:
        run_mpi4py()
    finally:
        if path:
            _say_done(path)


if __name__ == "__main__":
    main()

"""``jaxlite launch -n N [--timeout S] SCRIPT [ARGS...]`` (also ``python -m jaxlite
launch``): runs SCRIPT as N MPI processes (ranks) on this machine, each rank's output in
whole lines prefixed with its rank, e.g. ``[0] hello`` and ``[1] hello``.

It runs ``mpiexec -n N PYTHON _rank.py SCRIPT ARGS`` where ``_rank.py`` hands over to
mpi4py's runner (``python -m mpi4py SCRIPT ARGS``), so that a rank dying with an uncaught
exception aborts the whole job through ``MPI_Abort`` instead of leaving the other ranks
waiting forever.  ``mpiexec`` is the one beside this Python (the venv's ``bin``, where the
PyPI ``mpich`` wheel puts it), else the first on ``PATH``.  The environment is passed
through, with ``MPIEXEC_TIMEOUT`` set to the timeout: ``--timeout S``, else the
environment's ``MPIEXEC_TIMEOUT``, else 600 seconds.  A job still running 2 seconds past it
is stopped by the launcher itself: SIGTERM to every process of the job, then, 2 seconds
later, SIGKILL to any left (a rank that ignores SIGTERM, its child processes).  The job's
processes are found by the environment variable ``JAXLITE_LAUNCH_JOB`` they inherit and
by their sessions (hydra starts each rank in a session of its own), from ``/proc``;
elsewhere by mpiexec's process group, mpiexec being started in a new session.  Whatever
is left of a job when mpiexec exits (a rank's child process still running) is stopped
the same way, so a job leaves no process behind.

Why not ``mpiexec -l`` (hydra's ``-prepend-rank``): hydra forwards each rank's output in
the chunks it happens to read, so with two ranks printing long lines a line of one rank
can be cut by a chunk of the other, and a ``[0] `` can land inside a line.  Here each
rank's standard output and error are instead connected, by ``_rank.py``, to a Unix socket
that the launcher reads, one connection per stream, and the launcher writes whole lines
only.  Standard error lines go to the launcher's standard error.  ``mpiexec``'s own
messages pass through unprefixed.

Exit status: mpiexec's (non-zero when a rank failed); 124 when the job exceeded the
timeout (hydra's own status then is 0 or 255, at random); 1 when mpi4py or mpiexec is
missing; 2 for usage errors (N or S below 1, SCRIPT missing or not a file); 130 when
interrupted; 141 when the reader of its output went away (``... | head``; the job is
stopped, as a program killed by SIGPIPE).

Layer: tools.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from .doctor import resolve_script

HELP = "run a Python program as N MPI processes, each output line prefixed with its rank"

DEFAULT_TIMEOUT = 600        # seconds, when neither --timeout nor MPIEXEC_TIMEOUT says
# seconds past the timeout before the launcher stops the job itself (hydra's own
# MPIEXEC_TIMEOUT fires first when it can: its notice is then in the output)
KILL_GRACE = 2
TERM_GRACE = 2               # seconds between SIGTERM and SIGKILL when stopping a job
TIMEOUT_STATUS = 124         # exit status of a job that exceeded the timeout
MAX_LINE = 1 << 20           # bytes without a newline emitted as a line of their own
INSTALL_HINT = "pip install 'jaxlite[mpi]'"

_RANK_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_rank.py")
_SOCKET_ENV = "JAXLITE_LAUNCH_SOCKET"       # read by _rank.py
_JOB_ENV = "JAXLITE_LAUNCH_JOB"             # marks every process of a job (_Job.pids)
# what hydra (MPICH) and Open MPI print when MPIEXEC_TIMEOUT fires
_TIMEOUT_MARKS = (b"APPLICATION TIMED OUT", b"time limit for job execution")


def _positive_int(text: str) -> int:
    """argparse type of -n and --timeout: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _script(path: str) -> str:
    """argparse type of SCRIPT: an existing file, or a directory with a ``__main__.py``."""
    try:
        return resolve_script(path)
    except (OSError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_arguments(parser) -> None:
    parser.add_argument("-n", dest="nprocs", metavar="N", required=True,
                        type=_positive_int,
                        help="the number of MPI processes (ranks) to run")
    parser.add_argument("--timeout", metavar="S", type=_positive_int,
                        help="stop the job after S seconds (sets MPIEXEC_TIMEOUT; default: "
                             f"the environment's MPIEXEC_TIMEOUT, else {DEFAULT_TIMEOUT})")
    parser.add_argument("script", type=_script,
                        help="the Python program each rank runs: a file, or a directory "
                             "with a __main__.py")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments passed to the program (its sys.argv[1:])")
    parser.epilog = (f"Needs mpi4py and an MPI launcher (mpiexec): {INSTALL_HINT}.  "
                     "Each output line is prefixed with its rank, as [0] ...; standard "
                     "error lines go to standard error.  Exit status: mpiexec's (non-zero "
                     f"when a rank failed), {TIMEOUT_STATUS} when the job exceeded the "
                     "timeout, 1 when mpi4py or mpiexec is missing, 2 for usage errors.")


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside ``sys.executable`` (a venv's ``bin``, where the PyPI
    ``mpich`` wheel installs it), else the first on ``PATH``; None when there is none."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpiexec")


def timeout_seconds(option: int | None, environ=None) -> int:
    """The job's timeout in seconds: ``option`` (``--timeout``), else ``MPIEXEC_TIMEOUT``
    from ``environ`` (default ``os.environ``), else ``DEFAULT_TIMEOUT``.

    Raises:
      ValueError: ``MPIEXEC_TIMEOUT`` is used and is not a whole number of at least 1.
    """
    if option is not None:
        return option
    environ = os.environ if environ is None else environ
    text = environ.get("MPIEXEC_TIMEOUT")
    if text is None or not text.strip():
        return DEFAULT_TIMEOUT
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"MPIEXEC_TIMEOUT={text!r} in the environment is not a whole "
                         f"number of seconds of at least 1; set it so or pass --timeout")
    return value


class _OutputClosed(Exception):
    """The launcher's stdout or stderr was closed by its reader (``... | head``)."""


class _Sink:
    """Writes bytes to a text stream: to its binary buffer when it has one (the bytes
    untouched), else decoded (a stream replaced by a ``StringIO``).  Once its reader has
    gone, raises ``_OutputClosed`` once and then drops what it is given."""

    def __init__(self, stream):
        self.stream = stream
        self.buffer = getattr(stream, "buffer", None)
        self.closed = False

    def write(self, data: bytes) -> None:
        if not data or self.closed:
            return
        try:
            if self.buffer is not None:
                self.stream.flush()
                self.buffer.write(data)
                self.buffer.flush()
            else:
                self.stream.write(data.decode("utf-8", errors="replace"))
                self.stream.flush()
        except BrokenPipeError:
            self.closed = True
            # so that Python's flush at exit does not complain about it again
            with contextlib.suppress(OSError, ValueError, AttributeError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.stream.fileno())
                os.close(devnull)
            raise _OutputClosed() from None


class _Drop:
    """Where a rank's "done" connection writes: nowhere."""

    closed = False

    def write(self, data: bytes) -> None:
        """Discards ``data``."""


class _Source:
    """One stream being read: a rank's stdout or stderr (a socket connection, whose first
    line names the rank and the stream), or mpiexec's own stdout or stderr (a pipe).
    Cuts what it reads into whole lines and writes them, each prefixed, to its sink."""

    def __init__(self, fileobj, sinks: dict, *, sink=None):
        self.fileobj = fileobj
        self.sinks = sinks
        self.sink = sink                   # a rank's: None until its header line is read
        self.own = sink is not None        # mpiexec's own stream
        self.prefix = b""
        self.buf = b""
        self.said_timeout = False          # mpiexec said that MPIEXEC_TIMEOUT fired

    def _emit(self, lines: list) -> None:
        self.sink.write(b"".join(self.prefix + line + b"\n" for line in lines))
        if self.own and any(mark in line for line in lines for mark in _TIMEOUT_MARKS):
            self.said_timeout = True

    def feed(self, data: bytes) -> None:
        self.buf += data
        if self.sink is None:
            header, sep, rest = self.buf.partition(b"\n")
            if not sep:
                return
            rank, _, stream = header.decode("ascii", "replace").partition(" ")
            self.sinks["connected"].add(rank)
            if stream == "done":        # the rank's program finished (see _rank.py)
                self.sinks["done"].add(rank)
                self.sink = _Drop()
            else:
                self.sink = self.sinks["err" if stream == "err" else "out"]
            self.prefix = f"[{rank}] ".encode("ascii", "replace")
            self.buf = rest
        end = self.buf.rfind(b"\n")
        if end >= 0:
            self._emit(self.buf[:end].split(b"\n"))
            self.buf = self.buf[end + 1:]
        if len(self.buf) >= MAX_LINE:
            self._emit([self.buf])
            self.buf = b""

    def close(self) -> None:
        if self.buf and self.sink is not None:   # a last line without its newline
            self._emit([self.buf])
            self.buf = b""


def _socket_path():
    """A fresh private directory and the path of the socket in it (a Unix socket path is
    limited to about 100 bytes: a long TMPDIR falls back to /tmp)."""
    tmp = tempfile.mkdtemp(prefix="jaxlite-launch-")
    path = os.path.join(tmp, "out.sock")
    if len(os.fsencode(path)) > 100 and os.path.isdir("/tmp"):
        os.rmdir(tmp)
        tmp = tempfile.mkdtemp(prefix="jaxlite-launch-", dir="/tmp")
        path = os.path.join(tmp, "out.sock")
    return tmp, path


def launch(script: str, args=(), *, nprocs: int, timeout: int, mpiexec: str,
           stdout=None, stderr=None) -> int:
    """Runs ``script`` with ``args`` as ``nprocs`` MPI ranks under ``mpiexec`` and the
    ``timeout`` (seconds); writes each rank's output lines, prefixed ``[rank] ``, to
    ``stdout`` and ``stderr`` (defaults: ``sys.stdout``, ``sys.stderr``).  Returns the exit
    status: mpiexec's, or ``TIMEOUT_STATUS`` (124) when the job exceeded the timeout (the
    notice saying so is written to ``stderr``), 130 when interrupted, 141 when ``stdout``
    or ``stderr`` was closed by its reader (the job is then stopped)."""
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    sinks = {"out": _Sink(stdout), "err": _Sink(stderr), "done": set(), "connected": set()}
    script_arg = os.path.join(".", script) if script.startswith("-") else script
    tmp, path = _socket_path()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sel = selectors.DefaultSelector()
    proc = None
    job = _Job(f"{os.getpid()}-{secrets.token_hex(8)}")
    try:
        listener.bind(path)
        listener.listen(max(128, 2 * nprocs))
        listener.setblocking(False)
        # the marks of enclosing jobs kept (a rank may launch a job of its own): each
        # job finds every process started under it
        marks = f"{os.environ.get(_JOB_ENV, '')} {job.mark}".strip()
        env = dict(os.environ, MPIEXEC_TIMEOUT=str(timeout),
                   **{_SOCKET_ENV: path, _JOB_ENV: marks})
        cmd = [mpiexec, "-n", str(nprocs), sys.executable, _RANK_SCRIPT, script_arg,
               *args]
        try:
            # a session of its own: its process group can be signalled as a whole, and
            # a Ctrl-C at the terminal reaches the launcher, which stops the job
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            sinks["err"].write(f"jaxlite launch: cannot run {mpiexec}: "
                               f"{e.strerror or e}\n".encode())
            return 1
        job.proc = proc
        own = [_Source(proc.stdout, sinks, sink=sinks["out"]),
               _Source(proc.stderr, sinks, sink=sinks["err"])]
        for source in own:
            sel.register(source.fileobj, selectors.EVENT_READ, source)
        sel.register(listener, selectors.EVENT_READ, None)
        status, killed, seconds = _pump(sel, listener, job, sinks, timeout)
    except KeyboardInterrupt:
        job.stop()
        return 130
    except _OutputClosed:       # as a program killed by SIGPIPE, but without a traceback
        job.stop()
        return 128 + signal.SIGPIPE
    except BaseException:
        job.stop()
        raise
    finally:
        # whatever of the job outlived mpiexec (a rank's child process) ends with it
        job.stop()
        try:
            for key in list(sel.get_map().values()):
                if key.data is not None:
                    with contextlib.suppress(_OutputClosed):
                        key.data.close()       # emits a last line without its newline
                key.fileobj.close()
        finally:
            sel.close()
            listener.close()
            shutil.rmtree(tmp, ignore_errors=True)
    timed_out = (killed or any(source.said_timeout for source in own)
                 or (status != 0 and seconds >= timeout))
    if timed_out:
        sinks["err"].write(f"jaxlite launch: the job exceeded the timeout of {timeout} "
                           f"seconds and was stopped (raise it with --timeout or "
                           f"MPIEXEC_TIMEOUT)\n".encode())
        return TIMEOUT_STATUS
    # ranks whose output reached the launcher but that never said their program finished
    missing = sorted(sinks["connected"] - sinks["done"], key=int)
    if status == 0 and missing:
        # hydra reports success when a rank ends with status 0 before its program
        # finished (os._exit(0)), killing the others: say so, and fail
        sinks["err"].write(f"jaxlite launch: rank(s) {', '.join(missing)} ended before "
                           f"their program finished (os._exit, a signal, or stopped "
                           f"because another rank ended early); the job failed\n"
                           .encode())
        return 1
    return status


def _proc_table() -> dict | None:
    """``{pid: session id}`` of every live process (zombies left out), from ``/proc``;
    None where there is no ``/proc`` to read."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    table = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                text = fh.read()
        except OSError:        # ended meanwhile
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
        fields = text[text.rfind(b")") + 2:].split()
        if len(fields) < 4 or fields[0] in (b"Z", b"X"):
            continue
        table[int(name)] = int(fields[3])
    return table


class _Job:
    """The processes of one job: mpiexec (``proc``, the leader of its own session) and
    every process that inherited ``mark`` among the space-separated marks of the
    environment variable ``JAXLITE_LAUNCH_JOB`` (the ranks, hydra's proxies, the ranks'
    children), with every process of their sessions (a rank's child started with another
    environment stays in its rank's session)."""

    def __init__(self, mark: str):
        self.mark = mark
        self.proc = None
        self._prefix = f"{_JOB_ENV}=".encode()
        self._mark = mark.encode()

    def pids(self) -> set:
        """The job's live processes, this one never among them."""
        proc = self.proc
        if proc is None:
            return set()
        table = _proc_table()
        if table is None:                        # no /proc: mpiexec alone is known
            return {proc.pid} if proc.poll() is None else set()
        members = {proc.pid} & table.keys()
        for pid in table:
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    environ = fh.read()
            except OSError:                      # ended meanwhile, or not ours
                continue
            if self._mark not in environ:        # the quick test of most processes
                continue
            for entry in environ.split(b"\0"):
                if entry.startswith(self._prefix) and \
                        self._mark in entry[len(self._prefix):].split(b" "):
                    members.add(pid)
        mine = os.getpid()
        sessions = {table[p] for p in members} - {table.get(mine)}
        members |= {p for p, sid in table.items() if sid in sessions}
        members.discard(mine)
        return members

    def _signal(self, pids, sig) -> None:
        # mpiexec's process group: the job where /proc does not show more
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, sig)
        for pid in pids:
            with contextlib.suppress(OSError):   # ended meanwhile
                os.kill(pid, sig)

    def stop(self) -> None:
        """Ends every process of the job: SIGTERM, then SIGKILL to those still running
        ``TERM_GRACE`` seconds later; reaps mpiexec.  Quick when nothing is left."""
        if self.proc is None:
            return
        for sig, grace in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, 5.0)):
            self.proc.poll()
            pids = self.pids()
            if not pids:
                break
            self._signal(pids, sig)
            until = time.monotonic() + grace
            while time.monotonic() < until:
                self.proc.poll()                 # reap mpiexec once it exits
                table = _proc_table()
                if table is None:
                    if self.proc.poll() is not None:
                        break
                elif not pids & table.keys():
                    break
                time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):   # unkillable (in the kernel)
            self.proc.wait(5)


def _pump(sel, listener, job, sinks, timeout):
    """Reads every stream until mpiexec has exited and its ranks' streams are closed (or
    2 seconds after it exited: a rank's child process may hold a stream open).  Stops the
    job (``_Job.stop``) if mpiexec outlives the timeout by ``KILL_GRACE`` seconds.
    Returns mpiexec's exit status (128 + N when killed by signal N), whether the launcher
    stopped it, and the seconds mpiexec ran."""
    proc = job.proc
    started = time.monotonic()
    deadline = started + timeout + KILL_GRACE
    exited_at = None
    killed = False
    while True:
        for key, _ in sel.select(timeout=0.2):
            if key.data is None:                       # a rank connects
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                sel.register(conn, selectors.EVENT_READ, _Source(conn, sinks))
                continue
            source = key.data
            try:
                data = os.read(source.fileobj.fileno(), 65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                source.feed(data)
            else:                                      # end of stream
                source.close()
                sel.unregister(source.fileobj)
                source.fileobj.close()
        now = time.monotonic()
        if exited_at is None:
            if proc.poll() is not None:
                exited_at = now
                # what outlived mpiexec (a rank's child) may hold a rank's stream open:
                # stop it now rather than wait for it
                job.stop()
            elif now > deadline:
                job.stop()
                killed = True
                exited_at = time.monotonic()
        if exited_at is not None:
            streams_open = len(sel.get_map()) > 1          # more than the listener
            if not streams_open or now - exited_at > 2.0:
                break
    status = proc.returncode
    return (128 - status if status < 0 else status), killed, exited_at - started


def run(args) -> int:
    """Checks that mpi4py and mpiexec are there, then runs the job (``launch``); prints
    what is missing and returns 1 when one is not; returns 2 for a bad
    ``MPIEXEC_TIMEOUT``."""
    try:
        timeout = timeout_seconds(args.timeout)
    except ValueError as e:
        print(f"jaxlite launch: {e}", file=sys.stderr)
        return 2
    missing = []
    if importlib.util.find_spec("mpi4py") is None:
        missing.append(f"mpi4py (not importable by {sys.executable})")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        missing.append(f"mpiexec (neither beside {sys.executable} nor on PATH)")
    if missing:
        print(f"jaxlite launch: needs mpi4py and an MPI launcher, mpiexec; missing: "
              f"{'; '.join(missing)}.  Install both with: {INSTALL_HINT}", file=sys.stderr)
        return 1
    return launch(args.script, args.args, nprocs=args.nprocs, timeout=timeout,
                  mpiexec=mpiexec)

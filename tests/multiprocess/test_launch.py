"""``python -m jaxlite launch -n N [--timeout S] SCRIPT [ARGS...]``: N MPI ranks, each
output line whole and prefixed ``[rank] ``; a rank's uncaught exception ends the job at
once with a non-zero status; a hanging job ends at the timeout with status 124 and a notice;
usage errors exit with status 2.

Each job runs in a subprocess with a timeout, 2 ranks at most; the test programs use only
mpi4py and the standard library.  Skipped where mpi4py is not installed.
"""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

from jaxlite.__main__ import main  # noqa: E402
from jaxlite.tools import launch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HANG = 120   # seconds: far above any of these jobs (a few seconds each)

needs_mpiexec = pytest.mark.skipif(launch.find_mpiexec() is None,
                                   reason="no mpiexec beside this Python nor on PATH")


def cli_env() -> dict:
    """The environment of the launcher: this one with jaxlite's source importable, and
    without MPIEXEC_TIMEOUT (the tests set --timeout) or PYTHONUNBUFFERED (the tests see
    what a program's unflushed output does by default)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("MPIEXEC_TIMEOUT", None)
    env.pop("PYTHONUNBUFFERED", None)
    return env


def cli(*args, cwd=None):
    """``python -m jaxlite ARGS`` in a subprocess (stdin closed, so mpiexec forwards
    nothing); returns it and the seconds it took; raises TimeoutExpired on a hang."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "jaxlite", *map(str, args)], cwd=cwd,
                       env=cli_env(),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=HANG)
    return p, time.monotonic() - t0


def program(tmp_path, body, name="prog.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


# Each rank prints many long lines (1,000 to 4,000 characters: longer than the chunks
# mpiexec forwards, so hydra's own `-l` prefixing cuts and mixes them), with and without
# flush, to stdout and to stderr; every line names its rank, its stream and its number and
# is filled with one character per rank, so a cut or mixed line is recognised.
SPAM = """\
import sys
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
fill = "ab"[rank]
for i in range(400):
    flush = i % 2 == 1
    print(f"r{rank} out {i} " + fill * (1000 + (i * 37) % 3000), flush=flush)
    if i % 4 == 0:
        print(f"r{rank} err {i} " + fill.upper() * (1000 + (i * 53) % 3000),
              file=sys.stderr, flush=flush)
print(f"r{rank} argv {sys.argv[1:]}")
"""


def check_spam(text, stream):
    """Every line of ``text`` is one whole line of SPAM, with the right prefix; each rank's
    lines of ``stream`` all there, in order.  Returns {rank: [line numbers]}."""
    seen = {0: [], 1: []}
    for line in text.splitlines():
        m = re.fullmatch(r"\[(\d)\] r(\d) (out|err|argv) (.*)", line)
        assert m, f"line not prefixed by its rank: {line[:120]!r}"
        rank = int(m.group(1))
        assert int(m.group(2)) == rank, f"line of rank {m.group(2)} prefixed [{rank}]"
        if m.group(3) == "argv":
            assert stream == "out" and m.group(4) == "['--timeout', '5', 'x y']"
            continue
        assert m.group(3) == stream
        numbered = re.fullmatch(r"(\d+) ([abAB]*)", m.group(4))
        assert numbered, f"rank {rank} line cut or mixed: {line[:120]!r}"
        i, body = int(numbered.group(1)), numbered.group(2)
        fill = "ab"[rank] if stream == "out" else "AB"[rank]
        length = 1000 + (i * (37 if stream == "out" else 53)) % 3000
        assert body == fill * length, f"rank {rank} line {i} cut or mixed"
        seen[rank].append(i)
    expected = list(range(400)) if stream == "out" else list(range(0, 400, 4))
    assert seen == {0: expected, 1: expected}
    return seen


@needs_mpiexec
def test_each_line_whole_and_prefixed_with_its_rank(tmp_path):
    script = program(tmp_path, SPAM)
    # options after SCRIPT belong to the program
    p, _ = cli("launch", "-n", 2, "--timeout", 60, script, "--timeout", "5", "x y")
    assert p.returncode == 0, p.stderr[-2000:]
    check_spam(p.stdout, "out")
    check_spam(p.stderr, "err")
    for rank in (0, 1):
        assert f"[{rank}] r{rank} argv ['--timeout', '5', 'x y']" in p.stdout.splitlines()


@needs_mpiexec
def test_normal_program_exit_status_0_and_runs_as_main(tmp_path):
    script = program(tmp_path, """\
        import os, sys
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        total = comm.allreduce(comm.Get_rank() + 1)
        print(__name__, comm.Get_size(), total, os.environ["MPIEXEC_TIMEOUT"])
        """)
    p, _ = cli("launch", "-n", 2, "--timeout", 60, script)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.splitlines()) == ["[0] __main__ 2 3 60", "[1] __main__ 2 3 60"]
    assert p.stderr == ""


@needs_mpiexec
def test_exception_on_one_rank_aborts_the_job(tmp_path):
    script = program(tmp_path, """\
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        print("started", comm.Get_rank())
        if comm.Get_rank() == 1:
            raise ValueError("bad input on rank one")
        comm.Barrier()      # rank 0 waits here for a rank that is gone
        print("never")
        """)
    p, seconds = cli("launch", "-n", 2, "--timeout", 60, script)
    assert p.returncode not in (0, launch.TIMEOUT_STATUS), p.stderr
    assert seconds < 40, "the job waited for the timeout instead of aborting"
    assert "[1] ValueError: bad input on rank one" in p.stderr.splitlines()
    assert "[1] started 1" in p.stdout.splitlines()   # printed, unflushed, before the abort
    assert "never" not in p.stdout
    assert "exceeded the timeout" not in p.stderr


@needs_mpiexec
def test_a_rank_ending_abruptly_with_status_0_fails_the_job(tmp_path):
    # MPICH's mpiexec exits 0 when a rank calls os._exit(0) (and stops the others)
    script = program(tmp_path, """\
        import os, time
        from mpi4py import MPI
        print("started", MPI.COMM_WORLD.Get_rank())
        if MPI.COMM_WORLD.Get_rank() == 1:
            os._exit(0)
        time.sleep(5)
        print("finished")
        """)
    p, seconds = cli("launch", "-n", 2, "--timeout", 60, script)
    assert seconds < 40
    if p.returncode == 9 and "BAD TERMINATION" in p.stdout:
        # on a loaded machine hydra may kill rank 0 before rank 1's exit is seen as a
        # success, and then reports the job failed itself (exit code 9): failed either way
        return
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "ended before their program finished" in p.stderr
    assert "rank(s) 0, 1" in p.stderr or "rank(s) 1" in p.stderr


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read()
    except FileNotFoundError:
        return False
    except OSError:
        pass
    else:
        return text[text.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pids, seconds=5.0) -> set:
    """The ``pids`` still running after up to ``seconds`` (an ended process's entry may
    take a moment to go)."""
    until = time.monotonic() + seconds
    left = set(pids)
    while left and time.monotonic() < until:
        left = {p for p in left if alive(p)}
        time.sleep(0.05)
    return left


# Each rank ignores SIGTERM and starts two children that ignore it too: one in a session
# of its own (found by the environment it inherits), one with an empty environment (found
# by its rank's session).  Each writes its pids to a file once everything has started.
STUBBORN = """\
import os, signal, subprocess, sys, time
from mpi4py import MPI
signal.signal(signal.SIGTERM, signal.SIG_IGN)
rank = MPI.COMM_WORLD.Get_rank()
sleeper = [sys.executable, "-c",
           "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
           "time.sleep(1000)"]
kids = [subprocess.Popen(sleeper, start_new_session=True),
        subprocess.Popen(sleeper, env={})]
print("waiting", rank)                 # not flushed: must still come out
with open(os.path.join(sys.argv[1], f"pids{rank}.tmp"), "w") as fh:
    fh.write(" ".join(str(p) for p in [os.getpid()] + [k.pid for k in kids]))
os.replace(os.path.join(sys.argv[1], f"pids{rank}.tmp"),
           os.path.join(sys.argv[1], f"pids{rank}"))
if rank == 1:
    while True:
        time.sleep(1)
MPI.COMM_WORLD.Barrier()               # rank 0 waits for rank 1 forever
"""


@pytest.mark.slow      # make test-slow (CI runs it): 15 s of waiting, keeps make test < 10 min
@needs_mpiexec
def test_hanging_job_ends_at_the_timeout(tmp_path):
    """A job whose ranks and their children ignore SIGTERM ends within the timeout plus
    10 seconds (the launcher's own start-up included), leaving no process behind."""
    timeout = 10
    script = program(tmp_path, STUBBORN)
    p, seconds = cli("launch", "-n", 2, "--timeout", timeout, script, tmp_path)
    pids = [int(t) for r in (0, 1) for t in (tmp_path / f"pids{r}").read_text().split()]
    assert wait_gone(pids) == set(), "processes of the job outlived it"
    assert p.returncode == launch.TIMEOUT_STATUS, (p.returncode, p.stderr)
    assert timeout <= seconds < timeout + 10, seconds
    assert (f"jaxlite launch: the job exceeded the timeout of {timeout} seconds and was "
            f"stopped (raise it with --timeout or MPIEXEC_TIMEOUT)") in p.stderr.splitlines()
    assert {"[0] waiting 0", "[1] waiting 1"} <= set(p.stdout.splitlines())


@needs_mpiexec
def test_a_finished_job_leaves_no_process_behind(tmp_path):
    """A rank's child still running when the job ends (its rank exited normally) is
    stopped with the job, even in a session of its own and ignoring SIGTERM."""
    script = program(tmp_path, """\
        import os, signal, subprocess, sys
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        kid = subprocess.Popen([sys.executable, "-c",
                                "import signal, time; "
                                "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                "time.sleep(1000)"], start_new_session=True)
        with open(os.path.join(sys.argv[1], f"kid{rank}"), "w") as fh:
            fh.write(str(kid.pid))
        print("done", rank)
        """)
    p, seconds = cli("launch", "-n", 2, "--timeout", 60, script, tmp_path)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.splitlines()) == ["[0] done 0", "[1] done 1"]
    kids = [int((tmp_path / f"kid{r}").read_text()) for r in (0, 1)]
    assert wait_gone(kids) == set(), "a rank's child outlived the job"
    assert seconds < 40


@needs_mpiexec
def test_output_comes_out_while_the_job_runs(tmp_path):
    """Unflushed lines reach the launcher's output at once (the ranks' stdout is
    line-buffered): each rank waits for a file that this test creates only after reading
    both ranks' first line."""
    marker = tmp_path / "go"
    script = program(tmp_path, """\
        import os, sys, time
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        print("ready", rank)
        t0 = time.monotonic()
        while not os.path.exists(sys.argv[1]) and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        print("done", rank, os.path.exists(sys.argv[1]))
        """)
    proc = subprocess.Popen([sys.executable, "-m", "jaxlite", "launch", "-n", "2",
                             "--timeout", "60", str(script), str(marker)], env=cli_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = {proc.stdout.readline(), proc.stdout.readline()}
        marker.write_text("go")
        out, err = proc.communicate(timeout=HANG)
    finally:
        proc.kill()
        proc.wait()
    assert first == {"[0] ready 0\n", "[1] ready 1\n"}
    assert proc.returncode == 0, err
    assert sorted(out.splitlines()) == ["[0] done 0 True", "[1] done 1 True"]


def test_missing_script_is_a_usage_error(tmp_path):
    missing = tmp_path / "nope.py"
    p, _ = cli("launch", "-n", 2, "--timeout", 60, missing)
    assert p.returncode == 2
    assert p.stderr.splitlines()[-1] == (f"python -m jaxlite launch: error: argument script: "
                                         f"no such file or directory: {missing}")
    assert p.stdout == ""


@pytest.mark.parametrize("argv, message", [
    (["-n", "0"], "argument -n: must be at least 1, got 0"),
    (["-n", "two"], "argument -n: must be a whole number, got 'two'"),
    (["-n", "2", "--timeout", "0"], "argument --timeout: must be at least 1, got 0"),
    (["--timeout", "5"], "the following arguments are required: -n"),
])
def test_bad_options_are_usage_errors(tmp_path, capsys, argv, message):
    script = program(tmp_path, "print('ran')\n")
    with pytest.raises(SystemExit) as e:
        main(["launch", *argv, str(script)])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m jaxlite launch: error: {message}")


def test_directory_without_main_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["launch", "-n", "1", str(tmp_path)])
    assert e.value.code == 2
    assert "is a directory without __main__.py" in capsys.readouterr().err


def test_timeout_default_and_environment(monkeypatch):
    assert launch.timeout_seconds(7, {"MPIEXEC_TIMEOUT": "30"}) == 7
    assert launch.timeout_seconds(None, {"MPIEXEC_TIMEOUT": "30"}) == 30
    assert launch.timeout_seconds(None, {}) == 600
    with pytest.raises(ValueError, match=r"MPIEXEC_TIMEOUT='soon' in the environment"):
        launch.timeout_seconds(None, {"MPIEXEC_TIMEOUT": "soon"})


def test_bad_mpiexec_timeout_in_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPIEXEC_TIMEOUT", "0")
    script = program(tmp_path, "print('ran')\n")
    assert main(["launch", "-n", "1", str(script)]) == 2
    assert "MPIEXEC_TIMEOUT='0' in the environment is not a whole number" in \
        capsys.readouterr().err


def test_missing_mpiexec_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(launch, "find_mpiexec", lambda: None)
    script = program(tmp_path, "print('ran')\n")
    assert main(["launch", "-n", "2", str(script)]) == 1
    err = capsys.readouterr().err
    assert "missing: mpiexec (neither beside" in err
    assert "pip install 'jaxlite[mpi]'" in err
    assert "Traceback" not in err


def test_launcher_kills_an_mpiexec_that_ignores_the_timeout(tmp_path, capsys, monkeypatch):
    """The launcher's own backstop: an mpiexec still running KILL_GRACE seconds past the
    timeout is stopped, with its child, though both ignore SIGTERM, and the job reported
    as timed out."""
    fake = tmp_path / "mpiexec"
    child = tmp_path / "child"
    fake.write_text("#!/bin/sh\ntrap '' TERM\necho fake mpiexec started\n"
                    f"sleep 100 &\necho $! > {child}\nwait\nsleep 100\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(launch, "KILL_GRACE", 1)
    t0 = time.monotonic()
    status = launch.launch(str(program(tmp_path, "")), nprocs=2, timeout=1,
                           mpiexec=str(fake))
    assert time.monotonic() - t0 < 1 + 10
    assert status == launch.TIMEOUT_STATUS
    assert wait_gone([int(child.read_text())]) == set()
    out, err = capsys.readouterr()
    assert out == "fake mpiexec started\n"
    assert "the job exceeded the timeout of 1 seconds" in err


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc here")
def test_a_job_finds_its_processes_by_any_of_their_marks():
    """A process started under nested jobs carries every enclosing job's mark: each job
    finds it (a whole mark only), and stopping the job ends it though it is in a session
    of its own."""
    leader = subprocess.Popen(["sleep", "60"], start_new_session=True)
    nested = subprocess.Popen(["sleep", "60"], start_new_session=True,
                              env=dict(os.environ, JAXLITE_LAUNCH_JOB="outer-1 inner-2"))
    try:
        # until its exec, a child's /proc entry shows this process's environment
        until = time.monotonic() + 10
        while b"outer-1" not in Path(f"/proc/{nested.pid}/environ").read_bytes() and \
                time.monotonic() < until:
            time.sleep(0.01)
        outer, partial = launch._Job("outer-1"), launch._Job("inner")
        outer.proc = partial.proc = leader
        assert {leader.pid, nested.pid} <= outer.pids()
        assert nested.pid not in partial.pids()
        assert os.getpid() not in outer.pids()
        outer.stop()
        assert wait_gone([leader.pid, nested.pid]) == set()
        assert leader.returncode is not None
    finally:
        for p in (leader, nested):
            p.kill()
            p.wait()

"""Issue 33, the tools: ``make test`` runs both tiers whatever the first gives; ``lint`` on a
directory with nothing to check is a usage error; ``doctor`` ends as Python ends on the
program's ``SystemExit`` and finds an unwritable report path by trying it, before the
program runs; the demo's subprocess sections report what their processes did.

The command-line cases call ``main([...])`` in this process, except where the exit status
or the standard error of a whole process is the point (a subprocess, under a timeout).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxlite.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
HANG = 60   # seconds: far above a normal run of these commands (a few seconds)


def cli(*args, cwd=None):
    """``python -m jaxlite ARGS`` in a subprocess; raises TimeoutExpired on a hang."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, "-m", "jaxlite", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=HANG)


# ---- make test: both tiers, failing at the end --------------------------------------

@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
@pytest.mark.parametrize("target, first, second, failed", [
    ("test", 1, 0, "tests"),
    ("test", 0, 1, "tests/multidevice"),
    ("test", 1, 1, "tests tests/multidevice"),
    ("test", 0, 0, None),
    # 5: no slow multidevice test; the stand-in python fails both differential runs
    ("test-slow", 1, 5,
     "tests tests/test_differential.py tests/test_differential_pjrt.py"),
    ("test-slow", 0, 2,
     "tests/multidevice tests/test_differential.py tests/test_differential_pjrt.py"),
])
def test_make_test_runs_every_tier_and_fails_at_the_end(tmp_path, target, first, second,
                                                        failed):
    """The Makefile's recipes with stand-in commands (a fake, already installed venv): a
    failure of the first tier never keeps the second from running, and the target fails
    at the end naming the parts that failed.  (In test-slow the stand-in ``python`` of
    the differential run fails: that part is reported too.)"""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()
    (venv / ".installed-test").touch()
    log = tmp_path / "log"
    tier = f"sh -c 'echo first >> {log}; exit {first}'"
    multi = f"sh -c 'echo second >> {log}; exit {second}'"
    p = subprocess.run(["make", "-s", "-C", str(ROOT), target, f"VENV={venv}",
                        f"PYTEST={tier}", f"MULTI={multi}"],
                       capture_output=True, text=True, timeout=HANG)
    assert log.read_text().split() == ["first", "second"], p.stderr
    if failed is None:
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode != 0
        assert f"make {target}: failed: {failed}" in p.stderr.splitlines()


# ---- lint: a directory with nothing to check -----------------------------------------

def test_lint_directory_without_python_files_says_so(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("x.at[0].set(1)\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "m.py").write_text("x = 1\n")     # hidden: not linted
    assert main(["lint", str(tmp_path)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.splitlines() == [
        f"jaxlite lint: {tmp_path} is a directory with no Python files (*.py) to lint"]


def test_lint_empty_directory_beside_a_file_is_still_an_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    good = tmp_path / "good.py"
    good.write_text("x = 1\n")
    assert main(["lint", str(good), str(tmp_path / "empty")]) == 2
    assert "empty is a directory with no Python files (*.py) to lint" in \
        capsys.readouterr().err
    assert main(["lint", str(good)]) == 0          # the file alone is clean


# ---- doctor: the program's SystemExit, as Python ends on it ---------------------------

@pytest.mark.parametrize("body, status, err", [
    ("raise SystemExit(3)", 3, ""),
    ("import sys; sys.exit(0)", 0, ""),
    ("import sys; sys.exit()", 0, ""),
    ("raise SystemExit('no input given')", 1, "no input given\n"),
    ("raise SystemExit(True)", 1, ""),
])
def test_doctor_ends_as_python_does_on_system_exit(tmp_path, body, status, err):
    script = tmp_path / "prog.py"
    script.write_text(f"print('ran')\n{body}\n")
    py = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                        timeout=HANG)
    assert (py.returncode, py.stderr) == (status, err)      # the oracle: Python itself
    p = cli("doctor", "-q", "--json", tmp_path / "r.json", script)
    assert p.returncode == status, p.stderr
    assert p.stderr == err
    assert p.stdout.startswith("ran\n")
    report = json.loads((tmp_path / "r.json").read_text())   # still written
    assert report["status"]["ok"] is (status == 0)
    assert report["status"]["exit_code"] == status


# ---- doctor: a report path that cannot be written, found by trying it ----------------

@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc here")
@pytest.mark.parametrize("option", ["--json", "--html"])
def test_doctor_report_path_the_permission_bits_allow_but_that_cannot_be_written(
        tmp_path, capsys, option):
    """/proc's directory looks writable (to root, every directory does), yet no file can
    be created there: the doctor finds it before the program runs."""
    marker = tmp_path / "marker"
    script = tmp_path / "prog.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    out = "/proc/jaxlite-report.out"
    assert main(["doctor", option, out, str(script)]) == 2
    assert not marker.exists(), "the program ran although its report cannot be written"
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"jaxlite doctor: {option} {out}: the file cannot be written: "), err


def test_doctor_report_path_check_leaves_no_file_and_keeps_an_existing_one(tmp_path,
                                                                           capsys):
    """The check creates a new report file and removes it again (the program sees no file
    there), and opens an existing one without truncating it."""
    new = tmp_path / "new.json"
    kept = tmp_path / "kept.html"
    kept.write_text("old report")
    script = tmp_path / "prog.py"
    script.write_text(f"import os\nprint(os.path.exists({str(new)!r}), "
                      f"open({str(kept)!r}).read())\n")
    assert main(["doctor", "-q", "--json", str(new), "--html", str(kept), str(script)]) == 0
    assert capsys.readouterr().out.startswith("False old report\n")
    assert json.loads(new.read_text())["status"]["ok"] is True
    assert kept.read_text().startswith("<!DOCTYPE html>")


# ---- the demo: what a program leaves in use, and what its child processes did --------

def test_demo_memory_once_the_variables_are_dropped_is_what_is_live(tmp_path):
    """A program whose jitted function outlives it (jit's cache holds the function,
    which holds the program's globals) still has its variables dropped: the figure is
    what stays live, 0 B here, not the program's arrays."""
    import io
    import jaxlite
    from jaxlite.tools import demo

    program = tmp_path / "prog.py"
    program.write_text("import jaxlite as jax\nimport jaxlite.numpy as jnp\n"
                       "big = jnp.ones(1000)\n"
                       "@jax.jit\ndef f(x):\n    return x * 2\n"
                       "print(float(f(big).sum()))\n")
    import gc
    gc.collect()      # what other tests of this process left: the device's figures include it
    in_use, live = jaxlite.devices()[0].memory_stats()["bytes_in_use"], len(jaxlite.live_arrays())
    out = io.StringIO()
    res = demo.run_section(program, out)
    assert res.ok, res.error
    assert out.getvalue() == "    | 2000.0\n"
    [(device, end, peak, allocs, after)] = res.memory
    assert device == jaxlite.devices()[0]
    assert end["bytes_in_use"] >= in_use + 4000      # `big` was alive at the end of the run
    assert (after, res.live_after) == (in_use, live)
    if (in_use, live) == (0, 0):
        assert "    " + " " * 12 + "0 B in use once the program's variables are dropped " \
            "(0 live arrays)" in demo.underneath(res)
    assert [c["fun"] for k, c in res.events if k == "compile"] == ["f"]
    assert [c["calls"] for k, c in res.events if k == "compile"] == [1]


SHARDED = """\
import numpy as np
import jaxlite as jax
from jaxlite import lax
from jaxlite.sharding import Mesh, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()[:2]), ("i",))
def total(x):
    return lax.psum(x, "i")
f = jax.jit(jax.shard_map(total, mesh=mesh, in_specs=P("i"), out_specs=P()))
x = np.arange(4, dtype=np.float32)
for _ in range(3):
    y = f(x)
print(len(jax.devices()), np.asarray(y))
"""


def test_demo_program_in_a_child_process_reports_what_it_did(tmp_path):
    """A program the demo runs in a process with 2 devices: its output, compiles (with
    their calls), collectives and transfers come back from that process."""
    import io
    from jaxlite.tools import demo

    program = tmp_path / "sharded.py"
    program.write_text(SHARDED)
    out = io.StringIO()
    res = demo.run_section_in_child(program, ("devices", 1, 2), out)
    assert res.ok, res.error
    assert out.getvalue() == "    | 2 [2. 4.]\n"          # [0+2, 1+3]: psum of the halves
    [compile_] = [c for k, c in res.events if k == "compile"]
    assert (compile_["fun"], compile_["calls"]) == ("total", 3)
    assert compile_["collectives"] == [["all-reduce add", 8]]   # 2 float32 per device
    lines = demo.underneath(res)
    assert "    collectives total: 3 calls x 1 (all-reduce add x1), 8 B per device per " \
        "call" in lines
    assert "    compiles    none" not in lines and "    transfers   none" not in lines
    # x, a NumPy array, goes to the devices on each of the 3 calls
    assert any(ln.endswith("host -> cpu:0: 3 (3 implicit), 48 B") for ln in lines), lines
    assert {d for d, *_ in res.memory} >= {"CpuDevice(id=0)", "CpuDevice(id=1)"}


def test_demo_child_failure_is_reported_with_the_traceback(tmp_path):
    import io
    from jaxlite.tools import demo

    program = tmp_path / "bad.py"
    program.write_text("print('before')\nraise ValueError('broken on purpose')\n")
    out = io.StringIO()
    res = demo.run_section_in_child(program, ("devices", 1, 2), out)
    assert not res.ok
    assert res.error.splitlines()[-1] == "ValueError: broken on purpose"
    assert out.getvalue() == "    | before\n"

"""The command line (``python -m jaxlite lint|doctor``) on paths that are not plain Python
files: named pipes, devices, directories, missing paths, unwritable report paths.  It must
never hang (opening a named pipe for reading waits for a writer), must say what the path is,
and must find a bad report path before the program runs.  Usage errors exit with status 2.

A hang is possible only where a pipe is involved: those run in a subprocess with a timeout;
the rest call ``main([...])`` in this process.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxlite.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
HANG = 20   # seconds: far above a normal run of either command (about 2 s)

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")

BAD = "import jax\nx = jax.numpy.zeros(2)\nx.at[0].set(1)\n"   # one JL001 finding


def cli(*args, cwd=None):
    """``python -m jaxlite ARGS`` in a subprocess; raises TimeoutExpired on a hang."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, "-m", "jaxlite", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=HANG)


def marker_script(tmp_path, body="") -> tuple[Path, Path]:
    """A script that writes a marker file first thing, then runs ``body``."""
    marker = tmp_path / "marker"
    script = tmp_path / "prog.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + textwrap.dedent(body))
    return script, marker


# ---- lint ----------------------------------------------------------------------------

@needs_fifo
def test_lint_named_pipe_is_refused_not_read(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    p = cli("lint", str(fifo))
    assert p.returncode == 2
    assert p.stderr.strip() == (f"jaxlite lint: {fifo} is a named pipe (FIFO), not a regular "
                                f"file; give Python files or directories")


def test_lint_device_is_refused(capsys):
    assert main(["lint", os.devnull]) == 2
    err = capsys.readouterr().err
    assert f"{os.devnull} is a character device, not a regular file" in err


@needs_fifo
def test_lint_directory_skips_what_is_not_a_regular_file_with_a_note(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "m.py").write_text(BAD)
    os.mkfifo(tmp_path / "pkg" / "pipe.py")
    (tmp_path / "pkg" / "gone.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "pkg" / "dir.py").mkdir()          # a directory named *.py: walked, not read
    (tmp_path / "pkg" / "dir.py" / "n.py").write_text(BAD)
    p = cli("lint", "pkg", cwd=tmp_path)
    assert p.returncode == 1, p.stderr                   # the findings, not a usage error
    found = sorted(ln.split(":")[0] for ln in p.stdout.splitlines())
    assert found == ["pkg/dir.py/n.py", "pkg/sub/m.py"]
    assert p.stderr.splitlines() == [
        "jaxlite lint: skipped pkg/gone.py: pkg/gone.py is a symbolic link to a missing file",
        "jaxlite lint: skipped pkg/pipe.py: it is a named pipe (FIFO), not a regular file"]


def test_lint_help_states_the_exit_statuses(capsys):
    with pytest.raises(SystemExit) as e:
        main(["lint", "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 clean, 1 findings, 2 usage errors" in out
    assert "not a regular file or directory (a named pipe, a device)" in out


# ---- doctor: what SCRIPT may be ------------------------------------------------------

@needs_fifo
def test_doctor_named_pipe_and_device_are_refused(tmp_path, capsys):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    assert main(["doctor", str(fifo)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"jaxlite doctor: {fifo} is a named pipe (FIFO), not a regular file; give a Python "
        f"script or a directory with __main__.py")
    assert main(["doctor", os.devnull]) == 2
    assert f"{os.devnull} is a character device" in capsys.readouterr().err


def test_doctor_directory_without_main_says_what_it_expects(tmp_path, capsys):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "prog.py").write_text("print('hi')\n")
    assert main(["doctor", str(d)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"jaxlite doctor: {d} is a directory without __main__.py; give a script or a "
        f"directory with __main__.py")


def test_doctor_runs_a_directory_main_as_python_does(tmp_path, capsys):
    d = tmp_path / "app"
    d.mkdir()
    (d / "helper.py").write_text("VALUE = 41\n")
    (d / "__main__.py").write_text(textwrap.dedent("""\
        import sys
        import helper                      # the directory is first on sys.path
        import jaxlite.numpy as jnp
        print("argv", sys.argv, "value", int(jnp.asarray(helper.VALUE) + 1))
        """))
    assert main(["doctor", "-q", str(d) + os.sep, "x"]) == 0
    out = capsys.readouterr().out
    assert f"argv [{str(d) + os.sep!r}, 'x'] value 42" in out
    # the same line as `python DIR x` prints
    py = subprocess.run([sys.executable, str(d) + os.sep, "x"], capture_output=True,
                        text=True, timeout=HANG)
    assert py.stdout.splitlines()[0] in out.splitlines()


def test_doctor_missing_script_names_the_path(tmp_path, capsys):
    assert main(["doctor", str(tmp_path / "nope.py")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"jaxlite doctor: no such file or directory: {tmp_path / 'nope.py'}")


# ---- doctor: report paths are checked before the program runs -----------------------

@pytest.mark.parametrize("option", ["--json", "--html"])
@pytest.mark.parametrize("case", ["missing_dir", "is_dir", "parent_is_file", "unwritable"])
def test_doctor_bad_report_path_is_found_before_the_script_runs(tmp_path, capsys,
                                                                 monkeypatch, option, case):
    script, marker = marker_script(tmp_path)
    if case == "missing_dir":
        out, why = tmp_path / "out" / "r.x", f"the directory {tmp_path / 'out'} does not exist"
    elif case == "is_dir":
        (tmp_path / "out").mkdir()
        out, why = tmp_path / "out", "the path is a directory; give a file name"
    elif case == "parent_is_file":
        out, why = script / "r.x", f"{script} is a regular file, not a directory"
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        real_access = os.access
        # as root every directory is writable: ask os.access about this one as if not
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: (
            False if Path(p) == locked and mode & os.W_OK else real_access(p, mode, **kw)))
        out, why = locked / "r.x", f"the directory {locked} is not writable"
    status = main(["doctor", option, str(out), str(script)])
    assert status == 2
    assert not marker.exists(), "the script ran although its report could not be written"
    assert capsys.readouterr().err.strip() == f"jaxlite doctor: {option} {out}: {why}"


def test_doctor_json_and_html_on_one_file_is_refused(tmp_path, capsys):
    script, marker = marker_script(tmp_path)
    out = tmp_path / "r.out"
    assert main(["doctor", "--json", str(out), "--html", str(out), str(script)]) == 2
    assert not marker.exists()
    assert "--json and --html name the same file" in capsys.readouterr().err


def test_doctor_relative_report_path_survives_a_chdir(tmp_path, monkeypatch, capsys):
    (tmp_path / "elsewhere").mkdir()
    script, marker = marker_script(tmp_path, "import os\nos.chdir('elsewhere')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "-q", "--json", "r.json", "prog.py"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["status"]["ok"]
    assert not (tmp_path / "elsewhere" / "r.json").exists()


def test_doctor_report_that_cannot_be_written_after_all_is_an_error_not_a_traceback(
        tmp_path, capsys):
    # the program removes the report's directory: the check passed, the write fails
    (tmp_path / "out").mkdir()
    script, marker = marker_script(
        tmp_path, f"import shutil\nshutil.rmtree({str(tmp_path / 'out')!r})\n")
    out = tmp_path / "out" / "r.json"
    assert main(["doctor", "-q", "--json", str(out), str(script)]) == 1
    cap = capsys.readouterr()
    assert "findings: none" in cap.out            # the text report is still printed
    assert cap.err.startswith(f"jaxlite doctor: cannot write the report (--json) to {out}: ")


def test_doctor_help_states_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Exit status: the program's own (1 when it raised); 2 for usage errors" in out
    assert "a directory with a __main__.py" in out


# ---- doctor: the program's traceback is the program's ---------------------------------

PROGRAMS = {
    "raises": ("prog.py", """\
        import jaxlite.numpy as jnp
        def inner(x):
            return jnp.reshape(x, (7,))     # raises inside jaxlite: its frames stay
        def outer():
            try:
                {}["k"]
            except KeyError:
                inner(jnp.ones(3))
        outer()
        """),
    "syntax": ("prog.py", "x = (1,\ndef f(:\n"),
    "directory": ("app" + os.sep, "raise RuntimeError('from __main__')\n"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_doctor_traceback_is_the_one_python_prints(tmp_path, name):
    target, source = PROGRAMS[name]
    if target.endswith(os.sep):
        (tmp_path / target).mkdir()
        (tmp_path / target / "__main__.py").write_text(textwrap.dedent(source))
    else:
        (tmp_path / target).write_text(textwrap.dedent(source))
    py = subprocess.run([sys.executable, target], cwd=tmp_path, capture_output=True,
                        text=True, timeout=HANG)
    assert py.returncode == 1 and py.stderr
    # `python DIR` shows runpy's own frames first (a CPython quirk); the doctor does not
    want = re.sub(r'^  File "<frozen runpy>".*\n', "", py.stderr, flags=re.M)
    p = cli("doctor", "-q", "--json", "r.json", target, cwd=tmp_path)
    assert p.returncode == 1
    assert want in p.stderr, p.stderr        # frame by frame, Python's own traceback
    files = set(re.findall(r'^\s*File "([^"]+)"', p.stderr, re.M))
    assert not {f for f in files if "runpy" in f or os.sep + "tools" + os.sep in f
                or f.endswith(os.path.join("jaxlite", "__main__.py"))}, files
    report = json.loads((tmp_path / "r.json").read_text())   # still written
    assert report["status"]["ok"] is False and report["status"]["exit_code"] == 1

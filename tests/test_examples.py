"""The chapter's example programs (examples/), ``python -m jaxlite demo`` and the benchmark
script: each runs in a subprocess and prints the right values -- the same values real JAX
prints for the same program with only the imports changed, except where noted."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import jaxlite

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ENV = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONWARNINGS="default")


def run_py(args, cwd=ROOT, timeout=120):
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                       env=ENV, timeout=timeout)
    return p


def run_example(name):
    p = run_py([str(EXAMPLES / name)])
    assert p.returncode == 0, f"{name} failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout.splitlines(), p.stderr


def to_real_jax(source: str) -> str:
    """The example's program for real JAX: the imports changed, and ``x.device()`` (the
    chapter's old call form, which JAX removed) written as the property ``x.device``."""
    source = re.sub(r"^import jaxlite as jax$", "import jax", source, flags=re.M)
    source = re.sub(r"^import jaxlite\.numpy as jnp$", "import jax.numpy as jnp", source,
                    flags=re.M)
    return source.replace(".device())", ".device)")


def run_example_on_jax(name, tmp_path):
    pytest.importorskip("jax")
    src = to_real_jax((EXAMPLES / name).read_text(encoding="utf-8"))
    path = tmp_path / name
    path.write_text(src, encoding="utf-8")
    p = run_py([str(path)])
    assert p.returncode == 0, f"{name} on real JAX failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout.splitlines()


def assert_in_order(lines, expected):
    """Every entry of ``expected`` matches a line of ``lines``, in this order.  An entry is
    an exact line, or a callable predicate on a line."""
    i = 0
    for want in expected:
        match = want if callable(want) else (lambda ln, w=want: ln == w)
        while i < len(lines) and not match(lines[i]):
            i += 1
        assert i < len(lines), f"missing {want!r} (in order) in output:\n" + "\n".join(lines)
        i += 1


def starts(prefix):
    f = lambda ln: ln.startswith(prefix)  # noqa: E731
    f.__name__ = f"startswith({prefix!r})"
    return f


# ---- 3.1 arrays ---------------------------------------------------------------------

S31 = ["[100   2   3]", starts("TypeError: "), "[100   2   3]",
       "[1 2 3]", "[ 1 12  3]", "[ 1  2 15]", "1"]


def test_section_3_1():
    lines, _ = run_example("section_3_1_arrays.py")
    assert_in_order(lines, S31)
    err = next(ln for ln in lines if ln.startswith("TypeError"))
    assert "x.at[" in err and ".set(" in err  # R1.2: the message says what to write


def test_section_3_1_same_as_real_jax(tmp_path):
    assert_in_order(run_example_on_jax("section_3_1_arrays.py", tmp_path), S31)


# ---- 3.2 devices ----------------------------------------------------------------------

S32_COMMON = ["[CpuDevice(id=0)]",
              starts("RuntimeError: Unknown backend: 'gpu'"),
              "No GPU on this machine: continuing on the CPU device instead."]
S32_AFTER = ["{CpuDevice(id=0)}", "[11 22 33]",
             lambda ln: ln.startswith("transfer guard:") and
             "Disallowed host-to-device transfer" in ln]


def test_section_3_2():
    lines, err = run_example("section_3_2_devices.py")
    # str(device) is cpu:0 as in real JAX (the chapter's old JAX printed TFRT_GPU_0)
    assert_in_order(lines, S32_COMMON + ["cpu:0", "cpu:0"] + S32_AFTER)
    # x.device() still works, with a DeprecationWarning naming the current form
    assert "DeprecationWarning" in err and "x.device" in err
    if hasattr(jaxlite.lax, "scan"):
        assert "same trajectory: True" in lines
    else:
        assert any(ln.startswith("skipped:") and "lax.scan" in ln for ln in lines)
    if hasattr(jaxlite, "vmap"):
        assert "same rows: True" in lines
    else:
        assert any(ln.startswith("skipped:") and "vmap" in ln for ln in lines)


def test_section_3_2_same_as_real_jax(tmp_path):
    lines = run_example_on_jax("section_3_2_devices.py", tmp_path)
    assert_in_order(lines, S32_COMMON + ["cpu:0", "cpu:0"] + S32_AFTER)
    # the loop vs scan / vmap programs are valid JAX and agree with the loops there
    assert "same trajectory: True" in lines and "same rows: True" in lines


# ---- 3.3 jit --------------------------------------------------------------------------

S33_HEAD = ["38.0", "38.0"]
S33_TAIL = ["Python print: runs while tracing, x has shape (3,)",
            "jax.debug.print: runs on every call, x = [1. 2. 3.]", "[2. 4. 6.]",
            "jax.debug.print: runs on every call, x = [1. 2. 3.]", "[2. 4. 6.]",
            "6", "compiled versions of g: 1", "10", "compiled versions of g: 2"]


def check_3_3(lines):
    assert lines[:2] == S33_HEAD  # R3.6: 38.0, not the chapter's 37.0
    assert "37.0" not in lines
    assert_in_order(lines, S33_TAIL)
    # R3.3: the Python print inside jit ran once (while tracing), debug.print twice
    assert sum(ln.startswith("Python print") for ln in lines) == 1
    assert sum(ln.startswith("jax.debug.print") for ln in lines) == 2


def test_section_3_3():
    lines, _ = run_example("section_3_3_jit.py")
    check_3_3(lines)
    # R3.2: the compiled program's text is printed between the result and the rest
    text = "\n".join(lines)
    assert "dot_general" in text and ("reduce_sum" in text or "reduce-add" in text)


def test_section_3_3_same_as_real_jax(tmp_path):
    check_3_3(run_example_on_jax("section_3_3_jit.py", tmp_path))


# ---- 3.5 pitfalls ---------------------------------------------------------------------

S35 = ["Pitfall 1: a discarded .at[] update",
       "  without assignment: [0. 0. 0. 0. 0.]",
       "  with assignment:    [0. 1. 2. 3. 4.]",
       "Pitfall 2: unjitted steps with host data",
       "  same result: True",
       "Pitfall 3: a new shape every call recompiles every call",
       "  compiling total for shape (3,)",
       "  compiling total for shape (4,)",
       "  compiling total for shape (5,)",
       "  compiling total for shape (6,)",
       "  padded to 8:",
       "  compiling total for shape (8,)",
       "  results: [3.0, 4.0, 5.0, 6.0]",
       "  compiling prefix_total for n = 3",
       "  compiling prefix_total for n = 4",
       "  static n: [3.0, 4.0, 3.0, 4.0]"]


def without_timings(lines):
    return [ln for ln in lines if "timings vary" not in ln]


def test_section_3_5():
    lines, _ = run_example("section_3_5_pitfalls.py")
    assert without_timings(lines) == S35


def test_section_3_5_same_as_real_jax(tmp_path):
    assert without_timings(run_example_on_jax("section_3_5_pitfalls.py", tmp_path)) == S35


# ---- the demo and the command line ----------------------------------------------------

def test_every_section_has_an_example():
    names = sorted(p.name for p in EXAMPLES.glob("section_*.py"))
    assert [n[:11] for n in names] == ["section_3_1", "section_3_2", "section_3_3",
                                       "section_3_5"]


def test_demo_runs_every_section_and_explains():
    p = run_py(["-m", "jaxlite", "demo"])
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "9 of 9 programs ran" in out and "FAILED" not in out
    # the timed lessons on the default device (examples/device_lessons.py)
    lessons = out.split("== The chapter's lessons, timed")[1].split("\n== ")[0]
    assert "|    8 calls, lengths 1000..1007: 8 compiles; padded to 1024: 1 compile(s)" \
        in lessons and "|    same result: True" in lessons, lessons
    # the several-device section ran on 4 devices, its losses equal to one device's
    assert "| 4 CPU devices" in out and "largest difference" in out, out
    # the several-process section: 2 MPI processes of 2 devices, the same losses
    assert "| [0] process 0: loss over 20 steps on 4 devices (2 processes): 2.344856 -> " \
        "1.577972" in out, out
    assert "| [1] process 1: loss over 20 steps" in out
    check_child_sections(out)
    for section in ("== 3.1", "== 3.2", "== 3.3", "== 3.5"):
        assert section in out
    assert "| 38.0" in out and "| [100   2   3]" in out and "| [CpuDevice(id=0)]" in out
    # R3.4: the recompile of g and its reason are visible
    assert re.search(r"g\(x: i32\[4\]\)\s+argument x shape \(3,\) -> \(4,\)", out), out
    assert re.search(r"f\(x: f32\[3\], y: f32\[3\]\)\s+first call", out)
    # static arguments: their value change is the reason
    assert "static argument n value 3 -> 4" in out
    # transfers (explicit device_put, implicit NumPy operands), memory, warnings
    assert re.search(r"host -> \S+: \d+ \((\d+ explicit, )?\d+ implicit\)", out)
    assert "peak" in out and "in use once the program's variables are dropped" in out
    assert "DeprecationWarning" in out
    assert "eager ops" in out and "scatter" in out
    if not (hasattr(jaxlite.lax, "scan") and hasattr(jaxlite, "vmap")):
        assert "pending" in out


def check_child_sections(out):
    """The several-device and several-process programs, run in processes of their own,
    report those processes' compiles, collectives and transfers; the chapter's sections
    leave nothing in use once their variables are dropped."""
    sharding = out.split("== Several devices")[1].split("== Several processes")[0]
    assert re.search(r"compiles    local_step\(.*first call", sharding), sharding
    assert ("collectives local_step: 20 calls x 5 (all-reduce add x5), 38.4 KB per device "
            "per call") in sharding
    assert "transfers   none" not in sharding and "eager ops   none" not in sharding
    processes = out.split("== Several processes")[1].split("== summary")[0]
    for rank in (0, 1):
        assert f"\n    process {rank}:\n" in processes
    assert processes.count("collectives local_step: 20 calls x 5 (all-reduce add x5)") == 2
    # each of the step's 5 all-reduces crosses processes once per call: 20 x 5 MPI calls
    assert len(re.findall(r"across 2 processes: \d+ \(all-reduce x100,", processes)) == 2, \
        processes
    for section in ("== 3.1", "== 3.2", "== 3.3", "== 3.5"):
        block = out.split(section)[1].split("\n== ")[0]
        assert "0 B in use once the program's variables are dropped (0 live arrays)" in block


def test_demo_one_section_and_bad_section():
    p = run_py(["-m", "jaxlite", "demo", "--section", "3.3"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 of 1 program ran" in p.stdout and "== 3.1" not in p.stdout
    p = run_py(["-m", "jaxlite", "demo", "--section", "9.9"])
    assert p.returncode == 2 and "unknown section" in p.stderr and "3.3" in p.stderr


def test_demo_reports_a_failing_example(tmp_path):
    (tmp_path / "section_1_1_ok.py").write_text('"""1.1 fine"""\nprint("hello")\n')
    (tmp_path / "section_1_2_bad.py").write_text(
        '"""1.2 broken"""\nimport jaxlite.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1\n')
    p = run_py(["-m", "jaxlite", "demo", "--examples", str(tmp_path)])
    assert p.returncode == 1
    assert "| hello" in p.stdout and "FAILED" in p.stdout and "TypeError" in p.stdout
    assert "1 of 2 programs ran" in p.stdout


def test_cli_needs_a_command():
    p = run_py(["-m", "jaxlite"])
    assert p.returncode == 2 and "demo" in p.stderr
    p = run_py(["-m", "jaxlite", "--help"])
    assert p.returncode == 0 and "demo" in p.stdout


# ---- the benchmark script -------------------------------------------------------------

@pytest.mark.slow     # the fast tier runs the bench smoke test of tests/test_bench_smoke.py
def test_bench_quick_smoke():
    results = ROOT / "bench" / "RESULTS.md"
    before = results.stat().st_mtime_ns if results.exists() else None
    # (three libraries, each in a process of its own: minutes on a loaded machine)
    p = run_py([str(ROOT / "bench" / "run.py"), "--quick", "--no-write"], timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    try:
        import jax  # noqa: F401
        has_jax = True
    except ImportError:
        has_jax = False
    for w in ("W1", "W2", "W3", "W8"):
        row = next(ln for ln in out.splitlines() if ln.startswith(f"| {w} "))
        assert row.rstrip().endswith("| yes |"), row  # every library computed the same
        assert row.count("n/a") == (0 if has_jax else 3), row
    assert "QUICK" in out and "- CPU: " in out and "Copy bandwidth" in out
    assert "GB/s" in out
    after = results.stat().st_mtime_ns if results.exists() else None
    assert before == after  # --no-write wrote nothing


# ---- examples/numerics.py: PCA, Gaussian-process regression, least squares (issue 12) ----

def _numbers(line):
    return [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)]


def test_numerics_example_runs_and_is_consistent():
    lines, _ = run_example("numerics.py")
    text = "\n".join(lines)
    agree = next(ln for ln in lines if "eigh and svd agree" in ln)
    assert _numbers(agree)[-1] < 1e-5, agree
    lml = _numbers(next(ln for ln in lines if "log marginal likelihood" in ln))
    assert lml[1] < lml[0] - 10, text
    lstsq = _numbers(next(ln for ln in lines if ln.strip().startswith("lstsq")))[:3]
    polyfit = _numbers(next(ln for ln in lines if ln.strip().startswith("polyfit")))
    assert max(abs(a - b) for a, b in zip(lstsq, polyfit)) < 1e-3, (lstsq, polyfit)
    assert max(abs(a - b) for a, b in zip(lstsq, [1.5, -0.5, 0.25])) < 0.05, lstsq


@pytest.mark.slow
def test_numerics_example_matches_real_jax(tmp_path):
    ours, _ = run_example("numerics.py")
    theirs = run_example_on_jax("numerics.py", tmp_path)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        if "eigh and svd agree" in a:        # rounding-level residues, both below 1e-5
            continue
        na, nb = _numbers(a), _numbers(b)
        assert re.sub(r"-?\d+\.\d+", "#", a) == re.sub(r"-?\d+\.\d+", "#", b), (a, b)
        assert all(abs(x - y) <= 2e-3 + 2e-3 * abs(y) for x, y in zip(na, nb)), (a, b)

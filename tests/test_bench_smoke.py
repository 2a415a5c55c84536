"""bench/run.py keeps working: a --quick run for jaxlite and NumPy prints every workload row
(W1-W8) with agreeing checksums, writes nothing, and the report's ratio and target tables
are computed from the workers' numbers.  W6/W7's functions keep their defined sizes (40 and
10 operations in real JAX's jaxpr).  Speed itself is never asserted."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
ROW_IDS = ("W1", "W2", "W3", "W4", "W5", "W6 cold", "W6 warm", "W7", "W8")


def _load(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


def _row(out: str, row_id: str) -> list[str]:
    line = next(ln for ln in out.splitlines() if ln.startswith(f"| {row_id} "))
    return [c.strip() for c in line.strip().strip("|").split("|")]


@pytest.mark.slow      # make test-slow (CI runs it): keeps make test under 10 min
def test_quick_run_prints_every_workload():
    results = BENCH / "RESULTS.md"
    before = results.stat().st_mtime_ns if results.exists() else None
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--no-write",
                        "--libs", "jaxlite,numpy"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "QUICK" in out and "Copy bandwidth" in out and "FAILED" not in out
    for row_id in ROW_IDS:
        # workload | unit | jaxlite | NumPy | jaxlite / NumPy | agree
        cells = _row(out, row_id)
        assert len(cells) == 6, cells
        assert cells[-1] == "yes", cells
        if row_id == "W6 warm" and cells[2].startswith("n/a"):
            assert cells[2] == "n/a (no persistent cache yet)", cells
            assert cells[4] == "n/a", cells
        else:
            assert float(cells[2]) > 0 and float(cells[3]) > 0, cells
            assert cells[4].endswith("x"), cells
    unit = {row_id: _row(out, row_id)[1] for row_id in ROW_IDS}
    assert unit["W1"] == "us" and unit["W4"] == "ms" and unit["W7"] == "MB"
    assert "Targets" not in out  # JAX was not run: no jaxlite / JAX ratios
    after = results.stat().st_mtime_ns if results.exists() else None
    assert before == after  # --no-write wrote nothing


def _fake_runs(run):
    def res(t, **kw):
        return {"median_s": t, "min_s": t, "max_s": t, "repeats": 1, "check": 1.0, **kw}
    base = {key: res(1e-3) for key, *_ in run.WORKLOADS if key not in ("W6_warm", "W7")}
    w7 = {"median_peak_bytes": 6e8, "peak_bytes": 6e8, "input_bytes": 2e8,
          "added_bytes": 4e8, "method": "m", "check": 1.0}
    lite = dict(base, W1=res(20e-6), W6_warm={"note": "n/a (no persistent cache yet)"}, W7=w7)
    jax = dict(base, W1=res(10e-6), W6_warm=res(2e-3), W7=dict(w7, median_peak_bytes=4e8))
    return {"jaxlite": {"version": "0", "results": lite},
            "jax": {"version": "0", "results": jax}}


def test_report_ratios_and_targets():
    run = _load("run")
    text = run.report(_fake_runs(run), run.machine(), run.QUICK, True, "now")
    cells = _row(text, "W1")
    assert cells[2:5] == ["20", "10", "2.00x"], cells
    assert _row(text, "W7")[2:5] == ["600", "400", "1.50x"]
    warm = _row(text, "W6 warm")
    assert warm[2] == "n/a (no persistent cache yet)" and warm[4] == "n/a"
    targets = text.split("## Targets")[1]
    # a missed target names its section of bench/PROFILES.md when there is one
    profiled = run._profiled()
    assert "W1" in profiled and "W3" not in profiled
    assert _row(targets, "W1")[1:] == ["<= 1.0", "2.00x", "NO (profile: PROFILES.md, W1)"]
    assert _row(targets, "W3")[1:] == ["<= 1.0", "1.00x", "yes"]
    assert _row(targets, "W6 warm")[2:] == ["n/a", "not measured"]


def test_fresh_workload_sizes_match_definitions(rjax):
    fresh = _load("_workloads_fresh")
    import jax.numpy as jnp
    import numpy as np
    x = np.ones((4, 4), np.float32)
    assert len(rjax.make_jaxpr(lambda x: fresh.f40(jnp, x))(x).eqns) == 40
    assert len(rjax.make_jaxpr(lambda x: fresh.chain10(jnp, x))(x[0]).eqns) == 10
    assert fresh.W6_SHAPE["full"] == (512, 512) and fresh.W7_N["full"] == 50_000_000


@pytest.mark.parametrize("lib", ["jaxlite", "numpy"])
def test_w7_counts_input_and_output(lib):
    """A W7 sample in a fresh process: the peak is at least input + output (4 MB each)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, str(BENCH / "_workloads_fresh.py"), "W7", lib,
                        "--quick"], capture_output=True, text=True, env=env, timeout=240)
    assert p.returncode == 0, p.stderr
    import json
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["input_bytes"] == 4_000_000
    assert r["peak_bytes"] >= 8_000_000 and r["peak_bytes"] == r["input_bytes"] + r[
        "added_bytes"]


# ---- bench/_workloads_tpu.py: the accelerator workloads (issue 32) -----------------------

def test_accelerator_report_ratios_goals_and_checks():
    tpu = _load("_workloads_tpu")
    lite = {"device": "TPU_0", "open": {"median_s": 7.0},
            "T1": {"median_s": 60e-6, "check": 38.0},
            "T2": {"median_s": 4e-3, "check": 1.0},
            "T7": {"median_s": 8e-3, "rate": 150.0, "check": 5.0},
            "H2D": {"median_s": 0.05, "rate": 5.0},
            "T0_cold": {"median_s": 0.1, "check": 2.0},
            "T0_warm": {"median_s": 0.02, "check": 2.0},
            "T8": {"error": "boom"}}
    jx = {"open": {"median_s": 6.8}, "T1": {"median_s": 120e-6, "check": 38.0},
          "T2": {"median_s": 3.3e-3, "check": 1.5},
          "T7": {"median_s": 7e-3, "rate": 165.0, "check": 5.0},
          "H2D": {"median_s": 0.045, "rate": 5.5}, "T0_cold": {"median_s": 0.09},
          "T8": {"median_s": 290e-6}}
    text = tpu.report({"jaxlite": lite, "jax": jx}, "tpu", "now", False)
    rows = {ln.split("|")[1].split()[0]: [c.strip() for c in ln.strip().strip("|").split("|")]
            for ln in text.splitlines() if ln.startswith("| T") or ln.startswith("| H")}
    assert rows["T1"][2:7] == ["60", "120", "0.50x", "<= 1.0x", "yes"], rows["T1"]
    assert rows["T1"][7] == "yes"
    # a device-bound time goal missed, and checksums that disagree
    assert rows["T2"][4:7] == ["1.21x", "<= 1.05x", "NO"], rows["T2"]
    assert rows["T2"][7].startswith("NO (1 vs 1.5)"), rows["T2"]
    # rates: higher is better
    assert rows["T7"][2:7] == ["150", "165", "0.91x", ">= 0.95x", "NO"], rows["T7"]
    assert rows["H2D"][4:7] == ["0.91x", ">= 0.95x", "NO"], rows["H2D"]
    assert rows["T8"][2] == "n/a" and rows["T8"][6] == "n/a"
    assert "jaxlite T8: error: boom" in text
    assert "warm-cache first result is 0.20x its cold one" in text
    assert text.startswith("## Accelerator (T0-T8)")


def test_results_sections_kept_and_replaced(tmp_path):
    run, tpu = _load("run"), _load("_workloads_tpu")
    path = tmp_path / "RESULTS.md"
    path.write_text("# r\n\n## Results\nold\n\n## Accelerator (T0-T8)\nT old\n\n"
                    "## Notes\nn\n", encoding="utf-8")
    tpu.write_section("## Accelerator (T0-T8)\n\nT new\n", path)
    text = path.read_text(encoding="utf-8")
    assert "T old" not in text and text.count("## Accelerator") == 1
    assert "## Notes\nn" in text and text.rstrip().endswith("T new")
    kept = run._kept_sections(path)
    assert kept == "\n## Accelerator (T0-T8)\n\nT new\n"


def test_multi_and_accelerator_scripts_share_one_section_writer(tmp_path):
    """bench/_workloads_multi.py and _workloads_tpu.py write through bench/_sections.py: a
    missing file is created, a second section is appended, a rewrite replaces only its own."""
    sections, multi = _load("_sections"), _load("_workloads_multi")
    assert Path(multi._sections.__file__) == BENCH / "_sections.py"
    path = tmp_path / "RESULTS.md"
    sections.write_section("## Several devices (W9, W10)\n\nW9 a\n", path)
    sections.write_section("## Accelerator (T0-T8)\n\nT a\n", path)
    sections.write_section("## Several devices (W9, W10)\n\nW9 b\n", path)
    text = path.read_text(encoding="utf-8")
    assert text.count("## Several devices") == 1 and "W9 a" not in text
    assert text.index("## Accelerator") < text.index("W9 b") and "T a" in text


@pytest.mark.slow
def test_accelerator_quick_run_on_xla_cpu():
    """The whole driver, jaxlite only, on the XLA:CPU plugin at quick sizes: every row
    measured, nothing written."""
    pytest.importorskip("xla_plugins.xla_cpu_pjrt")
    results = BENCH / "RESULTS.md"
    before = results.read_text(encoding="utf-8")
    p = subprocess.run([sys.executable, str(BENCH / "_workloads_tpu.py"), "--platform",
                        "xla_cpu", "--libs", "jaxlite", "--quick"], capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    tpu = _load("_workloads_tpu")
    for key, title, *_ in tpu.ROWS:
        label = title if key == "open" else f"{key} {title}"
        line = next(ln for ln in p.stdout.splitlines() if ln.startswith(f"| {label} |"))
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert float(cells[2].replace(",", "")) > 0, cells
    assert "error" not in p.stdout
    assert results.read_text(encoding="utf-8") == before

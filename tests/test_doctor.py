"""jaxlite doctor (tools/doctor.py) and jaxlite.experimental.pad_to_bucket."""
from __future__ import annotations

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
from jaxlite.experimental import pad_to_bucket


# ---- pad_to_bucket ---------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis,buckets,bucket", [
    ((3,), 0, (4, 8), 4),
    ((5,), 0, (8, 4), 8),          # any order
    ((4,), 0, (4, 8), 4),          # exact fit: no padding
    ((2, 3), 1, (2, 16), 16),
    ((2, 3), -1, [3], 3),
    ((6, 2), 0, (2, 4, 8, 16), 8),
    ((0, 2), 0, (1,), 1),
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_pad_to_bucket_values(shape, axis, buckets, bucket, dtype):
    x_np = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    padded, mask = pad_to_bucket(jnp.asarray(x_np), axis, buckets)
    ax = axis % len(shape)
    n = shape[ax]
    pad = [(0, 0)] * len(shape)
    pad[ax] = (0, bucket - n)
    np.testing.assert_array_equal(np.asarray(padded), np.pad(x_np, pad))
    assert padded.dtype == x_np.dtype and padded.shape[ax] == bucket
    assert mask.dtype == np.bool_ and mask.shape == (bucket,)
    np.testing.assert_array_equal(np.asarray(mask), np.arange(bucket) < n)


def test_pad_to_bucket_keeps_weak_type_and_fill_value():
    padded, _ = pad_to_bucket(jnp.asarray(np.arange(3.0, dtype=np.float32)), 0, (5,),
                              fill_value=-1)
    np.testing.assert_array_equal(np.asarray(padded), [0, 1, 2, -1, -1])
    weak = jnp.array([1.0, 2.0]) * 2.0   # strong f32 stays strong
    assert pad_to_bucket(weak, 0, (4,))[0].weak_type == weak.weak_type


def test_pad_to_bucket_under_jit_bounds_compiles():
    compiles = []

    @jax.jit
    def mean_sq(batch, mask):
        compiles.append(batch.shape)
        per = jnp.sum(batch ** 2, axis=1)
        return jnp.sum(jnp.where(mask, per, 0.0)) / jnp.sum(mask)

    outs = []
    for n in (37, 50, 64, 29, 3):
        batch = jnp.asarray(np.full((n, 4), 2.0, np.float32))
        outs.append(float(mean_sq(*pad_to_bucket(batch, 0, (32, 64)))))
    assert outs == [16.0] * 5
    assert compiles == [(64, 4), (32, 4)]
    # and inside a jit (shape static there)
    p, m = jax.jit(lambda x: pad_to_bucket(x, 0, (8,)))(jnp.ones(5))
    np.testing.assert_array_equal(np.asarray(p), [1, 1, 1, 1, 1, 0, 0, 0])
    assert int(jnp.sum(m)) == 5


@pytest.mark.parametrize("x,axis,buckets,match", [
    (np.ones(9, np.float32), 0, (4, 8), r"size 9.*\(4, 8\)"),
    (np.ones((2, 5), np.float32), 1, (3,), r"size 5.*\(3,\)"),
    (np.ones(3, np.float32), 0, (), "empty"),
    (np.ones(3, np.float32), 0, (4, 0), "positive"),
    (np.ones(3, np.float32), 0, (4.0,), "positive"),
    (np.ones(3, np.float32), 1, (4,), "out of bounds"),
])
def test_pad_to_bucket_errors(x, axis, buckets, match):
    with pytest.raises(ValueError, match=match):
        pad_to_bucket(jnp.asarray(x), axis, buckets)


def test_pad_to_bucket_rejects_list():
    with pytest.raises(TypeError):
        pad_to_bucket([1.0, 2.0], 0, (4,))


# ---- jaxlite doctor ----------------------------------------------------------------------

import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402
from pathlib import Path  # noqa: E402

from jaxlite import monitoring  # noqa: E402
from jaxlite.tools import doctor  # noqa: E402
from jaxlite.tools._doctor_html import render_html  # noqa: E402
from jaxlite.tools._doctor_report import bucket_analysis, format_text  # noqa: E402

CASES = Path(__file__).parent / "doctor_cases"
PLANTED = CASES / "pitfalls.py"
FIXED = CASES / "fixed.py"


def _planted_lines(path: Path) -> dict:
    """{code: line} of the ``# PLANTED: code, ...`` comments of a case script."""
    out = {}
    for i, text in enumerate(path.read_text().splitlines(), 1):
        m = re.search(r"# PLANTED: (.*)$", text)
        if m:
            for code in m.group(1).split(","):
                out[code.strip()] = i
    return out


@pytest.fixture(scope="module")
def planted_report():
    return doctor.diagnose(str(PLANTED))


@pytest.fixture(scope="module")
def fixed_report():
    return doctor.diagnose(str(FIXED))


def test_planted_pitfalls_each_reported_at_their_line(planted_report):
    r = planted_report
    assert r["status"]["ok"], r["status"]
    assert r["internal_errors"] == []
    want = _planted_lines(PLANTED)
    got = {(f["code"], f["line"]) for f in r["findings"]}
    for code, line in want.items():
        assert (code, line) in got, (code, line, got)
    reqs = {f["requirement"] for f in r["findings"]}
    assert {"R5.1", "R5.2", "R5.3", "R2.4"} <= reqs
    for f in r["findings"]:
        assert f["file"].endswith("pitfalls.py") and f["fix"] and f["source"]


def test_planted_finding_details(planted_report):
    by_code = {f["code"]: f for f in planted_report["findings"]}
    at = by_code["at-result-unused"]
    assert at["count"] == 5 and "x = x.at[i].set(v)" in at["fix"]
    assert "update" in by_code["eager-function"]["message"]
    assert "jax.jit(update)" in by_code["eager-function"]["fix"]
    assert by_code["repeated-transfer"]["count"] == 12
    assert "device_put" in by_code["repeated-transfer"]["fix"]
    rc = by_code["recompiles"]
    assert rc["count"] == 6 and "pad_to_bucket(batch, 0, (4, 8, 16))" in rc["fix"]
    assert "argument batch shape (3, 4) -> (5, 4)" in rc["message"]
    loop = by_code["loop-allocations"]
    assert "lax.scan" in loop["fix"] and loop["loop_line"] == loop["line"] - 1


def test_planted_jit_section(planted_report):
    (total,) = [j for j in planted_report["jit"] if j["name"] == "total"]
    assert total["calls"] == 6 and total["compiles"] == 6
    assert [m["reason"] for m in total["misses"]][:2] == [
        "first call", "argument batch shape (3, 4) -> (5, 4)"]
    b = total["buckets"]
    assert b["varying"] == [{"argument": "batch", "axis": 0, "sizes": [3, 5, 6, 7, 9, 12],
                             "buckets": [4, 8, 16]}]
    assert (b["compiles"], b["pow2_compiles"], b["max_compiles"]) == (6, 3, 1)
    assert total["compile_seconds"] > 0 and len(planted_report["compile_timeline"]) == 6


def test_planted_transfers_eager_memory(planted_report):
    r = planted_report
    h2d = [p for p in r["transfers"]["pairs"] if p["kind"] == "host_to_device"]
    assert h2d and h2d[0]["implicit"] == 12 and h2d[0]["bytes"] == 12 * 256 * 4
    top = r["eager"]["lines"][0]
    assert top["function"] == "update" and top["ops"] == 48 and top["executions"] == 12
    assert top["primitives"] == {"mul": 24, "tanh": 12, "sub": 12}
    dev = r["memory"]["devices"][0]
    assert dev["peak_bytes_in_use"] > 0 and dev["num_allocs"] > 0
    assert r["memory"]["timeline"]["cpu:0"]
    assert r["at"]["created"] == 5 and r["at"]["unused"][0]["count"] == 5


def test_fixed_script_has_no_finding(fixed_report):
    assert fixed_report["status"]["ok"]
    assert fixed_report["findings"] == [], format_text(fixed_report)
    assert "findings: none" in format_text(fixed_report)
    assert fixed_report["at"]["created"] == 5 and fixed_report["at"]["unused"] == []


def test_text_report_names_line_and_fix(planted_report):
    text = format_text(planted_report)
    line = _planted_lines(PLANTED)["at-result-unused"]
    assert f"pitfalls.py:{line}: [R5.1 at-result-unused]" in text
    assert text.count("fix: ") == len(planted_report["findings"])


def test_json_structure(planted_report, tmp_path):
    path = tmp_path / "r.json"
    doctor.write_json(planted_report, str(path))
    data = json.loads(path.read_text())
    assert set(data) == {"script", "argv", "status", "seconds", "findings", "jit",
                         "compile_timeline", "transfers", "eager", "memory", "at",
                         "annotations", "internal_errors"}
    for f in data["findings"]:
        assert set(f) >= {"requirement", "code", "file", "line", "source", "message", "fix",
                          "count"}
    assert set(data["memory"]) == {"devices", "lines", "loops", "timeline"}
    assert all(len(p) == 2 for p in data["memory"]["timeline"]["cpu:0"])


def test_html_self_contained(planted_report, tmp_path):
    page = render_html(planted_report)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert not re.search(r"""(src|href)\s*=|<script|<link|@import|url\(""", page)
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) == 3   # memory, compile timeline, transfers
    for s in svgs:
        ET.fromstring(s)
    assert "polyline" in svgs[0] and svgs[1].count("<rect") == 6
    assert "argument batch shape (3, 4) -&gt; (5, 4)" in svgs[1]
    assert page.count('class="finding"') == len(planted_report["findings"])


def test_cli_subprocess_json_html_and_argv(tmp_path):
    js, page = tmp_path / "r.json", tmp_path / "r.html"
    proc = subprocess.run(
        [sys.executable, "-m", "jaxlite", "doctor", "--json", str(js), "--html", str(page),
         str(PLANTED), "3"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "x: [0. 0. 0. 0. 0.]" in proc.stdout          # the program's own output
    assert "[R5.1 at-result-unused]" in proc.stdout
    assert "[R5.3 recompiles]" in proc.stdout
    data = json.loads(js.read_text())
    assert data["argv"] == ["3"]
    # 3 steps: below the per-step thresholds, so no eager/transfer/loop finding
    assert {f["code"] for f in data["findings"]} == {"at-result-unused", "recompiles"}
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_script_error_and_missing_file(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import jaxlite.numpy as jnp\nx = jnp.ones(3)\nraise ValueError('boom')\n")
    r = doctor.diagnose(str(bad))
    assert not r["status"]["ok"] and r["status"]["exit_code"] == 1
    assert "ValueError: boom" in r["status"]["error_summary"]
    assert "ValueError: boom" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):
        doctor.diagnose(str(tmp_path / "missing.py"))
    ns = type("A", (), {"script": str(tmp_path / "missing.py"), "args": [], "json": None,
                        "html": None, "quiet": False})
    assert doctor.run(ns) == 2


def test_doctor_leaves_no_listener_behind():
    before = list(monitoring._listeners)
    doctor.diagnose(str(FIXED))
    assert monitoring._listeners == before


def test_at_result_read_in_any_way_is_not_reported(tmp_path):
    prog = tmp_path / "reads.py"
    prog.write_text(
        "import numpy as np\nimport jaxlite as jax\nimport jaxlite.numpy as jnp\n"
        "x = jnp.zeros(4)\n"
        "a = x.at[0].set(1.0); print(a)\n"                    # host read
        "b = x.at[1].add(2.0); c = b + 1\n"                   # eager op
        "d = x.at[2].set(3.0); jax.jit(lambda v: v * 2)(d)\n"  # jit argument
        "e = x.at[3].set(4.0); np.asarray(e)\n"
        "x.at[0].multiply(5.0)\n"                             # the only lost one
        "del a, b, c, d, e\n")
    r = doctor.diagnose(str(prog))
    assert r["at"]["created"] == 5
    assert [(u["line"], u["method"]) for u in r["at"]["unused"]] == [(9, "multiply")]


def test_bucket_analysis_statics_and_dtypes_only():
    from jaxlite.core.avals import ShapedArray
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    key = lambda s, dt=f32: (None, ((ShapedArray(s, dt, False), None),), (), (), False)
    assert bucket_analysis([key((3,)), key((3,), i32)], ["x"]) is None
    b = bucket_analysis([key((n, 2)) for n in (1, 2, 3, 17, 17)], ["x"])
    assert b["compiles"] == 4 and b["pow2_compiles"] == 4 and b["max_compiles"] == 1
    assert b["varying"][0]["buckets"] == [1, 2, 4, 32]


# ---- instrumentation costs nothing when the doctor is off ------------------------------

def test_no_event_built_when_monitoring_inactive(monkeypatch):
    assert not monitoring.active()

    def fail(*a, **k):
        raise AssertionError("an event was emitted with no listener")

    monkeypatch.setattr(monitoring, "emit", fail)
    f = jax.jit(lambda a, b: a * b + 1.0)   # W1-style: a jitted call, compile and hits
    x = jnp.ones(8)
    for _ in range(3):
        f(x, x)
    y = x + 1                                # W8-style: an eager op
    y = y.at[0].set(2.0)                     # .at[] result, host read, transfer
    float(y[0])
    np.asarray(jax.device_put(np.ones(3, np.float32)))


def test_events_hold_no_array(tmp_path):
    """Recorders that keep events (the demo's) must not keep the program's arrays alive."""
    import gc
    import weakref

    with monitoring.record() as events:
        x = jnp.ones(100)
        y = (x + 1).at[0].set(3.0)
        jax.jit(lambda a: a * 2)(y)
        float(y[0])
        refs = [weakref.ref(x), weakref.ref(y)]
        del x, y
    gc.collect()
    assert {k for k, _ in events} >= {"eager_op", "alloc", "at_update", "jit_call", "read"}
    assert [r() for r in refs] == [None, None]


def test_demo_ends_with_the_doctor_on_the_pitfalls_program(capsys):
    import io
    out = io.StringIO()
    r = doctor.demo_report(Path(__file__).parents[1] / "examples" / "section_3_5_pitfalls.py",
                           out)
    text = out.getvalue()
    assert "== jaxlite doctor" in text and "Pitfall 1" not in text   # program output hidden
    assert {f["requirement"] for f in r["findings"]} == {"R5.1", "R5.2", "R5.3"}
    assert text.count("fix: ") == len(r["findings"])

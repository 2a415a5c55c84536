"""``jaxlite.stages`` (Wrapped, Traced, Lowered, Compiled, ArgInfo),
``ShapeDtypeStruct.like`` and ``jaxlite.profiler`` (traces recorded into the doctor's
report), against real JAX where JAX defines the behaviour."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jaxlite as jax
import jaxlite.numpy as jnp
import jaxlite.profiler as profiler
import jaxlite.stages as stages


# ---- stages --------------------------------------------------------------------------------

def test_stage_names_and_isinstance(rjax, rjnp):
    import jax.stages as rstages
    for name in ("Wrapped", "Traced", "Lowered", "Compiled", "ArgInfo", "CompilerOptions"):
        assert hasattr(stages, name) and hasattr(rstages, name)
    for j, s in ((jax, stages), (rjax, rstages)):
        f = j.jit(lambda x, y: x * 2 + y)
        assert isinstance(f, s.Wrapped)
        assert not isinstance(j.grad(lambda x: x), s.Wrapped)
        t = f.trace(1.0, y=2)
        assert isinstance(t, s.Traced) and not isinstance(t, s.Lowered)
        low = t.lower()
        assert isinstance(low, s.Lowered) and isinstance(f.lower(1.0, y=2), s.Lowered)
        assert isinstance(low.compile(), s.Compiled)
        assert float(low.compile()(3.0, y=1)) == 7.0


def test_traced_attributes_like_jax(rjax, rjnp):
    outs = []
    for j, n in ((jax, jnp), (rjax, rjnp)):
        f = j.jit(lambda x, y, s: (x * s, y.sum()), static_argnums=2, donate_argnums=1)
        t = f.trace(n.ones((2, 3)), n.arange(4), 3)
        outs.append(t)
    got, want = outs
    assert got.fun_name == want.fun_name == "<lambda>"
    assert str(got.in_avals) == str(want.in_avals)
    assert str(got.out_avals) == str(want.out_avals)
    assert repr(got.out_info) == repr(want.out_info)
    assert repr(got.args_info) == repr(want.args_info)
    assert repr(got.lower().args_info) == repr(want.lower().args_info)
    assert [a.donated for a in got.args_info[0]] == [False, True]
    assert [(a.shape, a.dtype) for a in got.args_info[0]] == \
        [(a.shape, a.dtype) for a in want.args_info[0]]
    assert "mul" in str(got.jaxpr) and "reduce_sum" in str(got.jaxpr)
    assert got.in_tree.num_leaves == want.in_tree.num_leaves == 2


# ---- ShapeDtypeStruct.like -----------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda j, n: n.ones(3), lambda j, n: 1.0, lambda j, n: 2, lambda j, n: True,
    lambda j, n: np.zeros((2, 2), np.int8), lambda j, n: np.float64(1.0),
    lambda j, n: j.ShapeDtypeStruct((2,), n.int32),
    lambda j, n: j.ShapeDtypeStruct((), n.float32, weak_type=True),
    lambda j, n: n.zeros((0, 4), n.bfloat16)])
def test_shape_dtype_struct_like(rjax, rjnp, make):
    got = jax.ShapeDtypeStruct.like(make(jax, jnp))
    want = rjax.ShapeDtypeStruct.like(make(rjax, rjnp))
    assert repr(got) == repr(want)
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)


def test_shape_dtype_struct_like_tracers_and_errors(rjax, rjnp):
    for j, n in ((jax, jnp), (rjax, rjnp)):
        seen = []
        j.jit(lambda x: seen.append(repr(j.ShapeDtypeStruct.like(x))) or x)(n.ones(2))
        assert seen == ["ShapeDtypeStruct(shape=(2,), dtype=float32)"]
        for bad in ("a", [1, 2], None):
            with pytest.raises(TypeError):
                j.ShapeDtypeStruct.like(bad)
    s = jax.ShapeDtypeStruct.like(jax.typeof(jnp.ones(3)))
    assert (s.shape, s.dtype) == ((3,), np.float32)


# ---- profiler ------------------------------------------------------------------------------

def test_profiler_names_exist_in_jax(rjax):
    import jax.profiler as rp
    for name in profiler.__all__:
        assert hasattr(rp, name), name


def _report(log_dir):
    runs = os.listdir(os.path.join(log_dir, "plugins", "profile"))
    assert len(runs) == 1
    d = os.path.join(log_dir, "plugins", "profile", runs[0])
    assert sorted(os.listdir(d)) == ["jaxlite_doctor.json", "jaxlite_doctor.txt"]
    with open(os.path.join(d, "jaxlite_doctor.json")) as fh:
        rep = json.load(fh)
    with open(os.path.join(d, "jaxlite_doctor.txt")) as fh:
        return rep, fh.read()


def test_trace_records_into_doctor_report(tmp_path):
    f = jax.jit(lambda x: jnp.sin(x) * 2)

    @profiler.annotate_function
    def helper(x):
        return x + 1

    with profiler.trace(str(tmp_path)):
        for step in range(3):
            with profiler.StepTraceAnnotation("train", step_num=step):
                with profiler.TraceAnnotation("forward", phase="fwd"):
                    y = f(jnp.ones(4) * step)
                y = helper(y)
        f(jnp.ones(5))            # a second signature: a compile with its reason
    rep, text = _report(str(tmp_path))
    ann = {(a["kind"], a["name"]): a for a in rep["annotations"]}
    assert ann[("step", "train")]["count"] == 3
    assert ann[("step", "train")]["steps"] == [0, 1, 2]
    assert ann[("trace", "forward")]["count"] == 3
    assert ann[("trace", "forward")]["file"].endswith("test_stages_profiler.py")
    name = [k for k in ann if "helper" in k[1]]
    assert name and ann[name[0]]["count"] == 3
    assert ann[("step", "train")]["seconds"] >= ann[("trace", "forward")]["seconds"] > 0
    jits = {j["name"]: j for j in rep["jit"]}
    assert jits["<lambda>"]["calls"] == 4 and jits["<lambda>"]["compiles"] == 2
    assert rep["eager"]["total"] > 0            # the jnp.ones(4) * step lines
    assert "profiler annotations" in text and "step train" in text
    assert "jitted functions:" in text
    np.testing.assert_allclose(np.asarray(y), np.sin(2.0) * 2 + 1, rtol=1e-6)


def test_start_stop_errors_and_annotations_outside_a_trace(tmp_path, rjax):
    import jax.profiler as rp
    for p in (profiler, rp):
        with pytest.raises(RuntimeError, match="No profile started"):
            p.stop_trace()
    profiler.start_trace(tmp_path)            # a PathLike works too
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            profiler.start_trace(str(tmp_path))
    finally:
        profiler.stop_trace()
    _report(str(tmp_path))
    # annotations with nothing recording: no effect, values unchanged
    with profiler.TraceAnnotation("idle") as a:
        assert isinstance(a, profiler.TraceAnnotation)
    with profiler.StepTraceAnnotation("s"):      # step_num is optional, as in JAX
        pass
    g = profiler.annotate_function(lambda x: x * 3, name="triple")
    assert g(2) == 6 and rp.annotate_function(lambda x: x * 3, name="t")(2) == 6


def test_trace_stops_when_the_block_raises(tmp_path):
    with pytest.raises(ValueError):
        with profiler.trace(str(tmp_path)):
            raise ValueError("boom")
    _report(str(tmp_path))
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()


def test_doctor_reports_annotations(tmp_path):
    from jaxlite.tools import doctor
    script = tmp_path / "prog.py"
    script.write_text(
        "import jaxlite as jax, jaxlite.numpy as jnp\n"
        "from jaxlite import profiler\n"
        "for i in range(2):\n"
        "    with profiler.StepTraceAnnotation('epoch', step_num=i):\n"
        "        jnp.ones(3).sum()\n")
    rep = doctor.diagnose(str(script))
    (a,) = [a for a in rep["annotations"] if a["name"] == "epoch"]
    assert a["count"] == 2 and a["steps"] == [0, 1] and a["line"] == 4


def test_html_report_lists_annotations(tmp_path):
    from jaxlite.tools import _doctor_html, _doctor_report
    from jaxlite.tools._doctor_record import Recorder
    from jaxlite import monitoring
    rec = Recorder()
    monitoring.register_listener(rec)
    try:
        for i in range(12):
            with profiler.StepTraceAnnotation("batch", step_num=i):
                jnp.ones(2).sum()
    finally:
        monitoring.unregister_listener(rec)
    report = _doctor_report.build_report(
        rec, script="x.py", argv=[], status={"ok": True, "exit_code": 0, "error": None,
                                             "error_summary": ""},
        seconds=0.1, mem_end={}, still_alive=rec.close())
    page = _doctor_html.render_html(report)
    assert "Profiler annotations" in page and "<td>batch</td>" in page
    assert "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ..." in page


def test_trace_as_decorator(tmp_path):
    @profiler.trace(str(tmp_path))
    def run():
        return float(jax.jit(lambda x: x * 3)(jnp.ones(2)).sum())
    assert run() == 6.0
    rep, _ = _report(str(tmp_path))
    assert [j["calls"] for j in rep["jit"]] == [1]

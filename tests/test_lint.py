"""``jaxlite lint``: each code on its planted pitfall (tests/lint_cases/jlNNN_bad.py, right
line and column) and silent on the fixed version (jlNNN_good.py); no finding on the
project's examples/ and src/; noqa, --select/--ignore, --format json, exit statuses; the
command line once in a subprocess.  The JL003 cases are also run on real JAX: the planted
pitfall raises there, the fixed code does not."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxlite.__main__ import main
from jaxlite.tools import lint

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "lint_cases"
CHECK_CODES = [c for c in lint.CODES if c != "JL000"]
_EXPECT_RE = re.compile(r"# expect: (JL\d{3}) col (\d+)")


def expected_findings(path: Path) -> set:
    out = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for code, col in _EXPECT_RE.findall(line):
            out.add((lineno, int(col), code))
    return out


def found(findings) -> set:
    return {(f.line, f.col, f.code) for f in findings}


def lint_text(src: str, **kw):
    return lint.lint_source(textwrap.dedent(src), "t.py", **kw)


@pytest.mark.parametrize("code", CHECK_CODES)
def test_bad_case_flags_each_planted_pitfall(code):
    path = CASES / f"{code.lower()}_bad.py"
    expected = expected_findings(path)
    assert len(expected) >= 4 and {c for _, _, c in expected} == {code}
    findings, errors = lint.lint_paths([path])
    assert errors == []
    assert found(findings) == expected
    for f in findings:
        assert f.path == str(path) and f.fix == f.fix.strip() and f.fix
        assert f.message


@pytest.mark.parametrize("code", CHECK_CODES)
def test_fixed_case_is_clean(code):
    findings, errors = lint.lint_paths([CASES / f"{code.lower()}_good.py"])
    assert (findings, errors) == ([], [])


@pytest.mark.parametrize("sub", ["examples", "src"])
def test_no_false_alarm_on_the_project(sub):
    findings, errors = lint.lint_paths([ROOT / sub])
    assert errors == []
    assert [f.format() for f in findings] == []


def test_examples_pitfalls_are_found_without_their_noqa():
    """The examples plant pitfalls on purpose, each marked ``# noqa: CODE``: without the
    comments the linter finds every one of them."""
    total = set()
    for path in sorted((ROOT / "examples").glob("*.py")):
        src = path.read_text(encoding="utf-8")
        marked = {(i, m) for i, line in enumerate(src.splitlines(), 1)
                  for m in re.findall(r"# noqa: (JL\d{3})", line)}
        stripped = re.sub(r"\s*# noqa: JL\d{3}.*", "", src)
        got = {(f.line, f.code) for f in lint.lint_source(stripped, str(path))}
        assert got == marked, path
        total |= {c for _, c in marked}
    assert {"JL001", "JL002", "JL005"} <= total


# ---- specific behaviours -------------------------------------------------------------

def test_message_format_and_fix():
    (f,) = lint_text("""\
        import jax.numpy as jnp
        x = jnp.zeros(3)
        x.at[0].set(1.0)
        """)
    assert f.format() == (
        "t.py:3:1: JL001 result of `x.at[...].set(...)` is discarded: `x` is unchanged "
        "(arrays are immutable) (fix: assign the result, e.g. `x = x.at[i].set(v)`: "
        ".at[] returns a new array)")


def test_noqa_bare_specific_and_other_codes():
    src = """\
        import jax
        x = jax.numpy.zeros(3)
        x.at[0].set(1)  # noqa
        x.at[1].set(1)  # noqa: JL001
        x.at[2].set(1)  # NOQA:JL005,JL001
        x.at[3].set(1)  # noqa: JL002
        x.at[4].set(1)  # noqa: E501
        x.at[
            5].set(1)  # noqa: JL001
        """
    assert found(lint_text(src)) == {(6, 1, "JL001"), (7, 1, "JL001")}


def test_select_and_ignore():
    src = """\
        import jax
        @jax.jit
        def f(x):
            print(x)
            x.at[0].set(1)
            return x
        """
    assert {f.code for f in lint_text(src)} == {"JL001", "JL002"}
    assert {f.code for f in lint_text(src, select={"JL002"})} == {"JL002"}
    assert {f.code for f in lint_text(src, ignore={"JL002"})} == {"JL001"}


def test_syntax_error_is_jl000():
    (f,) = lint_text("def f(:\n    pass\n")
    assert (f.code, f.line) == ("JL000", 1)
    assert "syntax error" in f.message


def test_non_jax_jit_and_shadowed_names_are_not_jit():
    src = """\
        from numba import jit
        import mylib

        @jit
        def a(x):
            print(x)
            if x > 0:
                return x
            return -x

        @mylib.jit
        def b(x):
            print(x)
        """
    assert lint_text(src) == []


def test_no_imports_assumes_the_usual_names():
    src = """\
        @jax.jit
        def f(x):
            print(x)
            return x
        """
    assert found(lint_text(src)) == {(3, 5, "JL002")}


def test_static_args_given_by_a_variable_are_not_guessed():
    src = """\
        import jax
        from functools import partial
        STATIC = (1,)

        @partial(jax.jit, static_argnums=STATIC)
        def f(x, n):
            if n > 0:
                return x
            return -x
        """
    assert lint_text(src) == []


def test_jit_of_grad_traces_the_function():
    src = """\
        import jax

        def loss(w):
            print(w)
            return (w * w).sum()

        train = jax.jit(jax.grad(loss))
        """
    assert found(lint_text(src)) == {(4, 5, "JL002")}


def test_jit_decorator_factory_with_static_argnames():
    src = """\
        import jax

        @jax.jit(static_argnames=("n",))
        def f(x, n):
            if n > 2:
                return x
            if x.sum() > 0:
                return x
            return -x
        """
    assert found(lint_text(src)) == {(7, 8, "JL003")}


# ---- files, formats, exit statuses ---------------------------------------------------

def test_directory_recursion_skips_hidden_and_pycache(tmp_path):
    bad = "import jax\nx = jax.numpy.zeros(2)\nx.at[0].set(1)\n"
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "m.py").write_text(bad)
    (tmp_path / "pkg" / "notes.txt").write_text(bad)
    for hidden in (".venv", "__pycache__"):
        (tmp_path / "pkg" / hidden).mkdir()
        (tmp_path / "pkg" / hidden / "h.py").write_text(bad)
    findings, errors = lint.lint_paths([tmp_path / "pkg"])
    assert errors == []
    assert [Path(f.path).name for f in findings] == ["m.py"]


def test_exit_statuses(tmp_path, capsys):
    clean = tmp_path / "clean.py"
    clean.write_text("import jax\nx = jax.numpy.zeros(2).at[0].set(1)\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    assert main(["lint", str(clean)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["lint", str(CASES / "jl001_bad.py")]) == 1
    assert main(["lint", str(broken)]) == 1
    assert "JL000 syntax error" in capsys.readouterr().out
    assert main(["lint", str(clean), str(tmp_path / "missing.py")]) == 2
    assert "missing.py" in capsys.readouterr().err
    assert main(["lint", "--select", "JL999", str(clean)]) == 2
    assert "JL999" in capsys.readouterr().err
    # --ignore of the only code found: clean
    assert main(["lint", "--ignore", "jl001", str(CASES / "jl001_bad.py")]) == 0


def test_json_format(capsys):
    path = CASES / "jl004_bad.py"
    assert main(["lint", "--format", "json", "--select", "JL004,JL005", str(path)]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [set(r) for r in rows] == [{"path", "line", "col", "code", "message", "fix"}] * 4
    assert {(r["line"], r["col"], r["code"]) for r in rows} == expected_findings(path)
    assert main(["lint", "--format", "json", str(CASES / "jl004_good.py")]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_command_line_subprocess():
    p = subprocess.run([sys.executable, "-m", "jaxlite", "lint", "tests/lint_cases/"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    want = sum(len(expected_findings(f)) for f in CASES.glob("*_bad.py"))
    assert len(lines) == want
    pat = re.compile(r"^tests/lint_cases/jl00\d_bad\.py:\d+:\d+: JL00\d .+ \(fix: .+\)$")
    assert all(pat.match(ln) for ln in lines), lines


def test_pre_commit_hook_entry():
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert re.search(r"^- id: jaxlite-lint$", text, re.M)
    assert re.search(r"^  entry: jaxlite lint$", text, re.M)
    assert re.search(r"^  language: python$", text, re.M)
    assert re.search(r"^  types: \[python\]$", text, re.M)


# ---- the pitfalls are real: JL003 cases on real JAX -----------------------------------

def _load_on_real_jax(path: Path) -> dict:
    src = path.read_text(encoding="utf-8").replace("jaxlite", "jax")
    ns: dict = {}
    exec(compile(src, str(path), "exec"), ns)
    return ns


def test_jl003_cases_on_real_jax(rjax, rjnp):
    bad = _load_on_real_jax(CASES / "jl003_bad.py")
    x = rjnp.ones(3)
    for call in (lambda: bad["relu"](1.0), lambda: bad["halve_until_small"](4.0),
                 lambda: bad["repeat_add"](1, x, 2), lambda: bad["sign_flip"](x),
                 lambda: bad["step_jit"](x, 3)):
        with pytest.raises((rjax.errors.ConcretizationTypeError,
                            rjax.errors.TracerIntegerConversionError)):
            call()
    good = _load_on_real_jax(CASES / "jl003_good.py")
    assert float(good["relu"](1.0)) == 1.0
    assert float(good["halve_until_small"](4.0)) == 1.0
    assert float(good["repeat_add"](1.0, 0.0, 3)) == 3.0
    assert float(good["reduce"](x, mode="sum")) == 3.0
    assert good["by_shape"](rjnp.ones((4, 2))).shape == (2, 4)
    assert float(good["with_default"](2.0)) == 1.0
    out = good["tree_keys"]({"b": x, "w": x})
    assert list(out) == ["b"]


def test_jl006_attribute_and_del_of_outer_state():
    src = """\
        import jax
        import types
        state = types.SimpleNamespace(last=None)
        cache = {"a": 1}

        @jax.jit
        def f(x):
            state.last = x
            del cache["a"]
            return x
        """
    assert found(lint_text(src)) == {(8, 5, "JL006"), (9, 9, "JL006")}


def test_jl004_not_in_loop_else_or_in_a_def_body():
    src = """\
        import jax
        for i in range(3):
            def make(f):
                return jax.jit(f)
        else:
            g = jax.jit(abs)
        while False:
            pass
        h = jax.jit(abs)
        """
    assert lint_text(src) == []

"""The demo's data and programs: ``jaxlite.data`` (bundled digits, ``load_npz``),
``examples/train_digits.py`` (grad + jit training) and ``examples/loop_vs_scan.py`` (the
chapter's memory story), and their place in ``python -m jaxlite demo``."""
from __future__ import annotations

import importlib.resources
import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

import jaxlite
from jaxlite.data import DIGITS_PATH, load_digits, load_npz
from jaxlite.tools import demo

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
_counter = itertools.count()



def load_example(name):
    """A fresh module object of examples/<name> (the programs rebind their jax/jnp)."""
    spec = importlib.util.spec_from_file_location(f"_example_{next(_counter)}",
                                                  EXAMPLES / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- jaxlite.data ---------------------------------------------------------------------

DIGIT_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]  # UCI's test set


def test_load_digits_shapes_dtypes_counts():
    x, y = load_digits()
    assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
    assert x.shape == (1797, 64) and x.dtype == np.uint8
    assert y.shape == (1797,) and y.dtype == np.int32
    assert x.min() == 0 and x.max() == 16
    assert np.bincount(y).tolist() == DIGIT_COUNTS
    # the first image is a 0 (the ring of the 8x8 bitmap as in the UCI file)
    assert y[0] == 0 and x[0].reshape(8, 8)[0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]
    assert int(x.astype(np.int64).sum()) == 561718
    # no two calls share memory
    x2, _ = load_digits()
    x2[0, 0] = 99
    assert load_digits()[0][0, 0] == 0


def test_digits_ship_as_package_data():
    res = importlib.resources.files("jaxlite.data")
    assert (res / "digits.npz").is_file() and (res / "README.md").is_file()
    assert DIGITS_PATH.is_file()
    readme = (res / "README.md").read_text(encoding="utf-8")
    for word in ("UCI", "Alpaydin", "Kaynak", "scikit-learn", "BSD 3-Clause", "CC BY 4.0"):
        assert word in readme
    assert "digits.npz" in (ROOT / "pyproject.toml").read_text(encoding="utf-8") or \
        "data/*.npz" in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_load_npz_roundtrip_and_image_stack(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=20).astype(np.int64)
    path = tmp_path / "mine.npz"
    np.savez(path, x=x, y=y, extra=np.zeros(2))
    gx, gy = load_npz(path)
    assert gx.shape == (20, 12) and gx.dtype == np.float32
    np.testing.assert_array_equal(gx, x.reshape(20, 12))
    assert gy.dtype == np.int32
    np.testing.assert_array_equal(gy, y)
    gx, gy = load_npz(str(path))  # str paths too
    assert gx.shape == (20, 12)


def _write(tmp_path, **arrays):
    path = tmp_path / "data.npz"
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("arrays, words", [
    (dict(x=np.zeros((4, 2))), ["lacks", "'y'"]),
    (dict(y=np.zeros(4, int)), ["lacks", "'x'"]),
    (dict(a=np.zeros(4)), ["'x'", "'y'", "['a']"]),
    (dict(x=np.zeros(4), y=np.zeros(4, int)), ["'x'", "(n, d)", "(4,)"]),
    (dict(x=np.zeros((4, 2, 2, 2)), y=np.zeros(4, int)), ["'x'", "(4, 2, 2, 2)"]),
    (dict(x=np.zeros((4, 2)), y=np.zeros((4, 1), int)), ["'y'", "(n,)", "(4, 1)"]),
    (dict(x=np.zeros((4, 2)), y=np.zeros(4, np.float32)), ["'y'", "integer", "float32"]),
    (dict(x=np.zeros((4, 2)), y=np.zeros(5, int)), ["4 rows", "5 labels"]),
    (dict(x=np.zeros((0, 2)), y=np.zeros(0, int)), ["empty"]),
    (dict(x=np.zeros((3, 2)), y=np.array([0, -1, 2])), ["negative", "-1"]),
    (dict(x=np.array([["a", "b"]]), y=np.zeros(1, int)), ["'x'", "numeric", "<U1"]),
    (dict(x=np.array([[np.nan, 1.0]]), y=np.zeros(1, int)), ["NaN"]),
])
def test_load_npz_errors_name_the_problem(tmp_path, arrays, words):
    path = _write(tmp_path, **arrays)
    with pytest.raises(ValueError) as e:
        load_npz(path)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_load_npz_not_an_archive(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_npz(tmp_path / "missing.npz")
    npy = tmp_path / "one.npy"
    np.save(npy, np.zeros(3))
    with pytest.raises(ValueError, match="single array"):
        load_npz(npy)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="not a readable .npz"):
        load_npz(junk)


# ---- examples/train_digits.py ---------------------------------------------------------

def test_train_digits_arguments():
    mod = load_example("train_digits.py")
    a = mod.parse_args(["--epochs", "2", "--seed", "3", "--data", "d.npz"])
    assert (a.epochs, a.seed, a.data, a.backend) == (2, 3, "d.npz", "jaxlite")
    with pytest.raises(SystemExit):
        mod.parse_args(["--epochs", "0"])
    # the split is fixed by the seed, disjoint, and covers every example once
    xtr, ytr, xte, yte = mod.load_data(None, 0)
    assert len(xtr) + len(xte) == 1797 and len(xte) == 359
    assert xtr.dtype == np.float32 and xtr.max() == 1.0
    again = mod.load_data(None, 0)
    np.testing.assert_array_equal(again[3], yte)
    assert not np.array_equal(mod.load_data(None, 1)[3], yte)


def test_train_digits_short_run_learns_and_compiles_once(capsys):
    mod = load_example("train_digits.py")
    res = mod.main(["--epochs", "3", "--quiet"])
    out = capsys.readouterr().out
    assert res["test_accuracy"] >= 0.93, out
    assert res["compiles"] == 1 and res["cache_size"] == 1, out
    assert res["steps"] == 3 * 44
    assert "us/step" in out and "final held-out test accuracy" in out


def test_train_digits_matches_real_jax(capsys):
    """Same seed, same init (jaxlite.random is bit-exact with JAX's), same batches: the
    training losses agree with real JAX's to float32 round-off."""
    pytest.importorskip("jax")
    lite = load_example("train_digits.py").main(["--epochs", "1", "--quiet"])
    real = load_example("train_digits.py").main(["--epochs", "1", "--quiet",
                                                 "--backend", "jax"])
    np.testing.assert_allclose(lite["final_loss"], real["final_loss"], rtol=1e-3)
    assert abs(lite["test_accuracy"] - real["test_accuracy"]) <= 0.01


def test_train_digits_on_a_users_npz(tmp_path, capsys):
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(3, 5)) * 4
    y = rng.integers(0, 3, size=300)
    x = (centers[y] + rng.normal(size=(300, 5))).astype(np.float32)
    path = tmp_path / "blobs.npz"
    np.savez(path, x=x, y=y)
    res = load_example("train_digits.py").main(["--epochs", "2", "--quiet",
                                                "--data", str(path)])
    assert res["test_accuracy"] >= 0.95
    assert "240 training / 60 test examples, 5 features, 3 classes" in capsys.readouterr().out


# ---- examples/loop_vs_scan.py ---------------------------------------------------------

def test_loop_vs_scan_peak_memory(capsys):
    mod = load_example("loop_vs_scan.py")
    rows = mod.main(["--steps", "200", "--width", "512"])
    peaks = {name[:3]: peak for name, _, peak, _ in rows}
    history = 200 * 512 * 4
    assert peaks["(c)"] < peaks["(a)"]
    assert peaks["(a)"] >= history          # the loop holds every step's state
    assert peaks["(c)"] < history / 10      # scan holds the carry, not the steps
    out = capsys.readouterr().out
    assert "lax.scan under jit" in out and "peak memory" in out
    assert "same averages from all three: True" in out


def test_loop_vs_scan_peak_grows_with_steps_only_for_the_loop():
    mod = load_example("loop_vs_scan.py")
    short = {r[0][:3]: r[2] for r in mod.compare(50, 256)}
    long = {r[0][:3]: r[2] for r in mod.compare(200, 256)}
    assert long["(a)"] >= 3 * short["(a)"]
    assert long["(c)"] == short["(c)"]
    assert long["(b)"] == short["(b)"]


def test_loop_vs_scan_reference_values():
    """The loop (no scan needed) against the same recurrence in NumPy float32."""
    mod = load_example("loop_vs_scan.py")
    x0 = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    mean, sq = mod.averages_loop_keep(jaxlite.numpy.asarray(x0), 30)
    x, xs = x0, []
    for _ in range(30):
        x = (x + np.float32(mod.DT) * (np.tanh(x) - np.float32(0.1) * x * x * x))
        xs.append(x.astype(np.float32))
    xs = np.stack(xs)
    np.testing.assert_allclose(np.asarray(mean), xs.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(sq), (xs * xs).mean(0), rtol=1e-5, atol=1e-6)
    assert mean.dtype == np.float32 and mean.shape == (64,)


# ---- the demo -------------------------------------------------------------------------

def test_demo_discovers_the_extra_programs(tmp_path):
    found = demo.discover(EXAMPLES)
    names = [s for s, _, _ in found]
    assert names[-4:] == ["scan", "digits", "sharding", "processes"] and names[0] == "3.1"
    titles = dict((s, t) for s, t, _ in found)
    assert titles["scan"].startswith("Python loop vs lax.scan")
    assert titles["digits"].startswith("Train a small MLP")
    # a directory without them: only its sections
    (tmp_path / "section_1_1_x.py").write_text('"""1.1 x"""\n')
    assert [s for s, _, _ in demo.discover(tmp_path)] == ["1.1"]

"""The README's Python snippets run as written, one after another in one interpreter."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run_snippets(tmp_path, devices=None):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    script = tmp_path / "readme_snippets.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    env = dict(os.environ)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    if devices is not None:
        env["JAX_NUM_CPU_DEVICES"] = str(devices)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def test_readme_snippets_run_on_four_devices(tmp_path):
    # the "Several devices" snippets are written for any device count (the README says
    # JAX_NUM_CPU_DEVICES=4 gives four): run them on four as well as on one
    run = _run_snippets(tmp_path, devices=4)
    assert "CpuDevice(id=3)" in run.stdout
    assert "[112. 128.]" in run.stdout


def test_readme_python_snippets_run(tmp_path):
    run = _run_snippets(tmp_path)
    assert "CpuDevice(id=0)" in run.stdout
    # the platform defined in "How it is built": its arrays and their counted bytes
    assert "demo [1. 3. 5.] 24" in run.stdout

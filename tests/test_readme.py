"""The README's Python snippets run as written, one after another in one interpreter."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_python_snippets_run(tmp_path):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 3
    script = tmp_path / "readme_snippets.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "CpuDevice(id=0)" in run.stdout
    # the platform defined in "How it is built": its arrays and their counted bytes
    assert "demo [1. 3. 5.] 24" in run.stdout

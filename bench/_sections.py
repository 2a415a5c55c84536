"""One helper the benchmark scripts share: replacing a "## " section of bench/RESULTS.md.

bench/_workloads_multi.py ("Several devices") and bench/_workloads_tpu.py ("Accelerator")
each own one section of the file; bench/run.py rewrites the rest and keeps those two.
"""

from __future__ import annotations

from pathlib import Path


def write_section(text: str, path: Path) -> None:
    """Puts ``text`` (a section: its first line is the "## " heading) in ``path``.

    A section of ``path`` with the same heading line is replaced (up to the next "## "
    heading); otherwise ``text`` is appended after one blank line.  A missing file is
    created.
    """
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    head = text.splitlines()[0]
    if head in old:
        start = old.index(head)
        nxt = old.find("\n## ", start + len(head))
        old = old[:start] + (old[nxt + 1:] if nxt >= 0 else "")
    path.write_text(old.rstrip("\n") + "\n\n" + text, encoding="utf-8")

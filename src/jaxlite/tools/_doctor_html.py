"""``jaxlite doctor --html FILE``, part 3: the report as one self-contained page.

Layer: tools.  Inline CSS and SVG only (no script, no external asset): the findings, memory
in use over time per device, a compile timeline (one lane per jitted function, each
compile a bar of its trace+compile time, the cache-miss reason on hover), transfers per
device pair and direction, and the per-line tables of the text report.
"""
from __future__ import annotations

import html

from .demo import fmt_bytes

_W, _H, _PAD = 760, 220, 48
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:64em;
color:#222;line-height:1.4}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
code,pre,.src{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
.finding{border-left:4px solid #d9534f;background:#fdf3f2;padding:.5em .8em;margin:.6em 0}
.finding .req{font-weight:bold;color:#a94442}.fix{color:#2a6a2a}
.ok{border-left:4px solid #5cb85c;background:#f1f9f1;padding:.5em .8em}
.src{background:#f5f5f5;padding:.1em .4em;display:block;margin:.3em 0;white-space:pre-wrap}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border-bottom:1px solid #eee;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#fafafa}td.n{text-align:right;font-variant-numeric:tabular-nums}
svg{background:#fcfcfc;border:1px solid #eee}svg text{font-size:11px;fill:#444}
.muted{color:#777}
"""
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _decimate(points: list, n: int = 1500) -> list:
    """At most about ``n`` points, keeping each stretch's highest value (peaks stay)."""
    if len(points) <= n:
        return points
    step = len(points) / n
    out = []
    for k in range(n):
        chunk = points[int(k * step):int((k + 1) * step)] or points[-1:]
        out.append(max(chunk, key=lambda p: p[1]))
    return out


def _axis(x0, x1, y_max, t_max, y_label) -> list:
    parts = [f'<line x1="{x0}" y1="{_H - _PAD + 20}" x2="{x1}" y2="{_H - _PAD + 20}" '
             f'stroke="#999"/>',
             f'<line x1="{x0}" y1="10" x2="{x0}" y2="{_H - _PAD + 20}" stroke="#999"/>',
             f'<text x="{x0 - 4}" y="16" text-anchor="end">{_e(y_label(y_max))}</text>',
             f'<text x="{x0 - 4}" y="{_H - _PAD + 20}" text-anchor="end">0</text>',
             f'<text x="{x1}" y="{_H - _PAD + 34}" text-anchor="end">{t_max:.3f} s</text>',
             f'<text x="{x0}" y="{_H - _PAD + 34}">0 s</text>']
    return parts


def memory_svg(timeline: dict) -> str:
    """Bytes in use over time, one line per device."""
    series = {d: _decimate(pts) for d, pts in timeline.items() if pts}
    if not series:
        return '<p class="muted">no allocation recorded</p>'
    t_max = max(p[0] for pts in series.values() for p in pts) or 1e-9
    y_max = max(p[1] for pts in series.values() for p in pts) or 1
    x0, x1, y0, y1 = _PAD + 20, _W - 10, _H - _PAD + 20, 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
             f'role="img" aria-label="memory in use over time">']
    parts += _axis(x0, x1, y_max, t_max, fmt_bytes)
    for i, (dev, pts) in enumerate(sorted(series.items())):
        color = _COLORS[i % len(_COLORS)]
        coords = []
        prev = None
        for t, b in pts:   # a step line: memory stays put between samples
            x = x0 + (x1 - x0) * t / t_max
            y = y0 - (y0 - y1) * b / y_max
            if prev is not None:
                coords.append(f"{x:.1f},{prev:.1f}")
            coords.append(f"{x:.1f},{y:.1f}")
            prev = y
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                     f'points="{" ".join(coords)}"><title>{_e(dev)}</title></polyline>')
        peak = max(b for _, b in pts)
        parts.append(f'<text x="{x1 - 4}" y="{24 + 14 * i}" text-anchor="end" '
                     f'fill="{color}">{_e(dev)} (peak {_e(fmt_bytes(peak))})</text>')
    parts.append("</svg>")
    return "".join(parts)


def compile_svg(timeline: list, seconds: float) -> str:
    """One lane per jitted function; a bar per compile at its start, as wide as its trace
    and compile time (at least 2 px), the reason in the tooltip."""
    if not timeline:
        return '<p class="muted">no compile</p>'
    funs = list(dict.fromkeys(c["function"] for c in timeline))
    lane = 22
    h = 30 + lane * len(funs)
    x0, x1 = 150, _W - 10
    t_max = max([seconds] + [c["t"] + c["trace_seconds"] + c["compile_seconds"]
                             for c in timeline]) or 1e-9
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{h}" role="img" '
             f'aria-label="compile timeline">',
             f'<text x="{x0}" y="{h - 6}">0 s</text>',
             f'<text x="{x1}" y="{h - 6}" text-anchor="end">{t_max:.3f} s</text>']
    for i, f in enumerate(funs):
        y = 8 + lane * i
        parts.append(f'<text x="{x0 - 6}" y="{y + 13}" text-anchor="end">{_e(f[:22])}</text>'
                     f'<line x1="{x0}" y1="{y + 9}" x2="{x1}" y2="{y + 9}" stroke="#eee"/>')
    for c in timeline:
        i = funs.index(c["function"])
        y = 8 + lane * i
        dur = c["trace_seconds"] + c["compile_seconds"]
        x = x0 + (x1 - x0) * c["t"] / t_max
        w = max(2.0, (x1 - x0) * dur / t_max)
        color = "#5cb85c" if c["reason"] == "first call" else "#d9534f"
        tip = (f'{c["function"]}({c["signature"]}): {c["reason"]}; trace '
               f'{c["trace_seconds"] * 1e3:.1f} ms, compile {c["compile_seconds"] * 1e3:.1f} ms')
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="18" fill="{color}" '
                     f'opacity=".8"><title>{_e(tip)}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def transfers_svg(pairs: list) -> str:
    """A bar per (source, destination, kind): bytes, with the counts as labels."""
    if not pairs:
        return '<p class="muted">no transfer</p>'
    row = 24
    h = 10 + row * len(pairs)
    x0, x1 = 230, _W - 170
    b_max = max(p["bytes"] for p in pairs) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{h}" role="img" '
             f'aria-label="transfers per device pair">']
    for i, p in enumerate(pairs):
        y = 6 + row * i
        w = max(1.0, (x1 - x0) * p["bytes"] / b_max)
        label = f'{p["src"]} \u2192 {p["dst"]}'
        parts.append(f'<text x="{x0 - 6}" y="{y + 13}" text-anchor="end">{_e(label)}</text>'
                     f'<rect x="{x0}" y="{y}" width="{w:.1f}" height="17" fill="#1f77b4">'
                     f'<title>{_e(p["kind"])}</title></rect>'
                     f'<text x="{x0 + w + 6:.1f}" y="{y + 13}">{_e(fmt_bytes(p["bytes"]))}, '
                     f'{p["implicit"]} implicit, {p["explicit"]} explicit</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(headers, rows) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for r in rows:
        cells = []
        for v in r:
            cls = ' class="n"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            cells.append(f"<td{cls}>{_e(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def render_html(report: dict) -> str:
    """The whole page as a string."""
    st = report["status"]
    title = f"jaxlite doctor: {report['script']}"
    p = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
         f"<h1>{_e(title)}</h1>",
         f'<p>ran in {report["seconds"]:.2f} s, '
         f'{"ok" if st["ok"] else "FAILED: " + _e(st["error_summary"])}'
         f'{" with arguments " + _e(" ".join(report["argv"])) if report["argv"] else ""}</p>']
    fs = report["findings"]
    p.append(f"<h2>Findings ({len(fs)})</h2>")
    if not fs:
        p.append('<div class="ok">none: no discarded <code>.at[]</code> result, no unjitted '
                 'hot loop or repeated implicit transfer, no recompiling function, no loop '
                 'piling up arrays</div>')
    for f in fs:
        p.append(f'<div class="finding"><span class="req">{_e(f["requirement"])} '
                 f'{_e(f["code"])}</span> <code>{_e(f["file"])}:{f["line"]}</code><br>'
                 f'{_e(f["message"])}'
                 + (f'<span class="src">{_e(f["source"])}</span>' if f["source"] else "")
                 + f'<span class="fix">fix: {_e(f["fix"])}</span></div>')

    mem = report["memory"]
    p.append("<h2>Memory in use over time</h2>")
    p.append(memory_svg(mem["timeline"]))
    p.append(_table(["device", "peak", "in use at the end", "allocations"],
                    [(d["device"], fmt_bytes(d["peak_bytes_in_use"]),
                      fmt_bytes(d["bytes_in_use"]), d["num_allocs"])
                     for d in mem["devices"]]))
    p.append("<h3>Lines that allocated most</h3>")
    p.append(_table(["line", "allocations", "bytes", "source"],
                    [(f'{r["file"]}:{r["line"]}', r["allocations"], fmt_bytes(r["bytes"]),
                      r["source"]) for r in mem["lines"][:15]]))

    p.append("<h2>Compile timeline</h2>")
    p.append('<p class="muted">green: first compile; red: a cache miss (hover for the '
             'reason)</p>')
    p.append(compile_svg(report["compile_timeline"], report["seconds"]))
    rows = []
    for j in report["jit"]:
        misses = "; ".join(m["reason"] for m in j["misses"][1:]) or "-"
        b = j["buckets"]
        pad = (f'{b["compiles"]} \u2192 {b["pow2_compiles"]} (powers of two), '
               f'{b["max_compiles"]} (largest size)') if b else "-"
        d = j["defined"]
        rows.append((j["name"], f'{d["file"]}:{d["line"]}' if d else "?", j["calls"],
                     j["compiles"], f'{(j["trace_seconds"] + j["compile_seconds"]) * 1e3:.1f} ms',
                     misses, pad))
    p.append(_table(["function", "defined", "calls", "compiles", "trace+compile",
                     "cache misses", "compiles if padded"], rows))

    tr = report["transfers"]
    p.append("<h2>Transfers per device pair</h2>")
    p.append(transfers_svg(tr["pairs"]))
    p.append(_table(["line", "kind", "how", "count", "bytes", "source"],
                    [(f'{r["file"]}:{r["line"]}', r["kind"],
                      "explicit" if r["explicit"] else "implicit", r["count"],
                      fmt_bytes(r["bytes"]), r["source"]) for r in tr["lines"][:15]]))

    eg = report["eager"]
    p.append(f"<h2>Eager (unjitted) operations: {eg['total']}</h2>")
    p.append(_table(["line", "function", "ops", "runs", "primitives", "advice", "source"],
                    [(f'{r["file"]}:{r["line"]}', r["function"], r["ops"], r["executions"],
                      ", ".join(f"{k} x{v}" for k, v in list(r["primitives"].items())[:4]),
                      r["advice"], r["source"]) for r in eg["lines"][:15]]))
    ann = report.get("annotations") or []
    if ann:
        p.append("<h2>Profiler annotations (<code>jaxlite.profiler</code>)</h2>")
        p.append(_table(["annotation", "kind", "first at", "count", "total", "mean",
                         "longest", "steps"],
                        [(a["name"], a["kind"],
                          f'{a["file"]}:{a["line"]}' if a["file"] else "?", a["count"],
                          f'{a["seconds"] * 1e3:.2f} ms', f'{a["mean_seconds"] * 1e3:.2f} ms',
                          f'{a["max_seconds"] * 1e3:.2f} ms',
                          ", ".join(map(str, a["steps"][:10])) +
                          (", ..." if len(a["steps"]) > 10 else ""))
                         for a in ann[:15]]))
    at = report["at"]
    p.append(f"<h2><code>.at[]</code> updates: {at['created']} made eagerly</h2>")
    p.append(_table(["line", "method", "results never read", "source"],
                    [(f'{u["file"]}:{u["line"]}', u["method"], u["count"], u["source"])
                     for u in at["unused"]]))
    p.append("</body></html>")
    return "\n".join(p) + "\n"


def write_html(report: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render_html(report))

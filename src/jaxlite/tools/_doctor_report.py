"""``jaxlite doctor``, part 2: from a Recorder to the report (a JSON-able dict) and its text.

Layer: tools.  Each finding names its requirement (R5.1 ``.at[]`` result never used,
R5.2 unjitted hot code / repeated implicit transfers, R5.3 recompiles, R2.4 loops that
allocate on every iteration while memory grows), its source line and the fix.
The thresholds below decide what counts as "every step"; they are deliberately a few
repetitions, so that a one-off eager call or a couple of compiles is not a finding.
"""
from __future__ import annotations

import linecache
import os
from collections import Counter

from ._doctor_record import executions
from .demo import fmt_bytes

EAGER_REPEAT = 10        # a call site running eagerly this many times is a hot loop (R5.2)
TRANSFER_REPEAT = 5      # implicit copies from one line this many times (R5.2)
RECOMPILE_MIN = 3        # compiles of one jitted function that make a finding (R5.3)
LOOP_MIN = 8             # arrays from one line of a loop alive at once, made by as
                         # many calls (R2.4)
TOP = 8                  # lines listed per table

_ORDER = {"R5.1": 0, "R5.2": 1, "R5.3": 2, "R2.4": 3}


def rel(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    if not path or path.startswith("<"):
        return path or "?"
    try:
        r = os.path.relpath(path)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def source(file: str, line: int) -> str:
    return linecache.getline(file, line).strip() if file and line else ""


def _where(file, line) -> dict:
    return {"file": rel(file), "line": int(line or 0), "source": source(file, line)}


def _finding(req, code, file, line, message, fix, **extra) -> dict:
    f = {"requirement": req, "code": code, **_where(file, line), "message": message,
         "fix": fix}
    f.update(extra)
    return f


# ---- jit ------------------------------------------------------------------------------

def _pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _parse_names(signature: str) -> list:
    """Leaf names from a compile event's signature ``"x: f32[3,4], y: i32[]"``."""
    names, depth, cur = [], 0, ""
    for ch in signature:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(cur)
            cur = ""
            continue
        cur += ch
    if cur.strip():
        names.append(cur)
    return [n.strip().rsplit(": ", 1)[0] for n in names]


def bucket_analysis(keys: list, names: list) -> dict | None:
    """For the cache keys of a jitted function's calls: which (argument, axis) sizes kept
    changing, and how many compiles padding to power-of-two buckets (or to the largest
    size) would have given on this run."""
    keys = [k for k in keys if k is not None]
    distinct = list(dict.fromkeys(keys))
    if len(distinct) < 2:
        return None

    def shapes(k):
        return [tuple(aval.shape) for aval, _ in k[1]]

    ranks = [[len(s) for s in shapes(k)] for k in distinct]
    if any(r != ranks[0] for r in ranks):
        return None
    varying = []
    for i, rank in enumerate(ranks[0]):
        for ax in range(rank):
            sizes = sorted({shapes(k)[i][ax] for k in distinct})
            if len(sizes) > 1:
                varying.append((i, ax, sizes))
    if not varying:
        return None
    vset = {(i, ax) for i, ax, _ in varying}
    biggest = {(i, ax): s[-1] for i, ax, s in varying}

    def rekey(k, fn):
        sh = shapes(k)
        new = tuple(tuple(fn(i, ax, n) if (i, ax) in vset else n for ax, n in enumerate(s))
                    for i, s in enumerate(sh))
        rest = tuple((aval.dtype, aval.weak_type, dev) for aval, dev in k[1])
        return (k[0], new, rest) + tuple(k[2:])

    pow2 = len({rekey(k, lambda i, ax, n: _pow2(n)) for k in keys})
    to_max = len({rekey(k, lambda i, ax, n: biggest[(i, ax)]) for k in keys})
    dims = []
    for i, ax, sizes in varying:
        dims.append({"argument": names[i] if i < len(names) else f"leaf {i}", "axis": ax,
                     "sizes": sizes, "buckets": sorted({_pow2(n) for n in sizes})})
    return {"compiles": len(distinct), "varying": dims, "pow2_compiles": pow2,
            "max_compiles": to_max}


def _jit_section(rec) -> tuple[list, list]:
    out, findings = [], []
    for jr in rec.jit_calls.values():
        comps = jr["compiles"]
        names = _parse_names(comps[0]["signature"]) if comps else []
        buckets = bucket_analysis(jr["keys"], names)
        defined = jr["defined"]
        sites = sorted(jr["sites"].items(), key=lambda kv: -kv[1])
        call_file, call_line = sites[0][0] if sites else (defined or ("?", 0))
        entry = {
            "name": jr["name"],
            "defined": _where(*defined) if defined else None,
            "calls": jr["calls"], "compiles": len(comps),
            "trace_seconds": sum(c["trace_seconds"] for c in comps),
            "compile_seconds": sum(c["compile_seconds"] for c in comps),
            "call_sites": [{**_where(f, ln), "calls": n} for (f, ln), n in sites[:TOP]],
            "misses": [{"reason": c["reason"], "t": c["t"],
                        **(_where(c["site"].file, c["site"].line) if c["site"] else {})}
                       for c in comps],
            "buckets": buckets,
        }
        out.append(entry)
        n_miss = len(comps) - 1
        if len(comps) < RECOMPILE_MIN:
            continue
        reasons = [c["reason"] for c in comps[1:]]
        shown = "; ".join(list(dict.fromkeys(reasons))[:3])
        where = f" (defined at {rel(defined[0])}:{defined[1]})" if defined else ""
        msg = (f"jitted function {jr['name']}{where} compiled {len(comps)} times in "
               f"{jr['calls']} calls ({n_miss} cache misses: {shown})")
        if buckets:
            d = buckets["varying"][0]
            dims = ", ".join(f"{v['argument']} axis {v['axis']} sizes "
                             f"{_short_list(v['sizes'])}" for v in buckets["varying"])
            fix = (f"the shape keeps changing ({dims}): pad to a few fixed sizes, e.g. "
                   f"`padded, mask = jaxlite.experimental.pad_to_bucket({d['argument']}, "
                   f"{d['axis']}, {tuple(d['buckets'])})` would have compiled "
                   f"{buckets['pow2_compiles']} time(s) on this run (padding to the largest "
                   f"size, {buckets['max_compiles']}); use the mask so the padding does not "
                   f"change the result")
        elif any("static" in r for r in reasons):
            fix = ("a static argument takes a new value on each call and every value "
                   "compiles: pass it as a (traced) array argument instead, or use few "
                   "distinct values")
        elif any("dtype" in r or "weak" in r for r in reasons):
            fix = ("the argument types change between calls: convert the inputs to one "
                   "dtype (e.g. jnp.asarray(x, jnp.float32)); a Python scalar is weakly "
                   "typed, an array is not")
        else:
            fix = ("keep the argument structure and shapes fixed between calls, or create "
                   "the jitted function once (outside the loop)")
        findings.append(_finding("R5.3", "recompiles", call_file, call_line, msg, fix,
                                 count=len(comps)))
    return out, findings


def _short_list(xs, n=8) -> str:
    xs = list(xs)
    s = ", ".join(map(str, xs[:n]))
    return f"[{s}{', ...' if len(xs) > n else ''}]"


# ---- eager operations -------------------------------------------------------------------

def _eager_section(rec) -> tuple[dict, list]:
    lines = []
    for r in rec.eager_lines.values():
        execs = executions(r["sites"])
        lines.append({**_where(r["file"], r["line"]), "function": r["func"],
                      "function_line": r["func_line"], "ops": r["count"],
                      "executions": execs, "in_loop": r["in_loop"],
                      "primitives": dict(Counter(r["prims"]).most_common()),
                      "_file": r["file"],
                      "_caller": max(r["callers"], key=r["callers"].get, default=None)})
    lines.sort(key=lambda x: -x["ops"])
    findings = []
    hot = [ln for ln in lines if ln["executions"] >= EAGER_REPEAT and ln["in_loop"]]
    by_func: dict = {}
    for ln in hot:
        by_func.setdefault((ln["_file"], ln["function"], ln["function_line"]), []).append(ln)
    for (file, func, fline), lns in by_func.items():
        ops = sum(x["ops"] for x in lns)
        execs = max(x["executions"] for x in lns)
        top = lns[0]
        prims = Counter()
        for x in lns:
            prims.update(x["primitives"])
        kinds = ", ".join(f"{p} x{n}" for p, n in prims.most_common(4))
        if func == "<module>":
            msg = (f"this line ran {top['ops']} operations eagerly, one dispatch each "
                   f"({kinds}), {execs} times in a Python loop")
            fix = ("move the loop body into a function and jit it (`step = jax.jit(step)`), "
                   "or write the loop with jax.lax.fori_loop / jax.lax.scan inside one "
                   "jitted function")
            findings.append(_finding("R5.2", "eager-loop", file, top["line"], msg, fix,
                                     count=top["ops"]))
        else:
            short = func.rsplit(".", 1)[-1]
            msg = (f"function {func} (line {fline}) is not jitted: {ops} operations ran "
                   f"eagerly ({kinds}) over about {execs} calls, each dispatched and "
                   f"allocated on its own")
            caller = top["_caller"]
            fix = (f"jit the enclosing function: `{short}_jit = jax.jit({short})` (or decorate "
                   f"it with @jax.jit) and call that"
                   + (f" at {rel(caller[0])}:{caller[1]}" if caller else "")
                   + "; its data then stays on the device and each call is one dispatch")
            findings.append(_finding("R5.2", "eager-function", file, top["line"], msg, fix,
                                     count=ops, function=func))
    total = rec.eager_total
    for ln in lines:
        ln.pop("_file")
        c = ln.pop("_caller")
        ln["caller"] = f"{rel(c[0])}:{c[1]}" if c else None
        ln["advice"] = (f"jit {ln['function']}" if ln["function"] != "<module>"
                        else "put this code in a jitted function")
    return {"total": total, "lines": lines[:50]}, findings


# ---- transfers -----------------------------------------------------------------------

def _transfer_section(rec) -> tuple[dict, list]:
    pairs = [{"src": s, "dst": d, "kind": k, "explicit": e, "implicit": i, "count": e + i,
              "bytes": b} for (s, d, k), (e, i, b) in sorted(rec.transfer_pairs.items())]
    lines = sorted(rec.transfer_lines.values(), key=lambda r: (-r["bytes"], -r["count"]))
    out_lines = [{**_where(r["file"], r["line"]), "kind": r["kind"], "src": r["src"],
                  "dst": r["dst"], "explicit": r["explicit"], "count": r["count"],
                  "bytes": r["bytes"]} for r in lines]
    findings = []
    for r in lines:
        if r["explicit"] or r["kind"] == "device_to_host" or r["count"] < TRANSFER_REPEAT:
            continue
        if r["kind"] == "host_to_device":
            msg = (f"host data is copied to {r['dst']} here on every use: {r['count']} "
                   f"implicit host-to-device transfers, {fmt_bytes(r['bytes'])}")
            fix = ("move the NumPy data to the device once, before the loop "
                   "(`x = jax.device_put(x)`), and pass the device array")
        else:
            msg = (f"data moves {r['src']} -> {r['dst']} here on every use: {r['count']} "
                   f"implicit transfers, {fmt_bytes(r['bytes'])}")
            fix = ("keep the operands on one device: device_put them there once, before "
                   "the loop")
        findings.append(_finding("R5.2", "repeated-transfer", r["file"], r["line"], msg, fix,
                                 count=r["count"]))
    return {"pairs": pairs, "lines": out_lines[:50]}, findings


# ---- memory ----------------------------------------------------------------------------

def _memory_section(rec, mem_end: dict) -> tuple[dict, list]:
    devices = []
    for name, st in sorted(mem_end.items()):
        devices.append({"device": name, **st})
    lines = sorted(rec.alloc_lines.items(), key=lambda kv: -kv[1][1])
    top = [{**_where(f, ln), "allocations": n, "bytes": b} for (f, ln), (n, b) in lines[:50]]
    loops, findings = [], []
    by_loop: dict = {}
    for r in rec.loop_allocs.values():
        item = {"loop": _where(r["loop_file"], r["loop_line"]),
                **_where(r["file"], r["line"]), "device": r["device"],
                "allocations": r["count"], "bytes": r["bytes"],
                "max_live": r["max_live"], "max_live_bytes": r["max_live_bytes"]}
        loops.append(item)
        if r["max_live"] >= LOOP_MIN and r["calls"] >= LOOP_MIN:
            by_loop.setdefault((r["loop_file"], r["loop_line"]), []).append(r)
    loops.sort(key=lambda x: -x["bytes"])
    for (lf, ll), rs in by_loop.items():
        r = max(rs, key=lambda r: r["max_live_bytes"])
        msg = (f"every iteration of the loop at line {ll} allocates new arrays here and "
               f"keeps them: up to {r['max_live']} of them alive at once "
               f"({fmt_bytes(r['max_live_bytes'])} on {r['device']}; {r['count']} "
               f"allocations in all), so memory grows with the number of iterations")
        fix = ("let one jaxlite call build the result: jax.lax.scan (a carry plus stacked "
               "outputs, one buffer) or jax.vmap over the inputs, instead of keeping one "
               "array per iteration; or drop the arrays you no longer need")
        findings.append(_finding("R2.4", "loop-allocations", r["file"], r["line"], msg, fix,
                                 count=r["count"], loop_line=ll))
    timeline = {name: [[round(t, 6), b] for t, b in pts]
                for name, pts in sorted(rec.timeline.items())}
    return {"devices": devices, "lines": top, "loops": loops[:50],
            "timeline": timeline}, findings


# ---- .at[] ----------------------------------------------------------------------------

def _at_section(rec, still_alive: list) -> tuple[dict, list]:
    groups: dict = {}
    for info in rec.at_unused:
        k = (info["file"], info["line"], info["method"])
        groups.setdefault(k, []).append(info)
    items, findings = [], []
    for (file, line, method), infos in sorted(groups.items(), key=lambda kv: kv[0][:2]):
        items.append({**_where(file, line), "method": method, "count": len(infos),
                      "shape": list(infos[0]["shape"]), "dtype": infos[0]["dtype"]})
        msg = (f"the result of .at[...].{method}(...) was never used ({len(infos)} "
               f"time{'s' if len(infos) != 1 else ''}): the array it made "
               f"({infos[0]['dtype']}{list(infos[0]['shape'])}) was freed without being "
               f"read, so the update was lost")
        fix = (f".at[] returns a new array and never changes the original: assign the "
               f"result, e.g. `x = x.at[i].{method}(v)`")
        findings.append(_finding("R5.1", "at-result-unused", file, line, msg, fix,
                                 count=len(infos)))
    alive = [{**_where(i["file"], i["line"]), "method": i["method"]} for i in still_alive]
    return {"created": rec.at_count, "unused": items, "alive_unread": alive}, findings


# ---- the whole report ---------------------------------------------------------------------

def build_report(rec, *, script: str, argv: list, status: dict, seconds: float,
                 mem_end: dict, still_alive: list) -> dict:
    """The report of one doctor run as a JSON-able dict (see ``jaxlite doctor --help``)."""
    jit, f_jit = _jit_section(rec)
    eager, f_eager = _eager_section(rec)
    transfers, f_xfer = _transfer_section(rec)
    memory, f_mem = _memory_section(rec, mem_end)
    at, f_at = _at_section(rec, still_alive)
    findings = f_at + f_eager + f_xfer + f_jit + f_mem
    findings.sort(key=lambda f: (_ORDER.get(f["requirement"], 9), f["file"], f["line"]))
    timeline = [{"function": c["fun"], "t": c["t"], "trace_seconds": c["trace_seconds"],
                 "compile_seconds": c["compile_seconds"], "reason": c["reason"],
                 "signature": c["signature"]} for c in rec.compiles]
    return {
        "script": rel(script), "argv": list(argv), "status": status,
        "seconds": seconds, "findings": findings, "jit": jit,
        "compile_timeline": timeline, "transfers": transfers, "eager": eager,
        "memory": memory, "at": at, "annotations": _annotation_section(rec),
        "internal_errors": list(rec.internal_errors),
    }


def _annotation_section(rec) -> list:
    """``jaxlite.profiler`` annotations: per (kind, name) the count and time, slowest
    first."""
    out = []
    for a in getattr(rec, "annotations", {}).values():
        site = a["site"]
        out.append({"kind": a["kind"], "name": a["name"], "count": a["count"],
                    "seconds": a["seconds"], "max_seconds": a["max_seconds"],
                    "mean_seconds": a["seconds"] / max(a["count"], 1),
                    "steps": list(a["steps"]), "scope": a["scope"],
                    "file": rel(site.file) if site else None,
                    "line": site.line if site else None})
    out.sort(key=lambda a: -a["seconds"])
    return out


def format_text(report: dict) -> str:
    """The report as the text ``jaxlite doctor`` prints."""
    out = []
    st = report["status"]
    out.append(f"jaxlite doctor: {report['script']} ran in {report['seconds']:.2f} s "
               f"({'ok' if st['ok'] else 'FAILED: ' + st['error_summary']})")
    fs = report["findings"]
    out.append("")
    if fs:
        out.append(f"findings ({len(fs)}):")
        for f in fs:
            out.append(f"  {f['file']}:{f['line']}: [{f['requirement']} {f['code']}] "
                       f"{f['message']}")
            if f["source"]:
                out.append(f"      | {f['source']}")
            out.append(f"      fix: {f['fix']}")
    else:
        out.append("findings: none (no discarded .at[] result, no unjitted hot loop or "
                   "repeated implicit transfer, no recompiling function, no loop piling up "
                   "arrays)")

    out.append("")
    out.append("jitted functions:")
    if not report["jit"]:
        out.append("  none called")
    for j in report["jit"]:
        d = j["defined"]
        where = f" ({d['file']}:{d['line']})" if d else ""
        out.append(f"  {j['name']}{where}: {j['calls']} call(s), {j['compiles']} "
                   f"compile(s), trace {j['trace_seconds'] * 1e3:.1f} ms + compile "
                   f"{j['compile_seconds'] * 1e3:.1f} ms")
        for m in j["misses"]:
            site = f" at {m['file']}:{m['line']}" if m.get("file") else ""
            out.append(f"    compile{site}: {m['reason']}")
        b = j["buckets"]
        if b:
            for v in b["varying"]:
                out.append(f"    {v['argument']} axis {v['axis']} took sizes "
                           f"{_short_list(v['sizes'])}; power-of-two buckets "
                           f"{tuple(v['buckets'])}")
            out.append(f"    padding: {b['compiles']} compiles -> {b['pow2_compiles']} with "
                       f"power-of-two buckets, {b['max_compiles']} padding to the largest "
                       f"size")

    out.append("")
    tr = report["transfers"]
    out.append("transfers:")
    if not tr["pairs"]:
        out.append("  none")
    for p in tr["pairs"]:
        out.append(f"  {p['src']} -> {p['dst']} ({p['kind']}): {p['count']} "
                   f"({p['explicit']} explicit, {p['implicit']} implicit), "
                   f"{fmt_bytes(p['bytes'])}")
    for ln in tr["lines"][:TOP]:
        how = "explicit" if ln["explicit"] else "implicit"
        out.append(f"    {ln['file']}:{ln['line']}: {ln['count']} {how} {ln['kind']}, "
                   f"{fmt_bytes(ln['bytes'])}  | {ln['source']}")

    out.append("")
    eg = report["eager"]
    out.append(f"eager (unjitted) operations: {eg['total']}")
    for ln in eg["lines"][:TOP]:
        prims = ", ".join(f"{p} x{n}" for p, n in list(ln["primitives"].items())[:3])
        out.append(f"  {ln['ops']:>6}  {ln['file']}:{ln['line']} in {ln['function']} "
                   f"({prims})  | {ln['source']}")
        if ln["executions"] >= EAGER_REPEAT and ln["in_loop"]:
            out.append(f"          ran {ln['executions']} times: {ln['advice']}")

    out.append("")
    mem = report["memory"]
    out.append("memory:")
    for d in mem["devices"]:
        out.append(f"  {d['device']}: peak {fmt_bytes(d['peak_bytes_in_use'])}, "
                   f"{fmt_bytes(d['bytes_in_use'])} in use at the end, "
                   f"{d['num_allocs']} allocations")
    for ln in mem["lines"][:TOP]:
        out.append(f"    {ln['file']}:{ln['line']}: {ln['allocations']} allocation(s), "
                   f"{fmt_bytes(ln['bytes'])}  | {ln['source']}")

    ann = report.get("annotations") or []
    if ann:
        out.append("")
        out.append("profiler annotations (jaxlite.profiler):")
        for a in ann[:TOP]:
            where = f" ({a['file']}:{a['line']})" if a["file"] else ""
            steps = f", steps {_short_list(a['steps'])}" if a["steps"] else ""
            what = "step " if a["kind"] == "step" else ""
            out.append(f"  {what}{a['name']}{where}: {a['count']} time(s), "
                       f"{a['seconds'] * 1e3:.2f} ms in all, {a['mean_seconds'] * 1e3:.2f} ms "
                       f"mean{steps}")

    at = report["at"]
    out.append("")
    out.append(f".at[] updates: {at['created']} result(s) made eagerly, "
               f"{sum(u['count'] for u in at['unused'])} freed without being read")
    if report["internal_errors"]:
        out.append("")
        out.append("doctor internal errors (the report may be incomplete):")
        for e in report["internal_errors"]:
            out.append(f"  {e}")
    return "\n".join(out) + "\n"

"""The plugin's optimised program (a serialized ``HloModuleProto``) as readable HLO text.

Layer: backends (pjrt).  ``PJRT_Executable_OptimizedProgram`` returns the optimised module
as protocol-buffer bytes (format ``hlo``, or ``hlo_with_config`` wrapping it), not text.
This module decodes the few fields an HLO listing needs (computations, instructions with
their opcode, shape, operands, called computations, and a few attributes) with a small
protocol-buffer wire decoder, and prints them in HLO's notation::

    ENTRY main.4 {
      %x.1 = f32[3]{0} parameter(0)
      %add.3 = f32[3]{0} add(%x.1, %x.1)
      ROOT ...
    }

Field numbers are those of ``xla/service/hlo.proto`` and ``xla/xla_data.proto``.
"""
from __future__ import annotations

import struct

# xla.PrimitiveType -> HLO's short names
_TYPES = {1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32",
          9: "u64", 10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64",
          16: "bf16", 17: "token", 18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4",
          22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 26: "s2",
          27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "f8e8m0fnu", 31: "f4e2m1fn"}


def _fields(buf: bytes) -> list:
    """``[(field number, wire type, value)]`` of one message (varints as ints,
    length-delimited as bytes, fixed as raw bytes)."""
    out, i, n = [], 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            ln, i = _varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protocol-buffer wire type {wt}")
        out.append((num, wt, v))
    return out


def _varint(buf: bytes, i: int):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _ints(fields, num) -> list:
    """Repeated int64 field ``num`` (packed or not)."""
    out = []
    for f, wt, v in fields:
        if f == num:
            if wt == 0:
                out.append(v)
            elif wt == 2:
                j = 0
                while j < len(v):
                    x, j = _varint(v, j)
                    out.append(x)
    return [x - (1 << 64) if x >= 1 << 63 else x for x in out]


def _str(fields, num, default="") -> str:
    for f, wt, v in fields:
        if f == num and wt == 2:
            return v.decode("utf-8", "replace")
    return default


def _msgs(fields, num) -> list:
    return [_fields(v) for f, wt, v in fields if f == num and wt == 2]


def _int(fields, num, default=0) -> int:
    for f, wt, v in fields:
        if f == num and wt == 0:
            return v
    return default


def shape_text(shape) -> str:
    """HLO's text of a ShapeProto (``f32[3,4]{1,0}``, ``(f32[], s32[2]{0})``)."""
    t = _int(shape, 2)
    if t == 13:
        return "(" + ", ".join(shape_text(s) for s in _msgs(shape, 4)) + ")"
    dims = _ints(shape, 3)
    text = f"{_TYPES.get(t, f'type{t}')}[{','.join(map(str, dims))}]"
    layouts = _msgs(shape, 5)
    if layouts and dims:
        text += "{" + ",".join(map(str, _ints(layouts[0], 1))) + "}"
    return text


def _literal_text(inst) -> str:
    lits = _msgs(inst, 8)
    if not lits:
        return ""
    lit = lits[0]
    # a few scalar kinds are enough to show constants (LiteralProto: preds 2, s32s 4,
    # s64s 5, f32s 8, f64s 9)
    for num, fmt in ((8, "<f"), (9, "<d")):
        for f, wt, v in lit:
            if f == num and wt == 2 and v:
                vals = struct.unpack(f"<{len(v) // struct.calcsize(fmt)}{fmt[1]}", v)
                return _short(vals)
    for num in (4, 5, 2):
        vals = _ints(lit, num)
        if vals:
            return _short(vals)
    return "..."


def _short(vals) -> str:
    vals = list(vals)
    body = ", ".join(repr(v) for v in vals[:8]) + (", ..." if len(vals) > 8 else "")
    return body if len(vals) == 1 else "{" + body + "}"


def module_text(code: bytes, fmt: str = "hlo") -> str:
    """HLO text of a serialized ``HloModuleProto`` (``fmt`` ``'hlo'``), or of an
    ``HloModuleProtoWithConfig`` (``'hlo_with_config'``: the module is its field 1)."""
    fields = _fields(code)
    if fmt == "hlo_with_config":
        inner = _msgs(fields, 1)
        fields = inner[0] if inner else []
    comps = _msgs(fields, 3)
    entry_id = _int(fields, 6, None)
    entry_name = _str(fields, 2)
    names = {_int(c, 5): _str(c, 1) for c in comps}
    out = [f"HloModule {_str(fields, 1)}", ""]
    for comp in comps:
        cid = _int(comp, 5)
        insts = _msgs(comp, 2)
        inst_names = {_int(i, 35): _str(i, 1) for i in insts}
        root = _int(comp, 6)
        is_entry = cid == entry_id or (entry_id is None and _str(comp, 1) == entry_name)
        out.append(f"{'ENTRY ' if is_entry else ''}%{_str(comp, 1)} {{")
        for inst in insts:
            out.append("  " + _inst_text(inst, inst_names, names,
                                         root=_int(inst, 35) == root))
        out.append("}")
        out.append("")
    return "\n".join(out)


def _inst_text(inst, inst_names, comp_names, root: bool) -> str:
    op = _str(inst, 2)
    shapes = _msgs(inst, 3)
    shape = shape_text(shapes[0]) if shapes else "?"
    args = [f"%{inst_names.get(o, o)}" for o in _ints(inst, 36)]
    if op == "parameter":
        args = [str(_int(inst, 9))]
    elif op == "constant":
        args = [_literal_text(inst)]
    attrs = []
    dims = _ints(inst, 14)
    if dims:
        attrs.append(f"dimensions={{{','.join(map(str, dims))}}}")
    if op == "get-tuple-element":
        attrs.append(f"index={_int(inst, 13)}")
    kind = _str(inst, 11)
    if kind:
        attrs.append(f"kind={kind}")
    direction = _str(inst, 63)
    if direction:
        attrs.append(f"direction={direction}")
    called = [comp_names.get(c, str(c)) for c in _ints(inst, 38)]
    if called:
        key = "calls" if op in ("fusion", "call", "custom-call") else "to_apply"
        if op == "while" and len(called) == 2:
            attrs.append(f"condition=%{called[0]}, body=%{called[1]}")
        else:
            attrs.append(f"{key}=" + ", ".join(f"%{c}" for c in called))
    target = _str(inst, 28)
    if target:
        attrs.append(f"custom_call_target=\"{target}\"")
    tail = (", " + ", ".join(attrs)) if attrs else ""
    return (f"{'ROOT ' if root else ''}%{_str(inst, 1)} = {shape} "
            f"{op}({', '.join(args)}){tail}")

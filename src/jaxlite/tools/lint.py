"""``jaxlite lint PATH...`` (also ``python -m jaxlite lint``): a static check of Python files
for the JAX pitfalls of the chapter's section 3.5 (and 3.2's growing loops), built on the
standard ``ast`` module.  Each finding prints as ``file:line:col: CODE message (fix: ...)``.

Codes:
  JL000  the file does not parse (a syntax error; nothing else is checked in that file)
  JL001  an ``.at[...].set/add/...(...)`` whose result is discarded: it changes nothing (R5.1)
  JL002  ``print`` inside a jitted function: it runs once, while tracing
  JL003  Python ``if``/``while``/``for ... in range(n)`` on a non-static argument of a jitted
         function (a tracer has no concrete truth value)
  JL004  ``jit(...)`` called inside a loop body: a new wrapper, and a new cache, every iteration
  JL005  a Python loop that grows an array each iteration (``concatenate``/``append``/
         ``stack`` of an accumulating list, ``.at[i].set`` of per-element work) (R2.4)
  JL006  mutation of a global or closed-over container inside a jitted function

A function is jitted when decorated with ``jit`` (``@jax.jit``, ``@jit``, ``@jax.jit(...)``,
``@partial(jax.jit, ...)``) or passed to it (``f = jax.jit(g, ...)``, ``jax.jit(lambda ...)``)
where ``g`` is defined in the calling scope or an enclosing one.  Names are resolved through
the file's imports (``import jaxlite as jax`` and real JAX alike; ``numba.jit`` is not jit);
in a file without imports the usual names (``jax``, ``jnp``, ``lax``, ``jit``) are assumed.

``# noqa`` on a finding's line (any line of the flagged expression) silences it; ``# noqa:
JL001,JL005`` silences only those codes.  Columns are 1-based (as flake8 and ruff print them).
Exit status: 0 when nothing is found, 1 when something is (a syntax error is the finding
JL000), 2 for usage errors: a path that does not exist, cannot be read or is not a regular
file or directory (a named pipe, a device: told apart with ``os.stat``, never opened), a
directory with no ``*.py`` below it (nothing would be checked), an unknown code.  Below a
directory, a ``*.py`` that is not a regular file is skipped with a note on stderr.

Layer: tools.  Reads source text only; never imports or runs the checked files.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import re
import stat
import sys
import tokenize
from pathlib import Path

from . import _paths

HELP = "check Python files for the chapter's JAX pitfalls (static, no code is run)"

# code -> (what it reports, the fix).  Messages add the specifics of each finding.
CODES = {
    "JL000": ("syntax error", "fix the syntax; nothing else was checked in this file"),
    "JL001": (".at[] update whose result is discarded",
              "assign the result, e.g. `x = x.at[i].set(v)`: .at[] returns a new array"),
    "JL002": ("print inside a jitted function",
              "use `jax.debug.print(\"{}\", x)`: it prints on every call, with values"),
    "JL003": ("Python control flow on a traced argument of a jitted function",
              "mark the argument static (static_argnums/static_argnames) or use "
              "lax.cond / lax.while_loop / lax.fori_loop"),
    "JL004": ("jit(...) called inside a loop",
              "create the jitted function once, before the loop, and call it inside"),
    "JL005": ("Python loop that grows an array every iteration",
              "write the loop as lax.scan (or lax.fori_loop), or vmap the per-step function "
              "when steps are independent"),
    "JL006": ("mutation of a global or closed-over container inside a jitted function",
              "return the value instead: side effects run once, while tracing"),
}

_AT_METHODS = frozenset({"set", "add", "sub", "mul", "multiply", "min", "max", "divide",
                         "power", "apply", "get"})
# jax.numpy functions that build a new, larger array from their inputs
_GROW_FUNCS = frozenset({"concatenate", "append", "vstack", "hstack", "dstack", "stack",
                         "column_stack", "row_stack", "insert", "concat"})
_STACK_FUNCS = _GROW_FUNCS | {"array", "asarray"}
# attributes and functions whose value is static under jit (shape metadata)
_STATIC_ATTRS = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes",
                           "weak_type", "aval", "sharding"})
_STATIC_BUILTINS = frozenset({"len", "isinstance", "type", "callable", "hasattr", "id"})
_STATIC_FUNCS = frozenset({f"{m}.{f}" for m in ("jax.numpy", "numpy")
                           for f in ("shape", "ndim", "size", "result_type", "issubdtype",
                                     "iscomplexobj", "isrealobj", "dtype")})
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "add", "discard", "popitem", "sort", "reverse",
                       "appendleft", "extendleft", "__setitem__"})
# names assumed when a file does not import them (snippets, notebooks exported as .py)
_DEFAULT_NAMES = {"jax": "jax", "jaxlite": "jax", "jnp": "jax.numpy", "lax": "jax.lax",
                  "jit": "jax.jit", "partial": "functools.partial",
                  "functools": "functools", "np": "numpy"}
_TRANSFORMS = frozenset({"jax.grad", "jax.value_and_grad", "jax.vmap", "jax.jacfwd",
                         "jax.jacrev", "jax.hessian", "jax.checkpoint", "jax.remat"})
_NOQA_RE = re.compile(r"#\s*noqa(?::[\s]*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?",
                      re.IGNORECASE)
_FUNC_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    """One finding: ``path:line:col: code message (fix: fix)``; ``col`` is 1-based.
    ``end_line`` is the last line of the flagged expression (where ``# noqa`` also counts)."""
    path: str
    line: int
    col: int
    code: str
    message: str
    fix: str
    end_line: int = dataclasses.field(default=0, compare=False)

    def format(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message} (fix: {self.fix})"

    def as_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "col": self.col, "code": self.code,
                "message": self.message, "fix": self.fix}


@dataclasses.dataclass
class _JitSpec:
    """What a jit decoration says about static arguments; ``known`` is False when they are
    given by something other than literals (then no argument is assumed traced)."""
    nums: tuple = ()
    names: tuple = ()
    known: bool = True


# ---- the checker ---------------------------------------------------------------------

class _Checker:
    def __init__(self, tree: ast.Module, path: str):
        self.tree = tree
        self.path = path
        self.findings: list[Finding] = []
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.imports: dict[str, str] = {}
        self.locally_bound: set[str] = set()
        self._collect_names()
        # scope node (Module or function) -> {name: [def nodes defined directly there]}
        self.defs: dict[ast.AST, dict[str, list]] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.setdefault(self.scope_of(node), {}).setdefault(node.name, []).append(node)
        self.jitted: dict[ast.AST, _JitSpec] = {}
        self._collect_jitted()
        self._module_vars_cache: set | None = None

    # -- names --------------------------------------------------------------------------
    def _collect_names(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.imports[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.imports[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.imports[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.locally_bound.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locally_bound.add(node.id)

    def qualify(self, expr) -> str | None:
        """The dotted name ``expr`` refers to through the file's imports (``jaxlite`` spelled
        ``jax``), or None."""
        if isinstance(expr, ast.Name):
            if expr.id in self.imports:
                q = self.imports[expr.id]
            elif expr.id in self.locally_bound:
                return None
            else:
                q = _DEFAULT_NAMES.get(expr.id)
                if q is None:
                    return None
        elif isinstance(expr, ast.Attribute):
            base = self.qualify(expr.value)
            if base is None:
                return None
            q = f"{base}.{expr.attr}"
        else:
            return None
        if q == "jaxlite" or q.startswith("jaxlite."):
            q = "jax" + q[len("jaxlite"):]
        return q

    def is_jit(self, expr) -> bool:
        return self.qualify(expr) == "jax.jit"

    def jit_spec(self, expr) -> _JitSpec | None:
        """The spec when ``expr`` used as a decorator (or called on a function) jits it:
        ``jit``, ``jit(**static)`` with no function, ``partial(jit, **static)``."""
        if self.is_jit(expr):
            return _JitSpec()
        if isinstance(expr, ast.Call):
            if self.is_jit(expr.func) and not expr.args:
                return _static_spec(expr.keywords)
            if (self.qualify(expr.func) == "functools.partial" and expr.args
                    and self.is_jit(expr.args[0])):
                return _static_spec(expr.keywords)
        return None

    def jit_call(self, call: ast.Call):
        """``(spec, function expression)`` when ``call`` wraps a function with jit."""
        if not call.args:
            return None
        if self.is_jit(call.func):
            return _static_spec(call.keywords), call.args[0]
        if isinstance(call.func, ast.Call):
            spec = self.jit_spec(call.func)
            if spec is not None:
                return spec, call.args[0]
        return None

    def scope_of(self, node) -> ast.AST:
        p = self.parent.get(node)
        while p is not None and not isinstance(p, (ast.Module,) + _FUNC_NODES):
            p = self.parent.get(p)
        return p if p is not None else self.tree

    def resolve_function(self, name: str, at: ast.AST):
        scope = self.scope_of(at)
        while True:
            found = self.defs.get(scope, {}).get(name)
            if found:
                return found[-1]
            if scope is self.tree:
                return None
            scope = self.scope_of(scope)

    def _collect_jitted(self):
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    spec = self.jit_spec(dec)
                    if spec is not None:
                        self.jitted[node] = spec
            elif isinstance(node, ast.Call):
                found = self.jit_call(node)
                if found is None:
                    continue
                spec, target = found
                # jit(grad(f)) traces f as well
                while (isinstance(target, ast.Call) and target.args
                       and self.qualify(target.func) in _TRANSFORMS):
                    target = target.args[0]
                if isinstance(target, ast.Lambda):
                    self.jitted[target] = spec
                elif isinstance(target, ast.Name):
                    fn = self.resolve_function(target.id, node)
                    if fn is not None:
                        self.jitted[fn] = spec

    # -- reporting ----------------------------------------------------------------------
    def report(self, node, code: str, message: str, fix: str | None = None):
        self.findings.append(Finding(
            self.path, node.lineno, node.col_offset + 1, code, message,
            fix or CODES[code][1], getattr(node, "end_lineno", None) or node.lineno))

    def run(self) -> list[Finding]:
        self.check_discarded_at()
        self.check_jit_in_loop()
        self.check_growing_loops()
        for fn, spec in self.jitted.items():
            name = getattr(fn, "name", "<lambda>")
            self.check_print(fn, name)
            self.check_traced_control_flow(fn, name, spec)
            self.check_mutation(fn, name)
        return self.findings

    # -- JL001 --------------------------------------------------------------------------
    def check_discarded_at(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Expr) and _is_at_update(node.value):
                method = node.value.func.attr
                base = node.value.func.value.value.value
                target = _src_name(base)
                if method == "get":
                    self.report(node.value, "JL001",
                                f"result of `{target}.at[...].get(...)` is discarded: the "
                                f"line reads values and does nothing with them",
                                "use the value (`v = x.at[i].get()`) or remove the line")
                elif isinstance(base, (ast.Name, ast.Attribute)):
                    self.report(node.value, "JL001",
                                f"result of `{target}.at[...].{method}(...)` is discarded: "
                                f"`{target}` is unchanged (arrays are immutable)")
                else:
                    self.report(node.value, "JL001",
                                f"result of `.at[...].{method}(...)` is discarded: the "
                                f"updated array is thrown away (arrays are immutable)")

    # -- JL004 --------------------------------------------------------------------------
    def check_jit_in_loop(self):
        def visit(node, in_loop):
            if isinstance(node, _LOOP_NODES):
                visit(node.iter if isinstance(node, (ast.For, ast.AsyncFor)) else node.test,
                      in_loop)
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    visit(node.target, in_loop)
                for s in node.body:
                    visit(s, True)
                for s in node.orelse:
                    visit(s, in_loop)
                return
            if isinstance(node, _SCOPE_NODES):
                for dec in getattr(node, "decorator_list", ()):
                    if in_loop and self.jit_spec(dec) is not None:
                        self.report(dec, "JL004",
                                    f"`@jit` on `{node.name}` inside a loop: a new jitted "
                                    f"function, with an empty cache, every iteration")
                    visit(dec, in_loop)
                if not isinstance(node, ast.ClassDef):
                    for d in node.args.defaults + [d for d in node.args.kw_defaults if d]:
                        visit(d, in_loop)
                body = node.body if isinstance(node.body, list) else [node.body]
                for s in body:
                    visit(s, False)
                return
            if isinstance(node, _COMPREHENSIONS):
                gens = node.generators
                visit(gens[0].iter, in_loop)
                for i, g in enumerate(gens):
                    if i:
                        visit(g.iter, True)
                    for cond in g.ifs:
                        visit(cond, True)
                for part in ("elt", "key", "value"):
                    if hasattr(node, part):
                        visit(getattr(node, part), True)
                return
            if in_loop and isinstance(node, ast.Call) and self.jit_call(node) is not None:
                self.report(node, "JL004",
                            "jit(...) called inside a loop: a new wrapper, and a new "
                            "compile cache, every iteration")
            for child in ast.iter_child_nodes(node):
                visit(child, in_loop)
        visit(self.tree, False)

    # -- JL005 --------------------------------------------------------------------------
    def _grow_func(self, call) -> str | None:
        q = self.qualify(call.func) if isinstance(call, ast.Call) else None
        if q and q.startswith("jax.numpy.") and q.rsplit(".", 1)[1] in _GROW_FUNCS:
            return q.rsplit(".", 1)[1]
        return None

    def check_growing_loops(self):
        seen = set()
        for loop in ast.walk(self.tree):
            if not isinstance(loop, _LOOP_NODES):
                continue
            loop_vars = ({n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
                         if isinstance(loop, (ast.For, ast.AsyncFor)) else set())
            for node in _walk_same_scope(loop.body):
                if id(node) in seen:
                    continue
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Name):
                    name = node.targets[0].id
                    value = node.value
                    fname = self._grow_func(value)
                    if fname and _mentions(value.args, name):
                        seen.add(id(node))
                        self.report(value, "JL005",
                                    f"`{name} = jnp.{fname}(...{name}...)` in a loop copies "
                                    f"the whole growing array every iteration")
                    elif (_is_at_update(value) and value.func.attr == "set"
                          and _src_name(value.func.value.value.value) == name
                          and loop_vars and _mentions([value.func.value.slice], loop_vars)
                          and any(isinstance(n, ast.Call)
                                  for a in value.args for n in ast.walk(a))):
                        seen.add(id(node))
                        self.report(value, "JL005",
                                    f"`{name} = {name}.at[...].set(f(...))` in a loop copies "
                                    f"`{name}` to fill one slot per iteration")
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr == "append" and isinstance(node.func.value, ast.Name)
                      and isinstance(self.parent.get(node), ast.Expr)):
                    lst = node.func.value.id
                    stacked = self._stacked_after(loop, lst)
                    if stacked is not None:
                        seen.add(id(node))
                        self.report(node, "JL005",
                                    f"`{lst}.append(...)` in a loop keeps every step's array "
                                    f"alive until `jnp.{stacked}({lst})` after the loop")

    def _stacked_after(self, loop, lst: str) -> str | None:
        """The jax.numpy function stacking list ``lst`` after ``loop`` in the same scope
        (``lst`` being created as an empty list before the loop), or None."""
        scope = self.scope_of(loop)
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        created = stacked = None
        for node in _walk_same_scope(body):
            if (isinstance(node, ast.Assign) and node.lineno < loop.lineno
                    and any(isinstance(t, ast.Name) and t.id == lst for t in node.targets)
                    and _is_empty_list(node.value)):
                created = node
            elif (isinstance(node, ast.Call) and node.lineno > (loop.end_lineno or 0)
                  and node.args):
                q = self.qualify(node.func)
                if (q and q.startswith("jax.numpy.") and q.rsplit(".", 1)[1] in _STACK_FUNCS
                        and isinstance(node.args[0], ast.Name) and node.args[0].id == lst):
                    stacked = q.rsplit(".", 1)[1]
        return stacked if created is not None else None

    # -- JL002 --------------------------------------------------------------------------
    def check_print(self, fn, name):
        if "print" in self.imports:
            return
        for node in _walk_body(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "print"):
                self.report(node, "JL002",
                            f"print(...) inside jitted `{name}` runs only while tracing "
                            f"(once per compile), not on every call")

    # -- JL003 --------------------------------------------------------------------------
    def check_traced_control_flow(self, fn, name, spec: _JitSpec):
        if not spec.known:
            return
        a = fn.args
        positional = a.posonlyargs + a.args
        n_plain = len(positional) - len(a.defaults)
        static_idx = {i % len(positional) if positional else i for i in spec.nums
                      if -len(positional) <= i < len(positional)}
        traced = set()
        for i, arg in enumerate(positional):
            if i < n_plain and i not in static_idx and arg.arg not in spec.names \
                    and not (i == 0 and arg.arg in ("self", "cls")):
                traced.add(arg.arg)
        for arg, default in zip(a.kwonlyargs, a.kw_defaults):
            if default is None and arg.arg not in spec.names:
                traced.add(arg.arg)
        if not traced:
            return
        body = list(_walk_body(fn))
        tainted = set(traced)
        changed = True
        while changed:
            changed = False
            for node in body:
                for target, value in _bindings(node):
                    if self._dynamic_ref(value, tainted) is None:
                        continue
                    for t in _target_names(target):
                        if t not in tainted:
                            tainted.add(t)
                            changed = True
        for node in body:
            checks = []
            if isinstance(node, ast.If):
                checks.append(("if", node.test))
            elif isinstance(node, ast.While):
                checks.append(("while", node.test))
            elif isinstance(node, ast.IfExp):
                checks.append(("if-expression", node.test))
            elif isinstance(node, ast.comprehension):
                checks += [("comprehension if", c) for c in node.ifs]
            if (isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Call)
                    and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range"
                    and "range" not in self.locally_bound):
                checks.append(("for ... in range", node.iter))
            for what, expr in checks:
                ref = self._dynamic_ref(expr, tainted)
                if ref is None:
                    continue
                origin = (f"argument `{ref.id}`" if ref.id in traced
                          else f"`{ref.id}` (computed from a traced argument)")
                self.report(expr, "JL003",
                            f"Python `{what}` on {origin} of jitted `{name}`: under jit it "
                            f"is a tracer with no concrete value")

    def _dynamic_ref(self, expr, tainted):
        """The first Name in ``expr`` whose traced value (not only its shape/dtype) is
        used, or None."""
        if isinstance(expr, ast.Name):
            return expr if expr.id in tainted else None
        if isinstance(expr, ast.Attribute):
            return None if expr.attr in _STATIC_ATTRS else self._dynamic_ref(expr.value, tainted)
        if isinstance(expr, ast.Call):
            f = expr.func
            if isinstance(f, ast.Name) and f.id in _STATIC_BUILTINS:
                return None
            if self.qualify(f) in _STATIC_FUNCS:
                return None
            if isinstance(f, ast.Attribute) and f.attr == "keys":
                return None
        if isinstance(expr, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in expr.ops):
                return None
            parts = [expr.left] + [c for op, c in zip(expr.ops, expr.comparators)
                                   if not isinstance(op, (ast.In, ast.NotIn))]
            for p in parts:
                ref = self._dynamic_ref(p, tainted)
                if ref is not None:
                    return ref
            return None
        if isinstance(expr, _SCOPE_NODES):
            return None
        for child in ast.iter_child_nodes(expr):
            ref = self._dynamic_ref(child, tainted)
            if ref is not None:
                return ref
        return None

    # -- JL006 --------------------------------------------------------------------------
    def check_mutation(self, fn, name):
        inside = list(_walk_body(fn))
        local = {a.arg for f in [fn] + [n for n in inside if isinstance(n, _FUNC_NODES)]
                 for a in _all_args(f.args)}
        declared = set()
        for node in inside:
            # `nonlocal` in a function nested inside ``fn`` may name ``fn``'s own local
            if isinstance(node, ast.Global) or (isinstance(node, ast.Nonlocal)
                                                and self.scope_of(node) is fn):
                declared.update(node.names)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                local.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                local.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                local.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                local.add(node.name)
        local -= declared
        outer = self._outer_containers(fn)

        def non_local(n):
            return (isinstance(n, ast.Name) and n.id not in local
                    and (n.id in outer or n.id in declared))

        for node in inside:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _MUTATORS and non_local(node.func.value)):
                self.report(node, "JL006",
                            f"`{node.func.value.id}.{node.func.attr}(...)` inside jitted "
                            f"`{name}` mutates a {self._kind(node.func.value.id, declared)} "
                            f"once, while tracing, and stores tracers in it")
            targets = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                targets = [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, (ast.Subscript, ast.Attribute)) and non_local(sub.value) \
                            and isinstance(sub.ctx, (ast.Store, ast.Del)):
                        what = "item" if isinstance(sub, ast.Subscript) else "attribute"
                        self.report(sub, "JL006",
                                    f"writing an {what} of `{sub.value.id}` inside jitted "
                                    f"`{name}` mutates a "
                                    f"{self._kind(sub.value.id, declared)} once, while tracing")
                    elif (isinstance(sub, ast.Name) and sub.id in declared
                          and isinstance(sub.ctx, (ast.Store, ast.Del))):
                        self.report(sub, "JL006",
                                    f"writing `{sub.id}` (declared global/nonlocal) inside "
                                    f"jitted `{name}` happens once, while tracing")

    def _kind(self, var, declared):
        return "global" if var in declared or var in self._module_vars() else \
            "closed-over variable"

    def _module_vars(self):
        if self._module_vars_cache is not None:
            return self._module_vars_cache
        out = self._module_vars_cache = set()
        for node in _walk_same_scope(self.tree.body):
            for target, _ in _bindings(node):
                out.update(_target_names(target))
        return out

    def _outer_containers(self, fn) -> set:
        """Names bound (by assignment or as a parameter) in the module or in the functions
        enclosing ``fn``: the variables it may close over (imports and defs excluded)."""
        out = self._module_vars()
        scope = self.scope_of(fn)
        while scope is not self.tree:
            out.update(a.arg for a in _all_args(scope.args))
            body = scope.body if isinstance(scope.body, list) else [scope.body]
            for node in _walk_same_scope(body):
                for target, _ in _bindings(node):
                    out.update(_target_names(target))
            scope = self.scope_of(scope)
        return out


# ---- AST helpers ---------------------------------------------------------------------

def _static_spec(keywords) -> _JitSpec:
    spec = _JitSpec()
    for kw in keywords:
        if kw.arg is None:
            return _JitSpec(known=False)
        if kw.arg not in ("static_argnums", "static_argnames"):
            continue
        try:
            val = ast.literal_eval(kw.value)
        except ValueError:
            return _JitSpec(known=False)
        vals = tuple(val) if isinstance(val, (tuple, list)) else (val,)
        if kw.arg == "static_argnums":
            if not all(isinstance(v, int) for v in vals):
                return _JitSpec(known=False)
            spec.nums += vals
        else:
            if not all(isinstance(v, str) for v in vals):
                return _JitSpec(known=False)
            spec.names += vals
    return spec


def _is_at_update(node) -> bool:
    """``node`` is ``<expr>.at[...].<method>(...)``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _AT_METHODS and isinstance(node.func.value, ast.Subscript)
            and isinstance(node.func.value.value, ast.Attribute)
            and node.func.value.value.attr == "at")


def _src_name(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed expression
        return "array"


def _mentions(nodes, names) -> bool:
    names = {names} if isinstance(names, str) else names
    return any(isinstance(n, ast.Name) and n.id in names for x in nodes for n in ast.walk(x))


def _target_names(target):
    """The names an assignment target binds (``x``, ``a, (b, *c)``; not ``d[k]``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _is_empty_list(node) -> bool:
    return ((isinstance(node, ast.List) and not node.elts)
            or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "list" and not node.args))


def _all_args(args: ast.arguments):
    out = args.posonlyargs + args.args + args.kwonlyargs
    return out + [a for a in (args.vararg, args.kwarg) if a is not None]


def _walk_same_scope(stmts):
    """Every node under ``stmts`` without entering nested functions, lambdas or classes."""
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPE_NODES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _walk_body(fn):
    """Every node in function ``fn``'s body (its decorators and defaults excluded), nested
    functions included: they are traced when the jitted function calls them."""
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for stmt in body:
        yield from ast.walk(stmt)


def _bindings(node):
    """``(target, value)`` pairs that ``node`` binds (for taint tracking)."""
    if isinstance(node, ast.Assign):
        return [(t, node.value) for t in node.targets]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.NamedExpr):
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        it = node.iter
        # `for k, v in d.items()`: the keys of a pytree are static
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)
                and it.func.attr == "items" and isinstance(node.target, ast.Tuple)
                and len(node.target.elts) == 2):
            return [(node.target.elts[1], it)]
        return [(node.target, it)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


# ---- files and suppression ------------------------------------------------------------

def _noqa_codes(line: str):
    """None when the line has no ``# noqa``; the empty set for a bare ``# noqa`` (all
    codes); else the set of codes named."""
    m = _NOQA_RE.search(line)
    if m is None:
        return None
    codes = m.group("codes")
    return set() if not codes else {c.upper() for c in re.split(r"[\s,]+", codes.strip())}


def _suppressed(finding: Finding, lines: list[str]) -> bool:
    for ln in range(finding.line, max(finding.line, finding.end_line) + 1):
        if 1 <= ln <= len(lines):
            codes = _noqa_codes(lines[ln - 1])
            if codes is not None and (not codes or finding.code in codes):
                return True
    return False


def lint_source(source: str, path: str = "<string>", select=None, ignore=None) -> list[Finding]:
    """Lints Python source text; returns its findings sorted by position.

    Args:
      source: the text of a Python file.
      path: the name to report findings under.
      select: codes to report (default: all); ignore: codes not to report.

    A syntax error is the one finding JL000 (nothing else is checked).  ``# noqa`` comments
    are honoured.  Example::

        >>> [f.code for f in lint_source("x.at[0].set(1)\\n")]
        ['JL001']
    """
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        findings = [Finding(path, e.lineno or 1, e.offset or 1, "JL000",
                            f"syntax error: {e.msg}", CODES["JL000"][1], e.lineno or 1)]
    else:
        findings = _Checker(tree, path).run()
    lines = source.splitlines()
    out = set()
    for f in findings:
        if select and f.code not in select:
            continue
        if ignore and f.code in ignore:
            continue
        if f.code != "JL000" and _suppressed(f, lines):
            continue
        out.add(f)
    return sorted(out)


def iter_python_files(paths, notes=None):
    """Yields the files to lint: each file given, and every ``*.py`` under each directory
    (recursively, skipping hidden directories and ``__pycache__``), sorted.

    Only regular files are yielded; what a path is, is asked with ``os.stat``, never by
    opening it (opening a named pipe waits for a writer).  Below a directory, a ``*.py``
    that is not a regular file (a named pipe, a device, a dangling symlink) is skipped
    with a message appended to ``notes`` (a list; None: the message is dropped).

    Raises:
      FileNotFoundError: a path given does not exist.
      ValueError: a path given is a named pipe, a device or a socket (message names it).
      OSError: a path given cannot be examined.
    """
    for p in map(Path, paths):
        st = _paths.stat_or_error(p)
        if stat.S_ISDIR(st.st_mode):
            for f in sorted(p.rglob("*.py")):
                rel = f.relative_to(p).parts[:-1]
                if any(part.startswith(".") or part == "__pycache__" for part in rel):
                    continue
                try:
                    fst = _paths.stat_or_error(f)
                except OSError as e:
                    if notes is not None:
                        notes.append(f"skipped {f}: {e}")
                    continue
                if stat.S_ISDIR(fst.st_mode):
                    continue   # a directory named *.py: rglob walks into it
                if not stat.S_ISREG(fst.st_mode):
                    if notes is not None:
                        notes.append(f"skipped {f}: it is {_paths.kind(fst)}, "
                                     f"not a regular file")
                    continue
                yield f
        elif stat.S_ISREG(st.st_mode):
            yield p
        else:
            raise ValueError(f"{p} is {_paths.kind(st)}, not a regular file; give Python "
                             f"files or directories")


def lint_paths(paths, select=None, ignore=None, notes=None):
    """Lints files and directories.  Returns ``(findings, errors)``: the findings of every
    readable file, and one message per path given that does not exist, is not a regular
    file or directory (a named pipe, a device), cannot be read, or is a directory with no
    ``*.py`` to lint (checking nothing is not a clean result).  Files below a
    directory that are not regular files are skipped with a message appended to
    ``notes`` (a list; default None: written to ``sys.stderr``); they are not errors."""
    findings, errors = [], []
    for p in paths:
        skipped = []
        try:
            files = list(iter_python_files([p], skipped))
        except (OSError, ValueError) as e:
            errors.append(str(e))
            continue
        finally:
            if notes is not None:
                notes += skipped
            else:
                for n in skipped:
                    print(f"jaxlite lint: {n}", file=sys.stderr)
        if not files:     # a directory (a file given is always linted): nothing to check
            errors.append(f"{p} is a directory with no Python files (*.py) to lint"
                          + (" (those there are skipped: see above)" if skipped else ""))
            continue
        for f in files:
            try:
                with tokenize.open(f) as fh:  # honours a `# -*- coding` line
                    source = fh.read()
            except (OSError, UnicodeDecodeError, SyntaxError) as e:
                errors.append(f"cannot read {f}: {e}")
                continue
            findings += lint_source(source, str(f), select, ignore)
    return findings, errors


# ---- command line ---------------------------------------------------------------------

def _codes_arg(values):
    codes = set()
    for v in values or ():
        codes.update(c.strip().upper() for c in v.split(",") if c.strip())
    return codes


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="Python files, or directories to search for *.py")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: one `file:line:col: CODE message (fix: ...)` per line; "
                             "json: a list of {path, line, col, code, message, fix}")
    parser.add_argument("--select", action="append", metavar="CODES",
                        help="report only these codes (comma-separated, may be repeated)")
    parser.add_argument("--ignore", action="append", metavar="CODES",
                        help="do not report these codes (comma-separated, may be repeated)")
    parser.epilog = ("codes: " + "; ".join(f"{c} {d}" for c, (d, _) in CODES.items())
                     + ".  Exit status: 0 clean, 1 findings, 2 usage errors (a path that "
                     "does not exist, is not a regular file or directory (a named pipe, a "
                     "device) or cannot be read; a directory with no *.py; an unknown "
                     "code); below a directory, a "
                     "*.py that is not a regular file is skipped with a note.")


def run(args) -> int:
    """Lints ``args.paths``; prints the findings.  Returns 0 (clean), 1 (findings) or 2
    (a path missing, unreadable or not a regular file or directory, a directory with no
    ``*.py``, or an unknown code in --select/--ignore).  Skipped files below a directory
    are noted on stderr."""
    select, ignore = _codes_arg(args.select), _codes_arg(args.ignore)
    unknown = sorted((select | ignore) - set(CODES))
    if unknown:
        print(f"jaxlite lint: unknown code(s) {', '.join(unknown)}; known: "
              f"{', '.join(CODES)}", file=sys.stderr)
        return 2
    notes = []
    findings, errors = lint_paths(args.paths, select or None, ignore or None, notes)
    for n in notes:
        print(f"jaxlite lint: {n}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    else:
        for f in findings:
            print(f.format())
    for e in errors:
        print(f"jaxlite lint: {e}", file=sys.stderr)
    if errors:
        return 2
    return 1 if findings else 0

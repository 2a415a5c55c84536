"""Compiler: passes over the IR (each a pure ClosedJaxpr -> ClosedJaxpr function) and the
pipeline that hands the optimised program to a backend."""
from .pipeline import compile_jaxpr, optimize, PASSES, cost_analysis

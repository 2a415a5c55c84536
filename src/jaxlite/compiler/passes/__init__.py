"""Compiler passes.  Each is ``pass(closed_jaxpr) -> closed_jaxpr``, pure and printable."""
from .inline import inline_calls
from .fold import fold_constants
from .cse import cse
from .dce import dce
from .fuse import fuse, fusion_score

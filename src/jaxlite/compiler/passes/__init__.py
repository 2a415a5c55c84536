"""Compiler passes.  Each is ``pass(closed_jaxpr) -> closed_jaxpr``, pure and printable."""
from .inline import inline_calls
from .expand_broadcasts import expand_size1_broadcasts
from .fold import fold_constants
from .cse import cse
from .batch_dot_sum import fold_batch_dot_sums
from .compose_broadcasts import compose_broadcasts
from .dce import dce
from .dot_transpose import swap_transposed_dots
from .fuse import fuse, fusion_score

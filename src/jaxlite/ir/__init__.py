"""The jaxpr-style IR: typed variables, equations, closed programs, printer, interpreter."""
from .jaxpr import Var, Literal, JaxprEqn, Jaxpr, ClosedJaxpr, pp_jaxpr
from .interpret import eval_jaxpr
from .check import check_jaxpr, JaxprTypeError

"""Run-time limits of a Loop-5.

A Loop with ``trip_count = -1`` runs while its body's condition holds; a body
whose condition never turns false (a Const true, a counter that never reaches
its bound) would run forever and its concatenated outputs would grow without
end.  :class:`mli.graph.Loop` therefore stops with a :class:`LoopLimitError`
(a ``ValueError``) naming the Loop when

* it is about to start iteration number :func:`max_loop_iterations` + 1, or
* its concatenated outputs would hold more than :func:`max_loop_output_bytes`
  bytes together.

Each limit is, first found: the module setting (``MAX_LOOP_ITERATIONS`` /
``MAX_LOOP_OUTPUT_BYTES`` of this module, ``None`` = not set), the environment
variable (``MLI_MAX_LOOP_ITERATIONS`` / ``MLI_MAX_LOOP_OUTPUT_BYTES``, read at
each Loop call), the default (:data:`DEFAULT_MAX_LOOP_ITERATIONS` = 1,000,000
iterations, :data:`DEFAULT_MAX_LOOP_OUTPUT_BYTES` = 1 GiB).
"""

from __future__ import annotations


from .._settings import limit
from .ports import GraphError

__all__ = ["MAX_LOOP_ITERATIONS", "MAX_LOOP_OUTPUT_BYTES", "DEFAULT_MAX_LOOP_ITERATIONS",
           "DEFAULT_MAX_LOOP_OUTPUT_BYTES", "ITERATIONS_ENV", "OUTPUT_BYTES_ENV",
           "LoopLimitError", "max_loop_iterations", "max_loop_output_bytes"]

DEFAULT_MAX_LOOP_ITERATIONS = 1_000_000
DEFAULT_MAX_LOOP_OUTPUT_BYTES = 1 << 30
ITERATIONS_ENV = "MLI_MAX_LOOP_ITERATIONS"
OUTPUT_BYTES_ENV = "MLI_MAX_LOOP_OUTPUT_BYTES"
#: iterations a Loop may run; None: from the environment, else the default
MAX_LOOP_ITERATIONS = None
#: bytes the concatenated outputs of one Loop call may hold; None: environment, else default
MAX_LOOP_OUTPUT_BYTES = None


class LoopLimitError(GraphError):
    """A Loop passed :func:`max_loop_iterations` or :func:`max_loop_output_bytes`."""


def max_loop_iterations() -> int:
    """The iteration limit now in force (see the module docstring)."""
    return limit(MAX_LOOP_ITERATIONS, "mli.graph.limits.MAX_LOOP_ITERATIONS", ITERATIONS_ENV,
                 DEFAULT_MAX_LOOP_ITERATIONS)


def max_loop_output_bytes() -> int:
    """The output-size limit now in force (see the module docstring)."""
    return limit(MAX_LOOP_OUTPUT_BYTES, "mli.graph.limits.MAX_LOOP_OUTPUT_BYTES", OUTPUT_BYTES_ENV,
                 DEFAULT_MAX_LOOP_OUTPUT_BYTES, "byte count")

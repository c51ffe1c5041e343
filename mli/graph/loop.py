"""Loop-5 driver."""

from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from . import limits
from .body import describe_output
from .ports import CurrentIteration
from .tensor_iterator import _SubGraphOp

__all__ = ["Loop"]

_TRIP_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


class Loop(_SubGraphOp):
    """Loop-5: run a body while a condition holds, at most ``trip_count`` times.

    Parameters
    ----------
    body : Body
        Object with ``run(list_of_arrays) -> sequence_of_arrays``.
    inputs : sequence of SlicedInput, InvariantInput or MergedInput
        Port map; ``external`` counts the call's positional arguments, so
        0 is ``trip_count``, 1 ``execution_condition`` and data inputs start
        at 2 (entries may also read ports 0 and 1).
    outputs : sequence of ConcatOutput or LastIterationOutput
        Port map of the outputs (``external`` = position in the result).
    back_edges : sequence of BackEdge
        One per MergedInput (a back edge may also target the
        current-iteration input, which then stops counting after iteration 0).
    current_iteration : int or CurrentIteration, optional
        Body input that receives the iteration number (an int means an int64
        scalar).
    execution_condition : int, optional
        Body output (bool, scalar or [1]) read after each iteration; the next
        iteration runs only if it is true.  ``None``: always true.
    name : str, optional
        Used in error messages.

    Notes
    -----
    ``i = 0; cond = execution_condition; while cond and (trip_count == -1 or
    i < trip_count): run body; cond = body condition; apply back edges; i += 1``.
    After zero iterations, loop-carried outputs (and outputs that forward a
    body input) return the initial value; concatenated outputs are empty on
    their axis.  Sliced inputs give chunk ``i`` to iteration ``i``; running
    out of chunks raises :class:`GraphError`.  A run longer than
    :func:`mli.graph.limits.max_loop_iterations` iterations, or whose
    concatenated outputs pass :func:`mli.graph.limits.max_loop_output_bytes`,
    stops with :class:`mli.graph.limits.LoopLimitError` (see :mod:`mli.graph.limits`).
    """

    _kind = "Loop"
    _first_data_input = 2

    def __init__(self, body, inputs: Sequence = (), outputs: Sequence = (),
                 back_edges: Sequence = (), *, current_iteration=None, execution_condition=None,
                 name: str | None = None):
        self.name = name or self._kind
        if current_iteration is not None and not isinstance(current_iteration, CurrentIteration):
            current_iteration = CurrentIteration(current_iteration)
        if execution_condition is not None:
            if isinstance(execution_condition, bool):
                raise self._err("execution_condition must be a body output index")
            try:
                execution_condition = operator.index(execution_condition)
            except TypeError:
                raise self._err(f"execution_condition must be a body output index, "
                                f"got {execution_condition!r}") from None
            if execution_condition < 0:
                raise self._err(f"execution_condition must be >= 0, got {execution_condition}")
        self.current_iteration = current_iteration
        self.execution_condition = execution_condition
        super().__init__(body, inputs, outputs, back_edges, name, current_iteration,
                         execution_condition)
        self._ci_carried = current_iteration is not None and any(
            e.to_parameter == current_iteration.internal for e in self.back_edges)

    def _trip(self, x: np.ndarray) -> int:
        if x.dtype not in _TRIP_DTYPES or x.ndim > 1 or x.size != 1:
            raise self._err(f"trip_count must be an int32/int64 scalar or [1] tensor, "
                            f"got {x.dtype}{list(x.shape)}")
        trip = int(x.reshape(-1)[0])
        if trip < -1:
            raise self._err(f"trip_count must be -1 (unbounded) or >= 0, got {trip}")
        return trip

    def _cond(self, x: np.ndarray, what: str) -> bool:
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if x.dtype != np.bool_ or x.ndim > 1 or x.size != 1:
            raise self._err(f"{what} must be a bool scalar or [1] tensor, "
                            f"got {x.dtype}{list(x.shape)}")
        return bool(x.reshape(-1)[0])

    def __call__(self, trip_count, execution_condition, *inputs):
        """Run the Loop.

        Parameters
        ----------
        trip_count : array_like
            int32/int64 scalar or [1]; -1 means no limit.
        execution_condition : array_like
            bool scalar or [1]; false means zero iterations.
        *inputs : array_like
            Data inputs (external ports 2, 3, ...).

        Returns
        -------
        tuple of numpy.ndarray
            External outputs, in port order.
        """
        arrays = self._as_arrays((trip_count, execution_condition) + inputs)
        trip = self._trip(arrays[0])
        cond = self._cond(arrays[1], "execution_condition input")
        planned = getattr(self.body, "run_loop", None)    # an IR body's whole-sequence run
        if planned is not None and (result := planned(self, arrays)) is not None:
            return result
        body_in, plans = self._start(arrays)
        run = self.body.run
        concat = [p.internal for p in self._concat]
        scans = [[] for _ in concat]
        edges = self._edges
        ci, ci_carried = self.current_iteration, self._ci_carried
        cond_j = self.execution_condition
        cond_what = (describe_output(self.body, cond_j) + " (execution_condition)"
                     if cond_j is not None else "")
        out, i = None, 0
        max_iter, max_bytes = limits.max_loop_iterations(), limits.max_loop_output_bytes()
        scan_bytes = 0
        while cond and (trip < 0 or i < trip):
            if i >= max_iter:
                raise limits.LoopLimitError(
                    f"{self.name}: stopped before iteration {i + 1}: the limit is {max_iter} "
                    f"iterations (mli.graph.limits.MAX_LOOP_ITERATIONS or "
                    f"{limits.ITERATIONS_ENV}); trip_count {trip}, the condition still true")
            for p, n, x, pre, first, step, size in plans:
                if i >= n:
                    raise self._err(f"{p.label}: iteration {i} needs chunk {i}, but the input "
                                    f"has only {n} chunks (trip_count must not exceed them)")
                s = first + i * step
                body_in[p.internal] = x[pre + (slice(s, s + size),)]
            if ci is not None and not (ci_carried and i):
                body_in[ci.internal] = ci.value(i)
            out = run(body_in)
            for lst, j in zip(scans, concat):
                lst.append(out[j])
                scan_bytes += out[j].nbytes
            if scan_bytes > max_bytes:
                raise limits.LoopLimitError(
                    f"{self.name}: the concatenated outputs reach {scan_bytes} bytes after "
                    f"{i + 1} iterations, more than the limit of {max_bytes} bytes "
                    f"(mli.graph.limits.MAX_LOOP_OUTPUT_BYTES or {limits.OUTPUT_BYTES_ENV})")
            if cond_j is not None:
                cond = self._cond(out[cond_j], cond_what)
            for j, k in edges:
                body_in[k] = out[j]
            i += 1
        return self._finish(arrays, i, scans, out)


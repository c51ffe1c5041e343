"""TensorIterator-1 driver (and the parts it shares with Loop-5)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .body import describe_input, describe_output
from .ports import (INPUT_PORTS, OUTPUT_PORTS, BackEdge, ConcatOutput, CurrentIteration,
                    GraphError, InvariantInput, LastIterationOutput, MergedInput, SlicedInput)

__all__ = ["TensorIterator"]


class _Stacked:
    """All iterations' values of one concatenated output at once, stacked on
    a new leading axis (a fused body's whole-sequence result), in place of a
    list of per-iteration arrays."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __len__(self):
        return self.array.shape[0]


class _SubGraphOp:
    """Port-map validation, input slicing and output assembly shared by TI and Loop."""

    _kind = "SubGraph"
    _first_data_input = 0          # Loop: 2 (ports 0/1 are trip count and condition)

    def __init__(self, body, inputs, outputs, back_edges, name, current_iteration=None,
                 execution_condition=None):
        run = getattr(body, "run", None)
        if not callable(run):
            raise TypeError(f"{self._kind}: body must have a run(inputs) method, "
                            f"got {type(body).__name__}")
        self.body = body
        self.name = name or self._kind
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.back_edges = tuple(back_edges)
        self._validate(current_iteration, execution_condition)

    # ------------------------------------------------------------------ validation
    def _err(self, msg: str) -> GraphError:
        return GraphError(f"{self.name}: {msg}")

    def _validate(self, current, condition):
        body = self.body
        fed = {}
        for k, p in enumerate(self.inputs):
            if not isinstance(p, INPUT_PORTS):
                raise self._err(f"inputs[{k}] must be SlicedInput, InvariantInput or MergedInput, "
                                f"got {type(p).__name__}")
            if p.internal in fed:
                raise self._err(f"{p.label}: {describe_input(body, p.internal)} is already fed "
                                f"by {fed[p.internal].label}")
            fed[p.internal] = p
        if current is not None:
            if current.internal in fed:
                raise self._err(f"{current.label}: {describe_input(body, current.internal)} is "
                                f"already fed by {fed[current.internal].label}")
            fed[current.internal] = current
        used = {p.external for p in self.inputs}
        self.num_external_inputs = max([self._first_data_input - 1, *used]) + 1
        missing = sorted(set(range(self._first_data_input, self.num_external_inputs)) - used)
        if missing:
            raise self._err(f"external input {missing[0]} is not connected to any port")
        seen = {}
        for k, p in enumerate(self.outputs):
            if not isinstance(p, OUTPUT_PORTS):
                raise self._err(f"outputs[{k}] must be ConcatOutput or LastIterationOutput, "
                                f"got {type(p).__name__}")
            if p.external in seen:
                raise self._err(f"{p.label}: external output {p.external} is already "
                                f"produced by {seen[p.external].label}")
            seen[p.external] = p
        if sorted(seen) != list(range(len(seen))):
            gap = min(set(range(len(seen))) - set(seen))
            raise self._err(f"external output {gap} is not produced by any port")
        targets = {}
        for k, e in enumerate(self.back_edges):
            if not isinstance(e, BackEdge):
                raise self._err(f"back_edges[{k}] must be a BackEdge, got {type(e).__name__}")
            if e.to_parameter in targets:
                raise self._err(f"{e.label}: {describe_input(body, e.to_parameter)} already has "
                                f"a back edge ({targets[e.to_parameter].label})")
            target = fed.get(e.to_parameter)
            if not isinstance(target, (MergedInput, CurrentIteration)):
                what = "no port" if target is None else target.label
                raise self._err(f"{e.label}: target {describe_input(body, e.to_parameter)} must "
                                f"be fed by a MergedInput, but is fed by {what}")
            targets[e.to_parameter] = e
        for p in self.inputs:
            if isinstance(p, MergedInput) and p.internal not in targets:
                raise self._err(f"{p.label}: no BackEdge targets "
                                f"{describe_input(body, p.internal)}")
        n_in, n_out = getattr(body, "num_inputs", None), getattr(body, "num_outputs", None)
        if n_in is not None:
            for i, p in fed.items():
                if i >= n_in:
                    raise self._err(f"{p.label}: internal {i} out of range, body has {n_in} inputs")
        for i in range(n_in if n_in is not None else max(fed, default=-1) + 1):
            if i not in fed:
                raise self._err(f"{describe_input(body, i)} is not fed by any port")
        if n_out is not None:
            refs = [(p.label, p.internal) for p in self.outputs]
            refs += [(e.label, e.from_result) for e in self.back_edges]
            if condition is not None:
                refs.append(("execution_condition", condition))
            for label, j in refs:
                if j >= n_out:
                    raise self._err(f"{label}: body output {j} out of range, "
                                    f"body has {n_out} outputs")
        self._sliced = [p for p in self.inputs if isinstance(p, SlicedInput)]
        self._static = [p for p in self.inputs if not isinstance(p, SlicedInput)]
        self._concat = [p for p in self.outputs if isinstance(p, ConcatOutput)]
        self._edges = [(e.from_result, e.to_parameter) for e in self.back_edges]
        self._carried = {e.from_result: fed[e.to_parameter] for e in self.back_edges}
        self._fed = fed
        self._n_body_inputs = n_in if n_in is not None else max(fed, default=-1) + 1

    # ------------------------------------------------------------------ running
    def _start(self, arrays):
        """Body inputs of iteration 0 (without sliced ones) and the slicing plans."""
        body_in = [None] * self._n_body_inputs
        for p in self._static:
            body_in[p.internal] = arrays[p.external]
        plans = []
        for p in self._sliced:
            x = arrays[p.external]
            axis = p.normalized_axis(x.ndim) if x.ndim else None
            if axis is None:
                raise self._err(f"{p.label}: cannot slice a rank-0 input")
            try:
                n, first, step = p.plan(x.shape[axis])
            except GraphError as e:
                raise self._err(str(e)) from None
            plans.append((p, n, x, (slice(None),) * axis, first, step, p.part_size))
        return body_in, plans

    def _finish(self, arrays, n, scans, last):
        """Assemble the external outputs after ``n`` iterations."""
        result = [None] * len(self.outputs)
        ci = 0
        for p in self.outputs:
            if isinstance(p, ConcatOutput):
                result[p.external] = self._concatenate(p, scans[ci])
                ci += 1
            elif n:
                v = last[p.internal]
                if any(np.may_share_memory(v, a) for a in arrays):
                    v = v.copy()
                result[p.external] = v
            else:
                result[p.external] = self._initial_value(p, arrays)
        return tuple(result)

    def _initial_value(self, p: LastIterationOutput, arrays):
        """Value of a last-iteration output after zero iterations."""
        src = self._carried.get(p.internal)
        if src is None:
            i = getattr(self.body, "source_parameter", lambda j: None)(p.internal)
            src = self._fed.get(i) if i is not None else None
        if isinstance(src, (MergedInput, InvariantInput)):
            return np.array(arrays[src.external], copy=True)
        if isinstance(src, CurrentIteration):
            return src.value(0)
        raise self._err(f"{p.label}: {describe_output(self.body, p.internal)} is undefined after "
                        f"zero iterations (it is neither loop-carried nor a body input)")

    def _concatenate(self, p: ConcatOutput, values):
        body = self.body
        what = f"{p.label}: {describe_output(body, p.internal)}"
        if not values:
            specs = getattr(body, "output_specs", None)
            if specs is None:
                raise self._err(f"{what}: zero iterations and the body declares no output_specs, "
                                f"so the empty output's shape is unknown")
            dtype, shape = specs[p.internal]
            shape = list(shape) or [1]
            shape[p.normalized_axis(len(shape))] = 0
            if None in shape:
                raise self._err(f"{what}: zero iterations and the body output shape {tuple(shape)} "
                                f"is not static")
            return np.empty(shape, dtype)
        if isinstance(values, _Stacked):
            return self._concatenate_stacked(p, what, values.array)
        first = values[0]
        for k, v in enumerate(values):
            if v.shape != first.shape or v.dtype != first.dtype:
                raise self._err(f"{what} is {v.dtype}{list(v.shape)} in iteration {k} but "
                                f"{first.dtype}{list(first.shape)} in iteration 0")
        if p.stride < 0:
            values = values[::-1]
        if first.ndim == 0:
            p.normalized_axis(1)
            if p.part_size != 1:
                raise self._err(f"{what} is rank 0, part_size must be 1")
            return np.stack(values)
        axis = p.normalized_axis(first.ndim)
        if first.shape[axis] != p.part_size:
            raise self._err(f"{what} has size {first.shape[axis]} on axis {axis}, expected "
                            f"part_size {p.part_size}")
        return np.concatenate(values, axis=axis)

    def _concatenate_stacked(self, p: ConcatOutput, what, stk):
        """np.concatenate of the iterations stacked in `stk` [n, *shape], as
        one reshape: the merged axis runs iteration-major, as concatenation does."""
        shape = stk.shape[1:]
        if p.stride < 0:
            stk = stk[::-1]
        if not shape:
            p.normalized_axis(1)
            if p.part_size != 1:
                raise self._err(f"{what} is rank 0, part_size must be 1")
            return stk.copy()
        axis = p.normalized_axis(len(shape))
        if shape[axis] != p.part_size:
            raise self._err(f"{what} has size {shape[axis]} on axis {axis}, expected "
                            f"part_size {p.part_size}")
        merged = shape[:axis] + (stk.shape[0] * shape[axis],) + shape[axis + 1:]
        if axis:
            stk = np.moveaxis(stk, 0, axis)
        return np.array(stk.reshape(merged), copy=True)  # never a view of the body's

    def _as_arrays(self, inputs):
        if len(inputs) != self.num_external_inputs:
            raise self._err(f"expected {self.num_external_inputs} inputs, got {len(inputs)}")
        return [x if type(x) is np.ndarray else np.asarray(x) for x in inputs]

    def __repr__(self):
        return (f"{type(self).__name__}(name={self.name!r}, inputs={list(self.inputs)!r}, "
                f"outputs={list(self.outputs)!r}, back_edges={list(self.back_edges)!r})")


class TensorIterator(_SubGraphOp):
    """TensorIterator-1: run a body over chunks of the sliced inputs.

    Parameters
    ----------
    body : Body
        Object with ``run(list_of_arrays) -> sequence_of_arrays``
        (see :mod:`mli.graph.body`).
    inputs : sequence of SlicedInput, InvariantInput or MergedInput
        Port map of the inputs; ``external`` is the position in ``__call__``.
    outputs : sequence of ConcatOutput or LastIterationOutput
        Port map of the outputs; ``external`` is the position in the result.
    back_edges : sequence of BackEdge
        One per MergedInput.
    num_iterations : int, optional
        Required when there is no sliced input; otherwise, if given, it must
        match the count the sliced inputs give.
    name : str, optional
        Used in error messages.

    Raises
    ------
    GraphError
        (a ``ValueError``) for an inconsistent port map, naming the entry.

    Notes
    -----
    Iteration ``k`` feeds chunk ``k`` of every sliced input (see
    :mod:`mli.graph.ports` for the chunk placement); MergedInputs get their
    back edge's body output from iteration ``k-1``.  All sliced inputs must
    give the same iteration count.
    """

    _kind = "TensorIterator"
    _fused_call = None

    def __init__(self, body, inputs: Sequence = (), outputs: Sequence = (),
                 back_edges: Sequence = (), *, num_iterations: int | None = None,
                 name: str | None = None):
        super().__init__(body, inputs, outputs, back_edges, name)
        if num_iterations is not None and (not isinstance(num_iterations, int)
                                           or isinstance(num_iterations, bool)
                                           or num_iterations < 0):
            raise self._err(f"num_iterations must be a non-negative int, got {num_iterations!r}")
        if num_iterations is None and not self._sliced:
            raise self._err("no SlicedInput: num_iterations must be given")
        self.num_iterations = num_iterations

    def __getstate__(self):
        """Pickling and copying leave out the fused run's caches (KernelBody's plan
        and the bridge's runner), which the copy's first call makes again."""
        state = dict(self.__dict__)
        state.pop("_kernel_plan", None)
        state.pop("_fused_call", None)
        return state

    def iterations(self, *inputs) -> int:
        """Number of iterations these external inputs give."""
        return self._count(self._start(self._as_arrays(inputs))[1])

    def _count(self, plans) -> int:
        n, who = self.num_iterations, "num_iterations"
        for p, cnt, *_ in plans:
            if n is not None and cnt != n:
                raise self._err(f"sliced inputs disagree on the iteration count: {who} gives "
                                f"{n}, {p.label} gives {cnt}")
            n, who = cnt, p.label
        if n is None:       # the constructor requires num_iterations when no input is sliced
            raise self._err("no SlicedInput: num_iterations must be given")
        return n

    def __call__(self, *inputs):
        """Run the TensorIterator.

        Parameters
        ----------
        *inputs : array_like
            External inputs, in port order.

        Returns
        -------
        tuple of numpy.ndarray
            External outputs, in port order.
        """
        fast = self._fused_call     # KernelBody's fused run of the common layout, set by its first call
        if fast is not None and (out := fast(self, inputs)) is not None:
            return out
        arrays = self._as_arrays(inputs)
        fused = getattr(self.body, "run_tensor_iterator", None)  # KernelBody's fast path
        if fused is not None and (out := fused(self, arrays)) is not None:
            return out
        body_in, plans = self._start(arrays)
        n = self._count(plans)
        run = self.body.run
        concat = [p.internal for p in self._concat]
        scans = [[] for _ in concat]
        edges = self._edges
        slicers = [(p.internal, *rest) for p, _, *rest in plans]
        out = None
        for k in range(n):
            for internal, x, pre, first, step, size in slicers:
                s = first + k * step
                body_in[internal] = x[pre + (slice(s, s + size),)]
            out = run(body_in)
            for lst, j in zip(scans, concat):
                lst.append(out[j])
            for j, i in edges:
                body_in[i] = out[j]
        return self._finish(arrays, n, scans, out)

"""TensorIterator-1 and Loop-5 (run by :mod:`mli.graph`)."""

from __future__ import annotations

import math
import contextlib
import threading

import numpy as np

from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis
from ..lifted import plan_for
from ...graph import (BackEdge, ConcatOutput, CurrentIteration, InvariantInput, IRBody,
                      LastIterationOutput, Loop, MergedInput, SlicedInput, TensorIterator)

_STEPPED = threading.local()


@contextlib.contextmanager
def stepped_bodies():
    """In this thread, run every TensorIterator/Loop body one iteration at a time (no
    whole-sequence plan), e.g. to see each body step's arguments."""
    before = getattr(_STEPPED, "on", False)
    _STEPPED.on = True
    try:
        yield
    finally:
        _STEPPED.on = before


class _LoopBody(IRBody):
    """An IR body whose loop-invariant steps (those depending only on constants and
    InvariantInput Parameters) run once per TensorIterator/Loop call instead of once per
    iteration (see :class:`mli.ir.program._Hoisted`).  The per-call values live in a
    thread-local stack, so one model may run in several threads at once."""

    def __init__(self, graph, inputs):
        super().__init__(graph)
        self._invariant = [p.internal for p in inputs if isinstance(p, InvariantInput)]
        self._hoisted = None
        self._lifted = None
        self._local = threading.local()

    def _stack(self):
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def start(self, arrays, inputs):
        """Evaluate the invariant steps for a call on external ``arrays``; False when
        there is nothing to hoist."""
        if self._lifted:    # the whole-sequence plan runs the invariant steps itself
            return False
        if self._hoisted is None:
            self._hoisted = self._program.hoisted(self._invariant)
        if not self._hoisted.pre:
            return False
        body_in = [None] * self.num_inputs
        for p in inputs:
            if isinstance(p, InvariantInput):
                body_in[p.internal] = arrays[p.external]
        self._stack().append(self._hoisted.start(body_in))
        return True

    def stop(self):
        self._stack().pop()

    def run_tensor_iterator(self, op, arrays):
        """The TensorIterator's and Loop's driver hook: the op's outputs from the body's
        whole-sequence plan (planned at the first call, see :mod:`mli.ir.lifted`), or
        None to step (always inside :func:`stepped_bodies`)."""
        if getattr(_STEPPED, "on", False):
            return None
        plan = self._lifted
        if plan is None:
            plan = self._lifted = plan_for(self._program, op) or False
        return plan.run(arrays) if plan else None

    run_loop = run_tensor_iterator

    def run(self, inputs):
        inputs = self.positional(inputs)
        st = getattr(self._local, "stack", None)
        if st:
            return self._hoisted.run(st[-1], inputs)
        return self._program.run(inputs)


def _hoisting(body, inputs, call):
    """``call(*xs)`` with ``body``'s invariant part evaluated once for it."""
    last = max((p.external for p in inputs if isinstance(p, InvariantInput)), default=-1)

    def run(*xs):
        arrays = [x if type(x) is np.ndarray else np.asarray(x) for x in xs]
        started = len(arrays) > last >= 0 and body.start(arrays, inputs)
        try:
            return call(*arrays)
        finally:
            if started:
                body.stop()
    return run


def _check_range(e, what):
    if e.stride > 0 and (e.start, e.end) != (0, -1) or e.stride < 0 and (e.start, e.end) != (-1, 0):
        raise IRUnsupportedError(
            f"{what}: start={e.start}, end={e.end}, stride={e.stride}: only whole-axis ranges "
            f"(0,-1) forward or (-1,0) backward are supported (OpenVINO's CPU plugin ignores "
            f"start/end)")


def _check_output_range(e, dims, what):
    """OpenVINO's CPU plugin maps start/end of an output half-open on the output's own
    dim (``v < 0 -> dim + 1 + v``) and needs that range to be the whole axis."""
    if e.axis >= len(dims):
        raise IRError(f"{what}: axis {e.axis} out of range for the output rank {len(dims)}")
    dim = dims[e.axis]
    if dim is None:
        return _check_range(e, what)
    lo, hi = (dim + 1 + v if v < 0 else v for v in (e.start, e.end))
    if e.stride < 0:
        lo, hi = hi, lo
    if (lo, hi) != (0, dim):
        raise IRUnsupportedError(f"{what}: start={e.start}, end={e.end}, stride={e.stride} "
                                 f"cover [{lo}, {hi}) of an output axis of length {dim}; "
                                 f"OpenVINO needs the whole axis")


def _subgraph_ports(layer, is_loop):
    body = layer.body
    pidx = {p.id: i for i, p in enumerate(body.parameters)}
    ridx = {r.id: i for i, r in enumerate(body.results)}
    ext_in = {p.id: k for k, p in enumerate(layer.inputs)}
    ext_out = {p.id: k for k, p in enumerate(layer.outputs)}
    inputs, outputs, current, condition = [], [], None, None
    back = {}
    for frm, to in layer.back_edges:
        if frm not in ridx or to not in pidx:
            raise IRError(f"back edge {frm} -> {to} must go from a body Result to a body "
                          f"Parameter")
        back[to] = frm
    for e in layer.port_map:
        what = f"port_map {e.kind} external_port_id={e.external_port_id} " \
               f"internal_layer_id={e.internal_layer_id}"
        if e.purpose is not None and not is_loop:
            raise IRError(f"{what}: purpose is only valid in a Loop")
        if e.kind == "input":
            if e.internal_layer_id not in pidx:
                raise IRError(f"{what}: internal layer is not a body Parameter")
            i = pidx[e.internal_layer_id]
            if e.purpose == "current_iteration":
                p = body.parameters[i]
                if None in p.outputs[0].dims:
                    raise IRError(f"{what}: current_iteration Parameter must have a static shape")
                current = CurrentIteration(i, p.outputs[0].dtype, p.outputs[0].dims)
                continue
            if e.purpose is not None:
                raise IRUnsupportedError(f"{what}: unknown purpose {e.purpose!r}")
            if e.external_port_id not in ext_in:
                raise IRError(f"{what}: the layer has no input port {e.external_port_id}")
            k = ext_in[e.external_port_id]
            if e.axis is not None:
                _check_range(e, what)
                inputs.append(SlicedInput(k, i, e.axis, e.start, e.end, e.stride, e.part_size))
            elif e.internal_layer_id in back:
                inputs.append(MergedInput(k, i))
            else:
                inputs.append(InvariantInput(k, i))
        else:
            if e.internal_layer_id not in ridx:
                raise IRError(f"{what}: internal layer is not a body Result")
            j = ridx[e.internal_layer_id]
            if e.purpose == "execution_condition":
                condition = j
                continue
            if e.purpose is not None:
                raise IRUnsupportedError(f"{what}: unknown purpose {e.purpose!r}")
            if e.external_port_id not in ext_out:
                raise IRError(f"{what}: the layer has no output port {e.external_port_id}")
            k = ext_out[e.external_port_id]
            if e.axis is not None:
                _check_output_range(e, layer.outputs[k].dims, what)
                outputs.append(ConcatOutput(j, k, e.axis, e.start, e.end, e.stride, e.part_size))
            else:
                outputs.append(LastIterationOutput(j, k))
    fed = {p.internal for p in inputs} | ({current.internal} if current else set())
    for to, frm in back.items():
        if pidx[to] not in fed:
            raise IRError(f"back edge {frm} -> {to}: the target Parameter has no port_map input")
    edges = [BackEdge(ridx[frm], pidx[to]) for to, frm in back.items()]
    return inputs, outputs, edges, current, condition


def _check_static_shapes(layer, results):
    for port, v in zip(layer.outputs, results):
        if len(port.dims) != v.ndim or any(d is not None and d != s
                                           for d, s in zip(port.dims, v.shape)):
            raise IRError(f"output port {port.id} has shape {list(v.shape)}, but the IR "
                          f"declares {['?' if d is None else d for d in port.dims]} "
                          f"(OpenVINO would return uninitialised data)")
    return results


def _outputs_of(layer, fn):
    """Steps return one array for one output port, else a tuple."""
    return (lambda *xs: fn(*xs)[0]) if len(layer.outputs) == 1 else fn


@register("TensorIterator", {"opset1"})
@ports(None, n_outputs=None)
def _tensor_iterator(layer, a, graph):
    if layer.body.find("TensorIterator"):
        raise IRUnsupportedError("a TensorIterator inside a TensorIterator body is not "
                                 "supported (OpenVINO: 'No nested TensorIterator')")
    inputs, outputs, edges, _, _ = _subgraph_ports(layer, False)
    n = None
    if not any(isinstance(p, SlicedInput) for p in inputs):
        concat = [p for p in outputs if isinstance(p, ConcatOutput)]
        if not concat:
            raise IRError("no sliced input and no concatenated output: iteration count unknown")
        dims = layer.outputs[concat[0].external].dims
        d = dims[concat[0].axis] if concat[0].axis < len(dims) else None
        if d is None:
            raise IRError("no sliced input and a dynamic concatenated output: iteration "
                          "count unknown")
        n = d // concat[0].part_size
    body = _LoopBody(layer.body, inputs)
    ti = TensorIterator(body, inputs, outputs, edges, num_iterations=n, name="TensorIterator")
    run = _hoisting(body, inputs, ti)
    return _outputs_of(layer, lambda *xs: _check_static_shapes(layer, run(*xs)))


@register("Loop", {"opset5"})
@ports(None, n_outputs=None)
def _loop(layer, a, graph):
    if len(layer.inputs) < 2:
        raise IRError("a Loop needs trip_count and execution_condition inputs")
    inputs, outputs, edges, current, condition = _subgraph_ports(layer, True)
    if condition is None:
        raise IRError("the body has no execution_condition output (port_map <output> with "
                      "purpose=\"execution_condition\")")
    body = _LoopBody(layer.body, inputs)
    loop = Loop(body, inputs, outputs, edges, current_iteration=current,
                execution_condition=condition, name="Loop")
    run_loop = _hoisting(body, inputs, loop)
    src, _ = graph.producer(layer.id, layer.inputs[1].id)
    if src.type == "Const" and src.data.size == 1 and not bool(src.data.reshape(-1)[0]):
        # OpenVINO's shape inference makes every output of such a Loop empty on dim 0
        # and the CPU plugin cannot compile one with a concatenated output.
        if any(isinstance(p, ConcatOutput) for p in outputs):
            raise IRUnsupportedError("a Loop with a Const false execution condition and a "
                                     "concatenated output (OpenVINO cannot compile it)")
        if any(None in p.dims for p in layer.outputs):
            raise IRUnsupportedError("a Loop with a Const false execution condition and "
                                     "dynamic output shapes")
        return _outputs_of(layer, lambda *xs: tuple(np.empty(p.dims, p.dtype)
                                                    for p in layer.outputs))
    # a Const true condition with trip_count -1 never ends (a sliced input would stop it
    # with an error when its chunks run out)
    endless = _const_true_condition(layer.body, condition) and not any(
        isinstance(p, SlicedInput) for p in inputs)

    def run(*xs):
        if endless and xs[0].size == 1 and int(xs[0].reshape(-1)[0]) == -1 \
                and xs[1].size == 1 and bool(xs[1].reshape(-1)[0]):
            raise IRError("the Loop would never end: trip_count is -1 and the body's "
                          "execution condition is a Const true")
        return _check_static_shapes(layer, run_loop(*xs))
    return _outputs_of(layer, run)


def _const_true_condition(body, j):
    """Whether body output ``j`` (the execution condition) is a Const holding true."""
    result = body.results[j]
    src, _ = body.producer(result.id, result.inputs[0].id)
    return src.type == "Const" and src.data is not None and src.data.size == 1 \
        and bool(src.data.reshape(-1)[0])



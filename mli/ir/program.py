"""The compiled program of a graph: its steps over numbered value slots, constant folding,
the steps hoisted out of a loop body, and the ReadValue/Assign variable store.

It knows a graph only by what it reads of it (``order``, ``producer``, ``parameters``,
``results``, ...), so :mod:`mli.ir.graph` can compile itself with it; the callable
:class:`mli.ir.Model` is in :mod:`mli.ir.model`."""

from __future__ import annotations

import contextvars
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from .errors import IRError, _about, _expect_ports, _wrap
from .registry import build as _build

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def compute_dtype(dt):
    """The dtype values of IR element type ``dt`` are computed in: f16 is computed in f32
    (as OpenVINO's CPU plugin does: f16 constants are decompressed, f16 ports run in f32);
    every other type as declared."""
    return _F32 if dt == _F16 else dt


class Variables:
    """ReadValue/Assign state: ``values`` (committed) and ``pending`` (assigned during
    the current call, committed when it succeeds)."""

    def __init__(self):
        self.values, self.pending = {}, {}

    def commit(self):
        self.values.update(self.pending)
        self.pending.clear()

    def clear(self):
        self.values.clear()
        self.pending.clear()


_CURRENT = contextvars.ContextVar("mli_ir_variables", default=None)


def variables(graph=None) -> Variables:
    """The ReadValue/Assign variable store of the model call under way (each
    :class:`Model` has its own, like an infer request); outside a model call (a
    program run directly), one kept on the top-level graph."""
    store = _CURRENT.get()
    if store is not None:
        return store
    while getattr(graph, "parent", None) is not None:
        graph = graph.parent
    store = getattr(graph, "_variables", None)
    if store is None:
        store = graph._variables = Variables()
    return store


#: ops never folded at plan time: state (ReadValue/Assign), bodies (they may hold state),
#: and the recurrent ops, which mli.fixed_point replaces in a compiled program
_NO_FOLD = frozenset({"ReadValue", "Assign", "TensorIterator", "Loop", "LSTMCell", "GRUCell",
                      "RNNCell", "LSTMSequence", "GRUSequence", "RNNSequence"})

#: (fn, input slots, output slots, output dtypes, the mli.ir.Layer it computes)
Step = Tuple[Callable[..., Any], List[int], List[int], List[Optional[np.dtype]], Any]


class _Program:
    """A graph compiled into a flat list of steps over numbered value slots.

    f16 values are held in f32 (:func:`compute_dtype`): f16 Const data is widened when
    compiling, f16 Parameters receive f32 arrays, and every op result is checked against
    the compute dtype of the element type the IR declares for it.

    Planning folds constants: a step whose inputs are all constants is run once here
    (when it succeeds without a warning and gives the declared dtype; otherwise it stays
    a step and fails or warns at run time as before), so Convert of f16 weights, shape
    arithmetic on static shapes and the like cost nothing per call.  Folded values are
    read-only; a Result fed by one gets a fresh copy per call.
    """

    def __init__(self, graph) -> None:      # graph: an mli.ir.Graph (not imported: it imports this module)
        self.graph = graph
        slots: Dict[Tuple[int, int], int] = {}

        def slot(lid: int, pid: int) -> int:
            return slots.setdefault((lid, pid), len(slots))

        template: Dict[int, np.ndarray] = {}
        steps: List[Step] = []
        folded: Set[int] = set()
        for layer in graph.order:
            with _about(layer):
                if layer.type in ("Parameter", "Const", "Result"):
                    # port counts are checked when parsing; a Graph may also be built by hand
                    _expect_ports(layer, *((1, 0) if layer.type == "Result" else (0, 1)))
                if layer.type == "Parameter":
                    slot(layer.id, layer.outputs[0].id)
                elif layer.type == "Const":
                    data = layer.data
                    if data is not None and data.dtype == _F16:
                        data = data.astype(_F32)
                        data.flags.writeable = False
                    if data is not None:
                        template[slot(layer.id, layer.outputs[0].id)] = data
                    else:
                        slot(layer.id, layer.outputs[0].id)
                elif layer.type != "Result":
                    fn = _build(layer, graph)
                    ins = [slot(*graph._producer[(layer.id, p.id)]) for p in layer.inputs]
                    outs = [slot(layer.id, p.id) for p in layer.outputs]
                    dts = [None if p.dtype is None else compute_dtype(p.dtype)
                           for p in layer.outputs]
                    step: Step = (fn, ins, outs, dts, layer)
                    if layer.type not in _NO_FOLD and layer.body is None \
                            and all(i in template for i in ins):
                        values = _fold(step, template)
                        if values is not None:
                            for s_, v in zip(outs, values):
                                template[s_] = v
                                folded.add(s_)
                            continue
                    steps.append(step)
        self.template: List[Optional[np.ndarray]] = [template.get(i) for i in range(len(slots))]
        self.steps = steps
        # the steps' functions as the registry built them (by id, kept alive): a step
        # replaced later (replace_step: taps, fixed-point kernels) is not one of them
        self.built: Dict[int, Any] = {id(st[0]): st[0] for st in steps}
        self.param_slots = [slots[(p.id, p.outputs[0].id)] for p in graph.parameters]
        self.result_slots = [slots[graph._producer[(r.id, r.inputs[0].id)]]
                             for r in graph.results]
        self._copy_results = [s_ in folded for s_ in self.result_slots]
        # shape-derived steps: their values depend only on the Parameters' shapes
        # (ShapeOf of a Parameter, then shape arithmetic on constants), so they are
        # computed once per set of input shapes and kept (see run)
        derived = set(self.param_slots)
        known = set(template)
        shape_steps: List[Step] = []
        data_steps: List[Step] = []
        for step in steps:
            _, ins, outs, _, layer = step
            if layer.type not in _NO_FOLD and layer.body is None and (
                    (layer.type == "ShapeOf" and len(ins) == 1 and ins[0] in derived | known)
                    or (ins and all(i in known for i in ins))):
                shape_steps.append(step)
                known.update(outs)
            else:
                data_steps.append(step)
        self._shape_steps, self._data_steps = shape_steps, data_steps
        self._shape_slots = sorted({o for st in shape_steps for o in st[2]})
        self._copy_derived = [s_ in self._shape_slots for s_ in self.result_slots]
        self._shape_cache: Dict[Tuple, Optional[List[np.ndarray]]] = {}

    def replace_step(self, k: int, fn: Any) -> None:
        """Run ``fn`` in place of step ``k``'s function (same value slots), in every
        list that holds the step: to_fixed_point swaps the float cells for MLI ones."""
        old = self.steps[k]
        new: Step = (fn, old[1], old[2], old[3], old[4])
        self.steps[k] = new
        for lst in (self._shape_steps, self._data_steps):
            for i, st in enumerate(lst):
                if st is old:
                    lst[i] = new
        self._shape_cache.clear()

    def run(self, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        """Evaluate the graph on Parameter values (in Parameter order)."""
        vals: List[Any] = self.template.copy()
        for s, x in zip(self.param_slots, inputs):
            if x.dtype == _F16:
                x = x.astype(_F32)
            vals[s] = x
        if not self._shape_steps:
            _execute(self.steps, vals)
            return self._results(vals)
        key = tuple(x.shape for x in inputs)
        try:                        # (another thread may clear the cache meanwhile)
            cached = self._shape_cache[key]
        except KeyError:
            cached = self._shape_values(key, vals)
        if cached is None:          # not cacheable: every step in graph order, as planned
            _execute(self.steps, vals)
            return self._results(vals)
        for s, v in zip(self._shape_slots, cached):
            vals[s] = v
        _execute(self._data_steps, vals)
        return [vals[s].copy() if c or d else vals[s] for s, c, d in
                zip(self.result_slots, self._copy_results, self._copy_derived)]

    def _shape_values(self, key: Tuple, vals: List[Any]) -> Optional[List[np.ndarray]]:
        """Run the shape-derived steps for input shapes ``key`` and keep their values
        (read-only) when they succeed without a warning and are small; else None (then
        that shape runs every step in graph order, so errors and warnings come where
        they always did)."""
        trial = vals.copy()
        clean = False
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _execute(self._shape_steps, trial)
            clean = not caught
        except Exception:       # noqa: BLE001 -- it raises again, in order, when run
            pass
        values: Optional[List[np.ndarray]] = None
        if clean:
            values = [np.asarray(trial[s]) for s in self._shape_slots]
            if sum(v.nbytes for v in values) > (1 << 20):
                values = None
            else:
                for k, v in enumerate(values):
                    if v.flags.writeable:
                        v = values[k] = v.copy()
                        v.flags.writeable = False
        if len(self._shape_cache) >= 16:
            self._shape_cache.clear()
        self._shape_cache[key] = values
        return values

    def _results(self, vals: List[Any]) -> List[np.ndarray]:
        return [vals[s].copy() if c else vals[s]
                for s, c in zip(self.result_slots, self._copy_results)]

    def hoisted(self, invariant: Sequence[int]) -> "_Hoisted":
        """This program split for a loop body whose Parameters ``invariant`` (indices)
        keep their values over the iterations: the steps that depend only on them and on
        constants run once per loop (see :class:`_Hoisted`)."""
        return _Hoisted(self, invariant)


def _fold(step: Step, template: Dict[int, np.ndarray]) -> Optional[List[np.ndarray]]:
    """The outputs of a step on constant inputs, read-only, or None to keep the step."""
    fn, ins, outs, dtypes, layer = step
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = fn(*[template[i] for i in ins])
    except Exception:       # noqa: BLE001 -- it raises again, located, at run time
        return None
    if caught:
        return None
    values = list(r) if len(outs) != 1 else [r]
    out = []
    for v, dt in zip(values, dtypes):
        v = np.asarray(v)
        if dt is not None and v.dtype != dt:
            return None
        if v.flags.writeable:
            if v.base is not None:
                v = v.copy()
            v.flags.writeable = False
        out.append(v)
    return out


def _execute(steps: Sequence[Step], vals: List[Any]) -> None:
    """Run ``steps`` over the value slots ``vals`` (in place)."""
    ndarray = np.ndarray
    for fn, ins, outs, dtypes, layer in steps:
        try:
            r = fn(*[vals[i] for i in ins])
        except Exception as e:  # every failure gets the (innermost) layer's name
            if getattr(e, "located", False):
                raise
            raise _wrap(e, layer) from e
        if len(outs) == 1:
            r = (r,)
        for s, v, dt in zip(outs, r, dtypes):
            if type(v) is not ndarray:
                v = np.asarray(v)
            if dt is not None and v.dtype != dt:
                raise IRError(f"{layer}: produced {v.dtype}, the IR declares {dt}")
            vals[s] = v


class _Hoisted:
    """A body program split into loop-invariant steps (:meth:`start`, once per loop
    run) and the steps each iteration needs (:meth:`run`).

    A step is invariant when all its inputs are constants, invariant Parameters or
    outputs of invariant steps, and it holds no state (not ReadValue/Assign, no body,
    not a recurrent op, which mli.fixed_point records and replaces).  ``start`` returns
    the loop run's precomputed values (None when an invariant step fails: the
    iterations then evaluate everything and raise the error where they always did);
    ``run`` uses them while the invariant inputs are still the arrays ``start`` saw."""

    def __init__(self, program: _Program, invariant: Sequence[int]):
        self.program = program
        self.invariant = sorted(set(invariant))
        self._inv = set(self.invariant)
        known = {i for i, v in enumerate(program.template) if v is not None}
        known |= {program.param_slots[i] for i in self.invariant}
        pre: List[Step] = []
        loop: List[Step] = []
        for step in program.steps:
            _, ins, outs, _, layer = step
            if layer.type not in _NO_FOLD and layer.body is None and all(i in known for i in ins):
                pre.append(step)
                known.update(outs)
            else:
                loop.append(step)
        self.pre, self.loop = pre, loop

    def start(self, inputs: Sequence[Any]) -> Optional[Tuple[List[Any], List[Any]]]:
        """Evaluate the invariant steps for one loop run (``inputs``: every body input,
        only the invariant ones are read)."""
        p = self.program
        vals = p.template.copy()
        seen = []
        for i in self.invariant:
            x = inputs[i]
            seen.append(x)
            if x.dtype == _F16:
                x = x.astype(_F32)
            vals[p.param_slots[i]] = x
        try:
            _execute(self.pre, vals)
        except Exception:       # noqa: BLE001 -- the first iteration raises it, located
            return None         # (and a loop of zero iterations does not)
        return vals, seen

    def run(self, state: Optional[Tuple[List[Any], List[Any]]],
            inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        p = self.program
        if state is None or any(inputs[i] is not x for i, x in zip(self.invariant, state[1])):
            return p.run(inputs)
        vals = state[0].copy()
        inv = self._inv
        for k, (s, x) in enumerate(zip(p.param_slots, inputs)):
            if k in inv:
                continue
            if x.dtype == _F16:
                x = x.astype(_F32)
            vals[s] = x
        _execute(self.loop, vals)
        return p._results(vals)

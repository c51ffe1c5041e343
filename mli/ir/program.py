"""The compiled program of a graph and the callable :class:`Model`."""

from __future__ import annotations

import contextvars
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from .errors import IRError, _about, _expect_ports, _wrap
from .graph import Graph, Layer
from .reader import read_graph
from .registry import build as _build, check_supported

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

Step = Tuple[Callable[..., Any], List[int], List[int], List[Optional[np.dtype]], Layer]


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

    def __init__(self, graph: Graph):
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

    def replace_step(self, k: int, step: Step) -> None:
        """Put ``step`` in place of ``self.steps[k]`` (mli.fixed_point swaps the
        recurrent ops for MLI cells), also in the shape-derived or data steps
        :meth:`run` executes, and forget the shape values kept so far."""
        old = self.steps[k]
        self.steps[k] = step
        for lst in (self._shape_steps, self._data_steps):
            for i, s_ in enumerate(lst):
                if s_ is old:
                    lst[i] = step
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


@dataclass(frozen=True)
class TensorInfo:
    """Name, aliases, dtype and dims (``None`` = dynamic) of a model input/output."""

    name: str
    names: tuple
    dtype: Optional[np.dtype]        # None only in a hand-built Graph without element types
    dims: tuple
    layer: Layer = field(repr=False, compare=False)


class Model:
    """A compiled IR model, callable on numpy arrays.

    Attributes
    ----------
    graph : Graph
        The parsed structure.
    inputs, outputs : list of TensorInfo
        In Parameter / Result order.
    input_names, output_names : list of str
    """

    def __init__(self, graph: Graph, path=None):
        self.graph = graph
        self.path = path
        self.version = getattr(graph, "version", None)
        check_supported(graph)  # every unknown op of the model at once
        self._variables = Variables()
        self._program = graph.program()  # first: it checks the structure the rest relies on
        self.inputs, self.outputs = [], []
        for p in graph.parameters:
            port = p.outputs[0]
            names = port.names + ((p.name,) if p.name not in port.names else ())
            self.inputs.append(TensorInfo(names[0], names, port.dtype, port.dims, p))
        for r in graph.results:
            src, sport = graph.producer(r.id, r.inputs[0].id)
            names = sport.names or r.output_names or (r.name,)
            dtype = r.inputs[0].dtype or sport.dtype
            self.outputs.append(TensorInfo(names[0], names, dtype, r.inputs[0].dims, r))
        self.input_names = [t.name for t in self.inputs]
        self.output_names = [t.name for t in self.outputs]
        if len(set(self.output_names)) != len(self.output_names):
            raise IRError(f"duplicate output names {self.output_names}")
        self._alias: Dict[str, int] = {}
        for k, t in enumerate(self.inputs):
            for n in t.names:
                self._alias.setdefault(n, k)

    def _arrays(self, inputs):
        if isinstance(inputs, dict):
            vals = [None] * len(self.inputs)
            for key, x in inputs.items():
                if key not in self._alias:
                    raise IRError(f"unknown model input {key!r} (inputs: {self.input_names})")
                k = self._alias[key]
                if vals[k] is not None:
                    raise IRError(f"model input {self.input_names[k]!r} given twice")
                vals[k] = x
            missing = [self.input_names[k] for k, v in enumerate(vals) if v is None]
            if missing:
                raise IRError(f"missing model input(s) {missing}")
        else:
            vals = list(inputs)
            if len(vals) != len(self.inputs):
                raise IRError(f"expected {len(self.inputs)} inputs {self.input_names}, "
                              f"got {len(vals)}")
        out = []
        for t, x in zip(self.inputs, vals):
            x = np.asarray(x)
            if x.dtype != t.dtype and not (t.dtype == _F16 and x.dtype == _F32):
                raise IRError(f"model input {t.name!r} must be {t.dtype}"
                              + (" (or float32)" if t.dtype == _F16 else "")
                              + f", got {x.dtype}")
            if x.ndim != len(t.dims) or any(d is not None and d != s
                                            for d, s in zip(t.dims, x.shape)):
                raise IRError(f"model input {t.name!r} must have shape "
                              f"{['?' if d is None else d for d in t.dims]}, got {list(x.shape)}")
            out.append(x)
        return out

    def __call__(self, inputs=None, /, **named):
        """Run the model.

        Parameters
        ----------
        inputs : dict or sequence, optional
            ``{name: array}`` (tensor name or Parameter name) or arrays in
            Parameter order.  Keyword arguments are merged into the dict.

        Returns
        -------
        dict of str to numpy.ndarray
            Outputs keyed by tensor name, in Result order, with the IR's dtypes.

        Raises
        ------
        IRError
            Wrong input names, dtypes (no implicit casts) or shapes, or a
            run-time failure of a layer (the message names the layer).
        mli.graph.GraphError
            A TensorIterator/Loop run-time error (message names the layer).
        """
        if inputs is None or named:
            inputs = {**(inputs or {}), **named}
        arrays = self._arrays(inputs)
        store = self._variables
        store.pending.clear()
        token = _CURRENT.set(store)
        try:
            results = self._program.run(arrays)
        finally:
            _CURRENT.reset(token)
            pending, store.pending = store.pending, {}
        store.values.update(pending)
        out = {}
        for t, v in zip(self.outputs, results):
            if any(np.may_share_memory(v, x) for x in arrays):
                v = v.copy()
            if t.dtype == _F16 and v.dtype == _F32:
                v = v.astype(_F16)        # an f16 output computed in f32
            out[t.name] = v
        return out

    def reset_state(self):
        """Forget the values of every ReadValue/Assign variable (like an OpenVINO infer
        request's ``reset_state``): the next call starts from the initial values."""
        self._variables.clear()

    @property
    def state(self) -> dict:
        """``{variable_id: array}``: the current ReadValue/Assign variable values
        (copies); empty before the first call and after :meth:`reset_state`."""
        return {k: v.copy() for k, v in self._variables.values.items()}

    def __repr__(self):
        return (f"<Model {getattr(self.graph, 'name', '')!r} IR v{self.version}: "
                f"inputs {self.input_names}, outputs {self.output_names}>")


def read_model(xml_path, bin_path=None) -> Model:
    """Read and compile an OpenVINO IR v10/v11 model.

    Parameters
    ----------
    xml_path : str or os.PathLike
        The ``.xml`` file.
    bin_path : str or os.PathLike, optional
        The weights file (default: ``xml_path`` with suffix ``.bin``).

    Returns
    -------
    Model
        ``model({"X": x, ...}) -> {"Y": y, ...}``; ``model.graph`` is the
        parsed :class:`Graph`.

    Raises
    ------
    IRError
        Malformed or inconsistent IR (see :func:`read_graph`).
    IRUnsupportedError
        An op, op version, attribute, element type or port-map form that is
        not supported; the message names the layer id, name and type.
    """
    return Model(read_graph(xml_path, bin_path), Path(xml_path))


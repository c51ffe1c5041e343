"""The callable :class:`Model` of a parsed IR graph, and :func:`read_model`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional

import numpy as np

from .errors import IRError
from .graph import Graph, Layer
from .program import _CURRENT, _F16, _F32, Variables
from .reader import read_graph
from .registry import check_supported


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


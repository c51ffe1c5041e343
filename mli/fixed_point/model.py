"""The API of :mod:`mli.fixed_point`: :func:`to_fixed_point` (find the layers a
converter takes, check them and fold their weights, calibrate, plan each unit on the
chosen backend, compile the fixed-point program) and :class:`FixedPointModel`."""

from __future__ import annotations

from typing import Any, Dict, List

from ..metrics import sn_db
from . import converters  # noqa: F401  (registers the converters)
from .backends import QuantizedCell, get_backend
from .calibration import calibrate
from .errors import FixedPointError
from .program import compile_program, with_program
from .registry import converted_types, converter_for

__all__ = ["to_fixed_point", "FixedPointModel"]


def to_fixed_point(model, calibration_inputs, kind="fx16", library="mli1",
                   per_axis=True, *, scope="recurrent", kinds=None, margin=0, float_ops=(),
                   plan=None) -> Any:
    """Convert the recurrent layers (LSTM/RNN/GRU cells and sequences) of ``model`` to
    MLI fixed point -- or, with ``scope="model"``, every layer (see
    :mod:`mli.fixed_point.whole`).

    Parameters
    ----------
    model : mli.ir.Model
        From :func:`mli.ir.read_model`; not modified.
    calibration_inputs : dict, sequence of arrays, or list of dicts
        One input set (as for ``model(...)``) or several; the float model runs
        on each and the ranges seen choose the frac bits (see module doc).
    kind : {"fx16", "fx8w16d", "fx8"} (mli1) or {"fx16", "fx16_fx8_fx8", "sa8"} (mli2)
        MLI kernel variant: 16-bit data and weights, 16-bit data with 8-bit
        weights, or 8-bit data and weights (MLI 2.x: asymmetric int8 data,
        int8 weights, int32 bias).
    library : {"mli1", "mli2"}
        ``"mli1"`` (default): the MLI 1.1 kernels described above;
        ``"mli2"``: the MLI 2.0.2 kernels of :mod:`mli.v2` (LSTM on
        ``lstm_cell``, GRU on ``gru_cell``, RNN on ``rnn_dense`` + ``tanh``;
        see :mod:`mli.fixed_point.backends.mli2` for the formats chosen).
        The backends are registered by name (:mod:`mli.fixed_point.backends`).
    per_axis : bool
        ``library="mli2"``, kind ``sa8``: weights quantized per gate (default)
        or per tensor (RNN weights are always per tensor).
    scope : {"recurrent", "model"}
        ``"recurrent"`` (default): only the recurrent layers run on the kernels, the rest
        stays float.  ``"model"``: every layer runs on an MLI 1.1 kernel (``library``
        must be ``"mli1"``); returns a :class:`mli.fixed_point.whole.WholeModel`.  The
        keywords below apply to this scope only.
    kinds : dict, optional
        ``{layer key: kind}``: a kernel kind per layer (the others take ``kind``), e.g.
        fx8 convolutions and an fx8w16d LSTM.
    margin : int
        Frac bits taken off every calibrated format (headroom beyond the calibration).
    float_ops : sequence of str
        Op types, layer names or layer keys to run in float (between dequantize and
        quantize) instead of refusing them for want of an MLI 1.1 kernel.
    plan : str, os.PathLike or mli.fixed_point.plan.Plan, optional
        Formats to use (a file written by ``WholeModel.plan.save``, possibly edited);
        refused, naming the layer or tensor, when it does not fit the model.

    Returns
    -------
    FixedPointModel (scope "recurrent") or WholeModel (scope "model")

    Raises
    ------
    FixedPointError
        (an :class:`mli.ir.IRUnsupportedError`) a cell MLI cannot run: non-default
        activations, clip (LSTM/RNN), activations_alpha/beta, non-Const weights,
        values that do not fit the element type; or no recurrent op at all
        (scope "recurrent"); every layer no MLI 1.1 kernel computes, in one message
        (scope "model").
    """
    if scope == "model":
        if library != "mli1":
            raise ValueError(f"library: scope='model' runs on the MLI 1.1 kernels (mli1), "
                             f"got {library!r}")
        from .whole import convert_model
        return convert_model(model, calibration_inputs, kind, kinds=kinds, margin=margin,
                             float_ops=float_ops, plan=plan)
    if scope != "recurrent":
        raise ValueError(f"scope must be 'recurrent' or 'model', got {scope!r}")
    if kinds or margin or float_ops or plan is not None:
        raise ValueError("kinds, margin, float_ops and plan apply to scope='model' only")
    backend = get_backend(library)(kind, per_axis=per_axis)
    found = [(l, ((model.graph,) + tuple(p.body for p in path), path), converter_for(l.type))
             for path, l in model.graph.walk() if converter_for(l.type) is not None]
    if not found:
        raise FixedPointError(f"{getattr(model.graph, 'name', 'model')!r} has no recurrent "
                              f"op ({', '.join(converted_types())}) to convert")
    layers = [(layer, conv, conv.constants(layer, site)) for layer, site, conv in found]  # refuse early
    stats = calibrate(model, layers, calibration_inputs)
    plans: Dict[Any, List[QuantizedCell]] = {}      # per unit (direction); one for a cell
    cells: List[QuantizedCell] = []
    for layer, conv, constants in layers:
        plans[layer] = conv.plan(layer, constants, stats[layer], backend)
        cells += plans[layer]

    def step(layer, g, fn):
        return converter_for(layer.type).step(layer, plans[layer], backend)
    program = compile_program(model.graph, step)
    return FixedPointModel(model, kind, cells, program, library)


class FixedPointModel:
    """A model whose RNN cells run on the MLI kernels (see :func:`to_fixed_point`).

    Call it like the float :class:`mli.ir.Model`: ``fpm({"X": x, ...})`` returns
    ``{output name: array}`` with the IR's dtypes.

    Attributes
    ----------
    float_model : mli.ir.Model
    kind : str
    library : str
        ``"mli1"`` or ``"mli2"``.
    cells : list of QuantizedCell
        The converted cells, in graph order, with their frac bits.
    input_names, output_names : list of str
    """

    def __init__(self, float_model, kind, cells, program, library="mli1"):
        self.float_model = float_model
        self.kind = kind
        self.library = library
        self.cells = cells
        self._model = with_program(float_model, program)
        self.input_names = float_model.input_names
        self.output_names = float_model.output_names

    def __call__(self, inputs=None, /, **named):
        """Run the model (same arguments and result as :meth:`mli.ir.Model.__call__`)."""
        return self._model(inputs, **named)

    def report(self, inputs=None, /, **named) -> dict:
        """S/N in dB of every output against the float model on ``inputs``.

        ``10*log10(sum ref^2 / sum (ref - q)^2)`` (``inf`` when identical),
        keyed by output name in output order."""
        ref = self.float_model(inputs, **named)
        got = self(inputs, **named)
        return {k: sn_db(ref[k], got[k]) for k in ref}

    def summary(self) -> str:
        """The converted cells and their frac bits, one paragraph per cell."""
        return "\n".join(c.describe() for c in self.cells)

    def __repr__(self):
        lib = get_backend(self.library).title
        return (f"<FixedPointModel {self.kind}: {len(self.cells)} cell(s) on {lib} kernels, "
                f"inputs {self.input_names}, outputs {self.output_names}>")

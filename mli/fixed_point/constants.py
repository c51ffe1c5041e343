"""The constant inputs of a layer to convert (its weights), folded from the graph.

A weight is quantized once, when the model is converted, so it must be a constant:
a Const, a Const through one of :data:`FOLDABLE` (f16 compression, layout and shape
ops, evaluated here with the IR's own op), a static ``ShapeOf``, or a
TensorIterator/Loop invariant input fed by one of those in the outer graph.
"""

from __future__ import annotations

import numpy as np

from .. import ir
from .errors import FixedPointError

__all__ = ["resolve", "FOLDABLE"]

#: the ops a constant is folded through
FOLDABLE = ("Convert", "Transpose", "Reshape", "Squeeze", "Unsqueeze", "Split",
            "VariadicSplit", "Concat", "Gather", "Slice", "StridedSlice", "ShapeOf")


def resolve(site, layer, index, what):
    """The constant value feeding input ``index`` of ``layer``: a Const, through Convert
    (f16 compression), Transpose, Reshape, Squeeze, Unsqueeze, Split, VariadicSplit, Concat,
    Gather, Slice, StridedSlice or ShapeOf of constants, and from a
    TensorIterator/Loop body Parameter fed by an invariant input back to the outer graph.
    ``site`` = (graphs from the top level down to the layer's, enclosing TI/Loop layers)."""
    graphs, path = site
    depth = len(graphs) - 1
    g = graphs[depth]
    src, sport = g.producer(layer.id, layer.inputs[index].id)
    if src.type == "Const":
        return src.data
    if src.type == "ShapeOf" and src.inputs and None not in src.inputs[0].dims \
            and src.outputs[0].dtype is not None:        # a static shape is a constant
        return np.array(src.inputs[0].dims, src.outputs[0].dtype)
    if src.type in FOLDABLE:
        args = [resolve(site, src, k, what) for k in range(len(src.inputs))]
        try:
            fn = ir._build(src, g)
            out = fn(*[a.astype(np.float32) if a.dtype == np.float16 else a for a in args])
        except (ir.IRError, ValueError) as e:
            raise FixedPointError(f"{layer}: {what} cannot be folded through {src}: {e}") from None
        return out[[p.id for p in src.outputs].index(sport.id)] if isinstance(out, tuple) \
            else out
    if src.type == "Parameter" and depth > 0:
        outer = path[depth - 1]
        back = {to for _, to in outer.back_edges}
        for entry in outer.port_map:
            if entry.kind == "input" and entry.internal_layer_id == src.id \
                    and entry.axis is None and entry.purpose is None and src.id not in back:
                k = [p.id for p in outer.inputs].index(entry.external_port_id)
                return resolve((graphs[:depth], path[:depth - 1]), outer, k, what)
    raise FixedPointError(f"{layer}: {what} must be a constant (a Const, possibly through "
                          f"Convert/Transpose/Reshape, or a TensorIterator/Loop invariant input "
                          f"fed by one) to be quantized; it comes from {src}")

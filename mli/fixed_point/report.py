"""Quality of a whole-model conversion against the float model, per layer."""

from __future__ import annotations

import math

import numpy as np

from ..metrics import sn_db
from .formats import dequantize, int_range

__all__ = ["layer_report", "tensor_quality"]


def tensor_quality(ref, q, el, frac) -> dict:
    """S/N (dB) of the integers ``q`` (format el/frac) against the float ``ref``, the
    elements of ``ref`` beyond the format's range (saturated) and the headroom: whole
    bits between the largest |ref| and the format's largest value (negative: saturating)."""
    ref = np.asarray(ref, np.float64)
    got = dequantize(q, frac).astype(np.float64)
    lo, hi = int_range(el)
    top, bottom = hi * 2.0 ** -frac, lo * 2.0 ** -frac
    sat = int(np.count_nonzero((ref > top + 2.0 ** -(frac + 1)) | (ref < bottom - 2.0 ** -(frac + 1))))
    peak = float(np.abs(ref).max(initial=0.0))
    head = None if peak == 0 else int(math.floor(math.log2((hi + 1) * 2.0 ** -frac / peak)))
    return {"sn_db": sn_db(ref, got) if ref.shape == got.shape else None,
            "saturated": sat, "elements": int(ref.size), "headroom_bits": head}


def layer_report(wm, inputs, named) -> dict:
    """See :meth:`mli.fixed_point.whole.WholeModel.report`."""
    ref_out, ref = wm.float_values(inputs, **named)
    got_out, trace = wm.run(inputs, trace=True, **named)
    outputs = {k: sn_db(np.asarray(ref_out[k], np.float64), np.asarray(got_out[k], np.float64))
               for k in ref_out}
    layers = []
    for key, t in wm.plan.tensors.items():
        if key not in trace or key not in ref:
            continue
        lk = key.rsplit(":", 1)[0]
        lp = wm.plan.layers.get(lk, {})
        info = next((i for i in wm.analysis.infos if i.key == lk), None)
        if info is not None and info.bias is not None:
            continue            # its output is its fused bias Add's (reported there)
        row = {"tensor": key, "op": lp.get("op", "Parameter"), "role": lp.get("role", "input"),
               "kind": lp.get("kind", wm.kind), "el": t["el"], "frac": t["frac"],
               "float": lp.get("role") == "float"}
        row.update(tensor_quality(ref[key], trace[key], t["el"], t["frac"]))
        layers.append(row)
    return {"outputs": outputs, "layers": layers}

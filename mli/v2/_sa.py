"""sa8 formats from float values: per-tensor asymmetric parameters holding a range, float
values quantized to them, and the sa32 bias of an input format and weights.  Used by the
MLI 2.x backend of :mod:`mli.fixed_point` and by ``mli crosscheck --mli 2`` (a float bias);
kept here, beside :class:`Tensor`, so the tool needs nothing of mli.fixed_point."""
from __future__ import annotations

import numpy as np

from .tensor import Tensor


def _sa_params(lo, hi):
    """Per-tensor asymmetric sa8 parameters (zp, scale, frac) holding [lo, hi]."""
    t = Tensor.from_float(np.array([min(lo, 0.0), max(hi, 0.0)]), "sa8")
    return int(t.zero_point[0]), int(t.scale[0]), int(t.scale_frac_bits[0])


def _sa_quant(x, zp, scale, fb):
    """float -> int8 codes of the per-tensor format (zp, scale, fb), round half away, saturated."""
    step = scale * 2.0 ** -fb
    q = np.round(np.asarray(x, np.float64) / step) + zp
    return np.clip(q, -128, 127).astype(np.int8)


def _sa_bias(b, x_params, w: Tensor, per_axis):
    """The sa32 bias for input format `x_params` and weights `w`: per gate (dim 0) scale
    = scale(x) * scale(w[g]) with 2^-(fb(x) + fb(w[g])), brought to a 16-bit mantissa."""
    _, sx, fx = x_params
    b = np.asarray(b, np.float64)
    rows = b.reshape(b.shape[0], -1) if per_axis else b.reshape(1, -1)
    scales, fbs, q = [], [], np.empty(rows.shape, np.int64)
    for g in range(rows.shape[0]):
        e = sx * int(w.scale[g]) if per_axis else sx * int(w.scale[0])
        f = fx + (int(w.scale_frac_bits[g]) if per_axis else int(w.scale_frac_bits[0]))
        k = max(0, int(e).bit_length() - 15)
        s = (e + (1 << (k - 1))) >> k if k else e       # BIASSCALE allows +-1
        if s > 32767:
            s, k = s >> 1, k + 1
        scales.append(s)
        fbs.append(f - k)
        q[g] = np.clip(np.round(rows[g] / (s * 2.0 ** -(f - k))), -2 ** 31, 2 ** 31 - 1)
    qa = q.reshape(b.shape).astype(np.int32)
    if per_axis:
        return Tensor.sa(qa, [0] * len(scales), scales, fbs, dim=0, el_type="sa32")
    return Tensor.sa(qa, 0, scales[0], fbs[0], el_type="sa32")

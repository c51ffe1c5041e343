"""Data movement: permute, concat, padding2d (SPEC_MLI11_MORE section 9).

No arithmetic: the values are moved unchanged, and the output's frac bits
are the input's (``inputs[0]``'s for concat).  Outputs are dense.
"""

import numpy as np


def _data(name, x):
    x = np.asarray(x)
    if x.dtype not in (np.int8, np.int16):
        raise TypeError(f"{name}: int8 or int16 data expected, got {x.dtype}")
    if not 1 <= x.ndim <= 4:
        raise ValueError(f"{name}: rank 1 to 4 expected, got {x.ndim}")
    return x


def permute(x, perm_dim):
    """``mli_krn_permute_fx8/fx16``: output dimension k is input dimension
    ``perm_dim[k]`` (entries beyond the rank are ignored).

    Parameters
    ----------
    x : numpy.ndarray of int8 or int16, rank 1 to 4
    perm_dim : sequence of int
        ``mli_permute_cfg.perm_dim``; its first ``x.ndim`` entries must be a
        permutation of ``range(x.ndim)`` (else BAD_FUNC_CFG in MLI).

    Returns
    -------
    numpy.ndarray, dense, the dtype of `x`.
    """
    x = _data("x", x)
    perm = [int(p) for p in perm_dim][:x.ndim]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"BAD_FUNC_CFG: perm_dim {perm} is not a permutation of the {x.ndim} dimensions")
    return np.ascontiguousarray(np.transpose(x, perm))


def concat(inputs, axis):
    """``mli_krn_concat_fx8/fx16``: `inputs` (1 to 8 arrays of one dtype and
    rank, equal shapes except on `axis`) joined along `axis`.

    Returns
    -------
    numpy.ndarray, dense, the dtype of the inputs.
    """
    xs = [_data(f"inputs[{i}]", x) for i, x in enumerate(inputs)]
    if not 1 <= len(xs) <= 8 or not 0 <= int(axis) < xs[0].ndim:
        raise ValueError("BAD_FUNC_CFG: 1 to 8 inputs and an axis below the rank")
    for i, x in enumerate(xs[1:], 1):
        if x.dtype != xs[0].dtype or x.ndim != xs[0].ndim:
            raise ValueError(f"INCOMPATEBLE_TENSORS: inputs[{i}] differs from inputs[0] in type or rank")
        if [s for k, s in enumerate(x.shape) if k != axis] != [s for k, s in enumerate(xs[0].shape) if k != axis]:
            raise ValueError(f"SHAPE_MISMATCH: inputs[{i}] differs from inputs[0] off the axis")
    return np.ascontiguousarray(np.concatenate(xs, axis=int(axis)))


def _padding2d(layout, x, padding_top, padding_bottom, padding_left, padding_right):
    x = _data("x", x)
    if x.ndim != 3:
        raise ValueError(f"SHAPE_MISMATCH: rank 3 expected, got {x.ndim}")
    rows, cols = (padding_top, padding_bottom), (padding_left, padding_right)
    widths = [(0, 0), rows, cols] if layout == "chw" else [rows, cols, (0, 0)]
    out = np.zeros(tuple(s + a + b for s, (a, b) in zip(x.shape, widths)), dtype=x.dtype)
    sl = tuple(slice(a, a + s) for s, (a, _) in zip(x.shape, widths))
    out[sl] = x
    return out


def padding2d_chw(x, padding_top=0, padding_bottom=0, padding_left=0, padding_right=0):
    """``mli_krn_padding2d_chw_fx8/fx16``: `x` (C, H, W) with zero rows on top
    and bottom and zero columns left and right; returns (C, H+t+b, W+l+r)."""
    return _padding2d("chw", x, int(padding_top), int(padding_bottom), int(padding_left), int(padding_right))


def padding2d_hwc(x, padding_top=0, padding_bottom=0, padding_left=0, padding_right=0):
    """``mli_krn_padding2d_hwc_fx8/fx16``: as :func:`padding2d_chw` for (H, W, C)."""
    return _padding2d("hwc", x, int(padding_top), int(padding_bottom), int(padding_left), int(padding_right))

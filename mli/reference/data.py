"""Slow twins of MLI 1.1's data movement (``mli_krn_permute_*``,
``mli_krn_concat_*``, ``mli_krn_padding2d_{chw,hwc}_*``, SPEC_MLI11_MORE 9)."""
import numpy as np

__all__ = ["permute", "concat", "padding2d"]


def permute(x, perm_dim):
    """Output dim k is input dim perm_dim[k] (entries beyond the rank ignored)."""
    x = np.asarray(x)
    return np.ascontiguousarray(np.transpose(x, [int(d) for d in perm_dim[:x.ndim]]))


def concat(inputs, axis):
    return np.concatenate([np.asarray(t) for t in inputs], axis=int(axis))


def padding2d(x, padding_left, padding_right, padding_top, padding_bottom, hwc=False):
    """Zero padding of a rank-3 feature map ([C, H, W], or [H, W, C] with hwc)."""
    pads = ((padding_top, padding_bottom), (padding_left, padding_right))
    return np.pad(np.asarray(x), pads + ((0, 0),) if hwc else ((0, 0),) + pads)

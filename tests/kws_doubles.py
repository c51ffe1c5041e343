"""Test doubles of the MLI 1.1 kernels the KWS network needs and the
package does not have yet, written in numpy from ../shared/data/kws/spec.md
section 6 (only for the shapes and parameters of that network).

They let tests/test_kws.py check the wiring of mli.tools.kws -- which
kernel is called with which configuration, frac bits and buffers, the
schedule, the dump and the printed lines -- before the real kernels land.
They take the signatures mli.tools.kws.network calls and check the
configuration fields they are given (strides, kernel size, padding,
permutation), so a wrong configuration fails here too.  They are not the
package's kernels and prove nothing about them: the tests that run the
package's own kernels skip until those exist.
"""
from dataclasses import dataclass, field

import numpy as np

import mli

I64 = np.int64


def rnd(x, n):
    """x / 2**n rounded to the nearest integer, ties as the thread's rounding
    mode (convergent: to even; up: upwards); n <= 0 shifts left."""
    x = np.asarray(x, I64)
    if n <= 0:
        return x << -n
    q = x >> n
    r = x - (q << n)
    half = I64(1) << (n - 1)
    if mli.get_rounding() == "up":
        return q + (r >= half)
    return q + ((r > half) | ((r == half) & (q & 1 == 1)))


def sat(x, bits):
    return np.clip(x, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)


@dataclass
class Conv2dConfig:
    relu: int = mli.ReluType.NONE
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0


@dataclass
class PoolConfig:
    kernel_width: int = 1
    kernel_height: int = 1
    stride_width: int = 1
    stride_height: int = 1
    padding_left: int = 0
    padding_right: int = 0
    padding_top: int = 0
    padding_bottom: int = 0


@dataclass
class PermuteConfig:
    perm_dim: tuple = field(default_factory=tuple)


def _no_padding(cfg):
    assert (cfg.padding_left, cfg.padding_right, cfg.padding_top, cfg.padding_bottom) == (0, 0, 0, 0)


def _conv(x, w, b, cfg, out_frac_bits, depthwise, kernel=None, stride=None):
    assert x.dtype == np.int8 and w.dtype == np.int8 and b.dtype == np.int8
    assert cfg.relu == mli.ReluType.NONE
    _no_padding(cfg)
    if stride is not None:       # a specialised entry point: the cfg must say what it computes
        assert (cfg.stride_height, cfg.stride_width) == stride
    xi, wi, bi = x.numpy().astype(I64), w.numpy().astype(I64), b.numpy().astype(I64)
    C, H, W = xi.shape
    O, CI, KH, KW = wi.shape
    if kernel is not None:
        assert (KH, KW) == kernel
    assert CI == (1 if depthwise else C) and (O == C or not depthwise)
    sh, sw = cfg.stride_height, cfg.stride_width
    ho, wo = -(-(H - KH + 1) // sh), -(-(W - KW + 1) // sw)
    bias_shift = x.frac_bits + w.frac_bits - b.frac_bits
    out_shift = x.frac_bits + w.frac_bits - out_frac_bits
    acc = np.broadcast_to(sat(bi << bias_shift, 32)[:, None, None], (O, ho, wo)).copy()
    for kh in range(KH):
        for kw in range(KW):
            patch = xi[:, kh:kh + sh * (ho - 1) + 1:sh, kw:kw + sw * (wo - 1) + 1:sw]    # [C, ho, wo]
            if depthwise:
                acc += patch * wi[:, 0, kh, kw][:, None, None]
            else:
                acc += np.einsum("chw,oc->ohw", patch, wi[:, :, kh, kw])
    return mli.Tensor(sat(rnd(acc, out_shift), 8).astype(np.int8), out_frac_bits)


def conv2d_chw_fx8_generic(x, w, b, cfg, *, out_frac_bits):
    return _conv(x, w, b, cfg, out_frac_bits, depthwise=False)


def conv2d_chw_fx8_k1x1_str1_nopad(x, w, b, cfg, *, out_frac_bits):
    return _conv(x, w, b, cfg, out_frac_bits, depthwise=False, kernel=(1, 1), stride=(1, 1))


def depthwise_conv2d_chw_fx8_k3x3_str1_nopad(x, w, b, cfg, *, out_frac_bits):
    return _conv(x, w, b, cfg, out_frac_bits, depthwise=True, kernel=(3, 3), stride=(1, 1))


def leaky_relu_fx8(x, slope):
    assert x.dtype == np.int8 and slope.rank == 0
    s = int(slope.numpy())
    assert 0 <= s < (1 << slope.frac_bits)           # the slope-below-one branch
    v = x.numpy().astype(I64)
    neg = sat(sat(rnd(v * s, slope.frac_bits), 16), 8)
    return mli.Tensor(np.maximum(v, neg).astype(np.int8), x.frac_bits)


def avepool_chw_fx16_generic(x, cfg):
    assert x.dtype == np.int16
    _no_padding(cfg)
    v = x.numpy().astype(I64)
    C, H, W = v.shape
    assert (cfg.kernel_height, cfg.kernel_width, cfg.stride_height, cfg.stride_width) == (1, W, 1, 1) and W == 5
    s = v.sum(axis=2, keepdims=True)
    return mli.Tensor(sat(rnd(s * 26214, 17), 16).astype(np.int16), x.frac_bits)   # MLI's 1/5: 0x6666 >> 17


def permute_fx16(x, cfg):
    perm = tuple(cfg.perm_dim)[:x.rank]
    return mli.Tensor(np.ascontiguousarray(np.transpose(x.numpy(), perm)), x.frac_bits)


class Softmax:
    """softmax_fx16 of spec.md 6.8 with MLI's exp(-t) table."""

    def __init__(self, table):
        self.t = np.asarray(table, I64)

    def __call__(self, x):
        assert x.dtype == np.int16 and x.rank == 1
        v = x.numpy().astype(I64)
        f = x.frac_bits
        mx, mn = int(v.max()), int(v.min())
        if mn - mx < -32768:
            v, mx, f = v >> 1, mx >> 1, f - 1
        d = sat(v - mx, 16)
        s = f - 4
        idx = np.clip((d >> s) + 179, 0, 179)
        frac = d - ((d >> s) << s)
        t0, t1 = self.t[idx], self.t[idx + 1]
        e = sat(t0 - sat(rnd(sat(t0 - t1, 16) * frac, s), 16), 16)
        total = int(e.sum())
        k = total.bit_length() - 1
        m = int(sat(rnd(total, k - 14), 16))
        r = min((1 << 29) // m, 32767)
        return mli.Tensor(sat(rnd(r * e, k), 16).astype(np.int16), 15)


def install(monkeypatch, softmax_table):
    """Put the doubles into :mod:`mli` for one test (in place of the package's own, if any)."""
    doubles = {"Conv2dConfig": Conv2dConfig, "PoolConfig": PoolConfig, "PermuteConfig": PermuteConfig,
               "conv2d_chw_fx8_generic": conv2d_chw_fx8_generic,
               "conv2d_chw_fx8_k1x1_str1_nopad": conv2d_chw_fx8_k1x1_str1_nopad,
               "depthwise_conv2d_chw_fx8_k3x3_str1_nopad": depthwise_conv2d_chw_fx8_k3x3_str1_nopad,
               "leaky_relu_fx8": leaky_relu_fx8, "avepool_chw_fx16_generic": avepool_chw_fx16_generic,
               "permute_fx16": permute_fx16, "softmax_fx16": Softmax(softmax_table)}
    for name, fn in doubles.items():
        monkeypatch.setattr(mli, name, fn, raising=False)

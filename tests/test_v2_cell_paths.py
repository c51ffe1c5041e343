"""mli.v2 LSTM / GRU cells: every ISA path of this CPU gives the scalar
path's integers (out, and the LSTM's cell) on random calls of every kind,
both roundings, both directions and result modes, every output activation,
M with and without a tail of 8 / 16, sequences beyond one block of hoisted
input sums and rows of several 8-bit chunks, data and weights drawn with their
integer extremes mixed in (saturation corners of every read-out and step)."""
import zlib

import numpy as np
import pytest

import mli
import mli.v2 as v

KINDS = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32")
ISAS = [i for i in mli.supported_isas() if i != "scalar"]


def _ints(rng, shape, lo, hi, p_ext):
    """Uniform integers in [lo, hi] with a share p_ext of them at lo or hi."""
    a = rng.integers(lo, hi + 1, shape)
    ext = rng.random(shape) < p_ext
    a[ext] = np.where(rng.random(int(ext.sum())) < 0.5, lo, hi)
    return a


def _case(rng, cell, kind):
    g = 4 if cell == "lstm" else 3
    T, N, M = int(rng.integers(1, 6)), int(rng.integers(1, 40)), int(rng.choice([1, 5, 8, 13, 16, 24, 31, 40]))
    if rng.random() < 0.1:  # blocks of steps beyond one hoist, rows of several 8-bit chunks
        T, N = int(rng.integers(30, 70)), int(rng.integers(500, 1100))
    p_ext = float(rng.choice([0.0, 0.05, 0.5, 1.0]))
    cfg = v.RnnCellCfg(int(rng.integers(0, 2)), int(rng.integers(0, 2)),
                       int(rng.integers(0, 3)) if cell == "lstm" else v.RNN_ACT_TANH)
    if kind == "sa8_sa8_sa32":
        zx, zh, zc = (int(rng.integers(-128, 128)) for _ in range(3))
        sx, fx = int(rng.integers(1 << 14, 1 << 15)), int(rng.integers(14, 24))
        x = v.Tensor.sa(_ints(rng, (T, N), -128, 127, p_ext), zx, sx, fx)
        h0 = v.Tensor.sa(_ints(rng, (M,), -128, 127, p_ext), zh, int(rng.integers(1 << 14, 1 << 15)),
                         int(rng.integers(14, 24)))
        per_axis = bool(rng.integers(0, 2))
        if per_axis:
            sw = [int(rng.integers(1 << 14, 1 << 15)) for _ in range(g)]
            fw = [int(rng.integers(18, 24)) for _ in range(g)]
            wi = v.Tensor.sa(_ints(rng, (g, N, M), -127, 127, p_ext), [0] * g, sw, fw, dim=0)
            wo = v.Tensor.sa(_ints(rng, (g, M, M), -127, 127, p_ext), [0] * g, sw, fw, dim=0)
        else:
            sw, fw = [int(rng.integers(1 << 14, 1 << 15))], [int(rng.integers(18, 24))]
            wi = v.Tensor.sa(_ints(rng, (g, N, M), -127, 127, p_ext), 0, sw[0], fw[0])
            wo = v.Tensor.sa(_ints(rng, (g, M, M), -127, 127, p_ext), 0, sw[0], fw[0])
        scales = [(sx * s) >> 15 for s in sw]
        fbs = [fx + f - 15 for f in fw]
        bq = _ints(rng, (g, M), -(1 << 20), 1 << 20, p_ext / 4)
        b = (v.Tensor.sa(bq, [0] * g, scales, fbs, dim=0, el_type="sa32") if per_axis else
             v.Tensor.sa(bq, 0, scales[0], fbs[0], el_type="sa32"))
        c = v.Tensor.sa(_ints(rng, (M,), -128, 127, p_ext), zc, int(rng.integers(1 << 14, 1 << 15)),
                        int(rng.integers(14, 24)))
        out = v.Tensor.sa(np.zeros((T, M)), int(rng.integers(-128, 128)), int(rng.integers(1 << 14, 1 << 15)),
                          int(rng.integers(14, 24)))
    else:
        w8 = kind != "fx16"
        wel, wlo, whi = ("fx8", -128, 127) if w8 else ("fx16", -32768, 32767)
        fx, fw = int(rng.integers(6, 16)), int(rng.integers(4, 8) if w8 else rng.integers(8, 16))
        x = v.Tensor.fx(_ints(rng, (T, N), -32768, 32767, p_ext), fx)
        h0 = v.Tensor.fx(_ints(rng, (M,), -32768, 32767, p_ext), int(rng.integers(8, 16)))
        wi = v.Tensor.fx(_ints(rng, (g, N, M), wlo, whi, p_ext), fw, wel)
        wo = v.Tensor.fx(_ints(rng, (g, M, M), wlo, whi, p_ext), fw, wel)
        b = v.Tensor.fx(_ints(rng, (g, M), wlo, whi, p_ext), int(rng.integers(0, fx + fw + 1)) if not w8
                        else int(rng.integers(0, 8)), wel)
        c = v.Tensor.fx(_ints(rng, (M,), -32768, 32767, p_ext), int(rng.integers(6, 15)))
        out = v.Tensor.zeros((T, M), "fx16", int(rng.integers(8, 16)))
    return x, h0, wi, wo, b, cfg, c, out


def _run(cell, kind, case, isa, mode):
    x, h0, wi, wo, b, cfg, c, out = case
    cb, ob = c.buffer.copy(), out.buffer.copy()
    fn = getattr(v, f"{cell}_cell_{kind}")
    try:
        with mli.use_isa(isa), mli.rounding(mode):
            if cell == "lstm":
                fn(x, h0, wi, wo, b, None, None, cfg, c, out)
            else:
                fn(x, h0, wi, wo, b, None, None, cfg, out)
        res = ("ok", out.buffer.copy(), c.buffer.copy())
    except mli.MliError as e:
        res = ("err", type(e).__name__)
    c.buffer[:] = cb
    out.buffer[:] = ob
    return res


@pytest.mark.skipif(not ISAS, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", ("lstm", "gru"))
def test_every_path_gives_the_scalar_integers(cell, kind):
    rng = np.random.default_rng(zlib.crc32(f"{cell} {kind}".encode()))
    ok = 0
    for _ in range(150):
        case = _case(rng, cell, kind)
        for mode in ("convergent", "up"):
            want = _run(cell, kind, case, "scalar", mode)
            ok += want[0] == "ok"
            for isa in ISAS:
                got = _run(cell, kind, case, isa, mode)
                assert got[0] == want[0]
                if want[0] == "ok":
                    assert np.array_equal(got[1], want[1]), (isa, mode)
                    assert np.array_equal(got[2], want[2]), (isa, mode)
                else:
                    assert got[1] == want[1]
    assert ok >= 150  # most calls run (the rest are refusals of the drawn formats)

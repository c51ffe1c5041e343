"""mli.fixed_point.gru.GruCell: OpenVINO's GRU step composed from MLI 1.1 kernels."""

import numpy as np
import pytest

import mli.kernels
from mli.enums import RnnActivation, RnnMode
from mli.fixed_point.gru import GruCell, split_gru_weights
from mli.ir.ops.recurrent import _sigmoid, gru_step
from mli.metrics import sn_db
from mli.tensor import frac_bits_for

N, M, T = 6, 8, 30
FLOOR = {"fx16": 60, "fx8w16d": 35, "fx8": 21}      # measured 62-66 / 37-39 / 23-27 dB


def weights(seed, lbr):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, .4, (3 * M, N)), rng.normal(0, .4, (3 * M, M)),
            rng.normal(0, .2, ((4 if lbr else 3) * M,)),
            rng.uniform(-1, 1, (T, N)), rng.uniform(-.5, .5, M))


def float_run(W, R, B, x, h0, lbr, clip):
    h, ys = h0[None], []
    for t in range(len(x)):
        h = gru_step([_sigmoid, np.tanh], clip, M, lbr, x[t:t + 1], h, W, R, B)
        ys.append(h[0])
    return np.array(ys)


def make(W, R, B, x, lbr, kind, clip=0.0):
    return GruCell(W, R, B, linear_before_reset=lbr, kind=kind, clip=clip,
                   in_frac=frac_bits_for(x, "fx8" if kind == "fx8" else "fx16"))


@pytest.mark.parametrize("kind", ["fx16", "fx8w16d", "fx8"])
@pytest.mark.parametrize("clip", [0.0, 0.75])
@pytest.mark.parametrize("lbr", [False, True])
def test_against_openvino_formulas(lbr, clip, kind):
    W, R, B, x, h0 = weights(0, lbr)
    ref = float_run(W, R, B, x, h0, lbr, clip)
    if clip:
        assert sn_db(ref, float_run(W, R, B, x, h0, lbr, 0.0)) < 40     # the clip acts
    cell = make(W, R, B, x, lbr, kind, clip)
    y, h = cell.run_sequence(cell.quantize(x, "x"), cell.quantize(h0, "h"))
    assert y.dtype == cell.dtype == (np.int8 if kind == "fx8" else np.int16)
    np.testing.assert_array_equal(h, y[-1])
    assert sn_db(ref, cell.dequantize(y, "y")) >= FLOOR[kind]


@pytest.mark.parametrize("lbr", [False, True])
def test_sequence_is_stepping_and_rows_are_independent(lbr):
    W, R, B, x, h0 = weights(1, lbr)
    cell = make(W, R, B, x, lbr, "fx16")
    xq, hq = cell.quantize(x, "x"), cell.quantize(h0, "h")
    y, _ = cell.run_sequence(xq, hq)
    h = np.stack([hq, -hq])                     # two rows: the second its own state
    for t in range(T):
        h = cell.step(np.stack([xq[t], xq[t]]), h)
        np.testing.assert_array_equal(h[0], y[t])
    y2, _ = cell.run_sequence(xq, -hq)
    np.testing.assert_array_equal(h[1], y2[-1])


@pytest.mark.parametrize("clip", [0.0, 1.0])
@pytest.mark.parametrize("lbr", [False, True])
def test_one_step_is_the_documented_mli_calls(monkeypatch, lbr, clip):
    """The kernels one step calls, in order (``cell.calls``), with the stacked z, r cell
    first: basic RNN one-to-one, act NONE, weights [2, M, N+M]."""
    W, R, B, x, h0 = weights(2, lbr)
    cell = make(W, R, B, x, lbr, "fx16", clip)
    seen = []
    for name in set(cell.calls):
        fn = getattr(mli.kernels, name)

        def spy(*a, _fn=fn, _name=name, **kw):
            seen.append((_name, a))
            return _fn(*a, **kw)
        monkeypatch.setattr(mli.kernels, name, spy)
    cell.step(cell.quantize(x[:1], "x"), cell.quantize(h0[None], "h"))
    assert tuple(n for n, _ in seen) == cell.calls
    want = ["basic_rnn_cell_fx16"] + ["eltwise_min_fx16", "eltwise_max_fx16"] * bool(clip) \
        + ["sigm_fx16"]
    assert list(cell.calls[:len(want)]) == want
    assert cell.calls[-4:] == ("eltwise_mul_fx16", "eltwise_mul_fx16", "eltwise_sub_fx16",
                               "eltwise_add_fx16")
    _, (xt, ht, w, b, cfg) = seen[0]
    assert w.shape == (2, M, N + M) and b.shape == (2, M) and ht.shape == (M,)
    assert cfg.mode == RnnMode.ONE_TO_ONE and cfg.act == RnnActivation.NONE
    fcs = [a for n, a in seen if n.startswith("fully_connected")]
    rnns = [a for n, a in seen if n.startswith("basic_rnn")]
    if lbr:
        assert len(rnns) == 1 and [a[1].shape for a in fcs] == [(M, N), (M, M)]
        assert cell.calls.count("fully_connected_fx16") == 2
    else:
        assert not fcs and len(rnns) == 2 and rnns[1][2].shape == (M, N + M)
        assert rnns[1][4].act == (RnnActivation.NONE if clip else RnnActivation.TANH)


def test_weight_layout_is_openvinos_z_r_h():
    W = np.arange(3 * M * N, dtype=float).reshape(3 * M, N)
    R = -np.arange(3 * M * M, dtype=float).reshape(3 * M, M)
    B = np.arange(4 * M, dtype=float)
    p = split_gru_weights(W, R, B[:3 * M], False)
    np.testing.assert_array_equal(p["zr"][0][0], np.hstack([W[:M], R[:M]]))
    np.testing.assert_array_equal(p["zr"][0][1], np.hstack([W[M:2 * M], R[M:2 * M]]))
    np.testing.assert_array_equal(p["zr"][1], B[:2 * M].reshape(2, M))
    np.testing.assert_array_equal(p["n"][0], np.hstack([W[2 * M:], R[2 * M:]]))
    np.testing.assert_array_equal(p["n"][1], B[2 * M:3 * M])
    q = split_gru_weights(W, R, B, True)
    np.testing.assert_array_equal(q["xn"][0], W[2 * M:])
    np.testing.assert_array_equal(q["xn"][1], B[2 * M:3 * M])
    np.testing.assert_array_equal(q["hn"][0], R[2 * M:])
    np.testing.assert_array_equal(q["hn"][1], B[3 * M:])
    with pytest.raises(ValueError, match=r"B \[3M\]"):
        split_gru_weights(W, R, B, False)


def test_errors():
    W, R, B, x, h0 = weights(3, False)
    cell = make(W, R, B, x, False, "fx16")
    with pytest.raises(TypeError, match="quantize floats"):
        cell.step(x[:1], cell.quantize(h0[None], "h"))
    with pytest.raises(ValueError, match="as many rows"):
        cell.step(cell.quantize(x[:2], "x"), cell.quantize(h0[None], "h"))
    with pytest.raises(ValueError, match="kind must be"):
        GruCell(W, R, B, kind="fx32", in_frac=15)
    with pytest.raises(ValueError, match="bias shift"):
        GruCell(W, R, B, in_frac=15, w_fracs={"zr": 14}, b_fracs={"zr": 30})
    assert "GruCell(fx16" in repr(cell) and cell.fracs["h"] == 15 and cell.fracs["g"] == 12

"""The compiled float32 sequence runner (mli._core.float_rnn_sequence, C in
csrc/src/kernels/mlipy_float_rnn.c) against the numpy runners of
mli.ir.ops.recurrent, which the IR reader uses for float64 and other activations.

Tolerance: both compute the same formulas in float32 with the same element-wise
order, but the matrix products sum in another order (BLAS vs one fixed order) and
exp/tanh are different implementations (numpy's vs the C file's, each within a few
ulp), so each step differs by a few float32 ulp; with the weights below (scaled by
1/sqrt(M), a contracting recurrence) the outputs, all of magnitude <= a few units,
stay within RTOL/ATOL of each other over the sequences tested here.
"""
import numpy as np
import pytest

import mli
from mli import _core
from mli.ir.ops import recurrent as R

RTOL, ATOL = 1e-5, 2e-6  # about 80 ulp at 1.0: several steps of a few ulp each
GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def numpy_sequence(cell, act, lbr, clip, dirs, x, states, lengths, w, r, b):
    """The numpy runners over every direction: (y [B, nd, T, M], final states)."""
    hs = states[0].shape[-1]
    ys, finals = [], [[] for _ in states]
    for d, rev in enumerate(dirs):
        if cell == "lstm":
            run = R._lstm_runner(hs, clip, w[d], r[d], b[d])
        elif cell == "gru":
            run = R._gru_runner(hs, clip, lbr, w[d], r[d], b[d])
        else:
            run = R._rnn_runner(hs, clip, R.ACTIVATIONS[act][0](None, None), w[d], r[d], b[d])
        y = np.zeros((x.shape[0], x.shape[1], hs), x.dtype)
        st = R._run_fast(run, x, [h[:, d] for h in states], lengths, rev, y)
        st = st if isinstance(st, (tuple, list)) else (st,)
        ys.append(y)
        for f, s in zip(finals, st):
            f.append(s)
    return [np.stack(ys, 1)] + [np.stack(f, 1) for f in finals]


def make_case(rng, cell, B, T, N, M, dirs, lbr=False, full=True):
    G, nd = GATES[cell], len(dirs)
    nb = 4 if lbr else G
    f = np.float32
    x = rng.standard_normal((B, T, N)).astype(f)
    states = [rng.standard_normal((B, nd, M)).astype(f) for _ in range(2 if cell == "lstm" else 1)]
    lengths = np.full(B, T, np.int64) if full else rng.integers(0, T + 1, B)
    sc = 1 / np.sqrt(M)
    w = (rng.standard_normal((nd, G * M, N)) * sc).astype(f)
    r = (rng.standard_normal((nd, G * M, M)) * sc).astype(f)
    b = (rng.standard_normal((nd, nb * M)) * 0.3).astype(f)
    return x, states, lengths, w, r, b


def compiled(cell, act, lbr, clip, dirs, x, states, lengths, w, r, b):
    return list(R._run_compiled((cell, act, lbr, clip, dirs), x, states, lengths, w, r, b,
                                states[0].shape[-1]))


CONFIGS = [(cell, act, lbr) for cell, act, lbr in
           [("lstm", "tanh", False), ("gru", "tanh", False), ("gru", "tanh", True),
            ("rnn", "tanh", False), ("rnn", "sigmoid", False), ("rnn", "relu", False)]]


@pytest.mark.parametrize("cell,act,lbr", CONFIGS)
@pytest.mark.parametrize("seed", range(6))
def test_matches_numpy_runners(cell, act, lbr, seed):
    rng = np.random.default_rng(seed * 7 + len(cell))
    dirs = [[False], [True], [False, True]][seed % 3]
    B, T, N, M = int(rng.integers(1, 4)), int(rng.integers(1, 30)), int(rng.integers(1, 12)), \
        int(rng.integers(1, 40))
    clip = [0.0, 0.7, 3.0][seed % 3 if seed < 3 else (seed + 1) % 3]
    x, states, lengths, w, r, b = make_case(rng, cell, B, T, N, M, dirs, lbr, full=seed % 2 == 0)
    saved = [v.copy() for v in (x, *states, lengths, w, r, b)]
    ref = numpy_sequence(cell, act, lbr, clip, dirs, x, states, lengths, w, r, b)
    got = compiled(cell, act, lbr, clip, dirs, x, states, lengths, w, r, b)
    for g, e in zip(got, ref):
        assert g.dtype == np.float32 and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
    # padding: exactly 0 past each row's length
    for row, n in enumerate(lengths):
        assert not got[0][row, :, n:].any()
    for before, after in zip(saved, (x, *states, lengths, w, r, b)):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("cell,act,lbr", CONFIGS)
def test_every_isa_same_bits(cell, act, lbr):
    rng = np.random.default_rng(5)
    args = make_case(rng, cell, 3, 17, 7, 37, [False, True], lbr, full=False)
    before = mli.isa()
    try:
        outs = []
        for name in mli.supported_isas():
            mli.set_isa(name)
            outs.append(compiled(cell, act, lbr, 0.9, [False, True], *args))
    finally:
        mli.set_isa(before)
    for o in outs[1:]:
        for a, b in zip(o, outs[0]):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_zero_lengths_and_empty(cell):
    rng = np.random.default_rng(1)
    # every row of length 0: y all 0, final states the initial ones
    x, states, _, w, r, b = make_case(rng, cell, 2, 5, 3, 4, [False, True])
    got = compiled(cell, "tanh", False, 0.0, [False, True], x, states,
                   np.zeros(2, np.int64), w, r, b)
    assert not got[0].any()
    for g, s in zip(got[1:], states):
        np.testing.assert_array_equal(g, s)
    # T = 0, B = 0, N = 0
    for B, T, N in ((2, 0, 3), (0, 4, 3), (2, 4, 0)):
        x, states, lengths, w, r, b = make_case(rng, cell, B, T, N, 4, [True])
        ref = numpy_sequence(cell, "tanh", False, 0.0, [True], x, states, lengths, w, r, b)
        got = compiled(cell, "tanh", False, 0.0, [True], x, states, lengths, w, r, b)
        for g, e in zip(got, ref):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_nan_propagates_like_numpy(cell):
    rng = np.random.default_rng(2)
    x, states, _, w, r, b = make_case(rng, cell, 3, 8, 5, 6, [False, True])
    lengths = np.array([8, 5, 3], np.int64)
    x[0, 4, 1] = np.nan       # inside row 0: NaN from step 4 on (forward)
    x[1, 6, 0] = np.nan       # past row 1's length: never read
    x[2, 1, 2] = np.inf
    with np.errstate(invalid="ignore"):
        ref = numpy_sequence(cell, "tanh", False, 0.0, [False, True], x, states, lengths, w, r,
                             b)
    got = compiled(cell, "tanh", False, 0.0, [False, True], x, states, lengths, w, r, b)
    for g, e in zip(got, ref):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)   # NaN == NaN here
    assert np.isnan(got[0][0]).any() and not np.isnan(got[0][1]).any()


def test_activation_accuracy():
    """The C file's sigmoid/tanh (one RNN step on R = 0, B = 0 bias) within 3 ulp of the
    exact values, specials as numpy gives them."""
    v = np.concatenate([np.random.default_rng(3).standard_normal(20000) * 4,
                        np.linspace(-0.2, 0.2, 4001), np.linspace(-110, 110, 4001),
                        [np.inf, -np.inf, np.nan, 1e-40, -1e-40]]).astype(np.float32)
    B = v.size
    for act, exact in (("tanh", np.tanh), ("sigmoid", lambda d: 1 / (1 + np.exp(-d)))):
        y = np.empty((B, 1, 1, 1), np.float32)
        _core.float_rnn_sequence("rnn", act, False, 0.0, [False], v.reshape(B, 1, 1),
                                 np.zeros((B, 1, 1), np.float32), None, np.ones(B, np.int64),
                                 np.ones((1, 1, 1), np.float32), np.zeros((1, 1, 1), np.float32),
                                 np.zeros((1, 1), np.float32), y, np.empty((B, 1, 1), np.float32),
                                 None)
        got = y.ravel()
        with np.errstate(over="ignore"):
            e = exact(v.astype(np.float64))
        ok = np.isfinite(e) & (np.abs(e) > 1e-37)
        ulp = np.spacing(np.abs(e[ok]).astype(np.float32)).astype(np.float64)
        assert (np.abs(got[ok] - e[ok]) / ulp).max() <= 3
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got[-5:], exact(v[-5:]).astype(np.float32))


def test_refused_cleanly():
    f = np.float32
    h0, w, r, b = np.zeros((1, 1, 2), f), np.zeros((1, 8, 3), f), np.zeros((1, 8, 2), f), \
        np.zeros((1, 8), f)
    x, y, ho, co = np.zeros((1, 4, 3), f), np.zeros((1, 1, 4, 2), f), np.zeros((1, 1, 2), f), \
        np.zeros((1, 1, 2), f)
    ok = dict(x=x, h0=h0, c0=h0, lengths=np.array([4], np.int64), w=w, r=r, b=b, y=y,
              h_out=ho, c_out=co)

    def call(**kw):
        a = {**ok, **kw}
        _core.float_rnn_sequence("lstm", "tanh", False, 0.0, [False], a["x"], a["h0"], a["c0"],
                                 a["lengths"], a["w"], a["r"], a["b"], a["y"], a["h_out"],
                                 a["c_out"])
    call()
    with pytest.raises(ValueError, match="C int range"):      # sizes beyond the C int
        call(x=np.zeros((0, 1, 2 ** 31), f))
    with pytest.raises(ValueError):
        call(w=np.zeros((1, 8, 4), f))
    with pytest.raises(ValueError):
        call(y=np.zeros((1, 1, 3, 2), f))
    with pytest.raises(ValueError, match="refused"):          # lengths outside [0, T]
        call(lengths=np.array([5], np.int64))
    with pytest.raises(ValueError, match="refused"):
        call(lengths=np.array([-1], np.int64))
    with pytest.raises(ValueError):                            # LSTM without c
        call(c0=None)
    with pytest.raises((ValueError, TypeError)):               # read-only output
        ro = y.copy()
        ro.flags.writeable = False
        call(y=ro)


def test_dtype_dispatch_through_the_op():
    """float32 runs in C, float64 stays in numpy (float64 out); both agree."""
    from types import SimpleNamespace
    rng = np.random.default_rng(4)
    x, states, lengths, w, r, b = make_case(rng, "lstm", 2, 9, 5, 6, [False, True], full=False)
    a = {"hidden_size": 6, "activations": ["sigmoid", "tanh", "tanh"], "activations_alpha": [],
         "activations_beta": [], "clip": 0.0, "direction": "bidirectional"}
    layer = SimpleNamespace(version="opset5", type="LSTMSequence", name="l", id=0)
    fn = R._sequence(layer, a, 3, 4, 2, lambda *args: None,
                     make_runner=lambda acts, clip, hs, w_, r_, b_: R._lstm_runner(hs, clip, w_,
                                                                                   r_, b_))
    out32 = fn(x, *states, lengths, w, r, b)
    out64 = fn(*(v.astype(np.float64) for v in (x, *states)), lengths,
               *(v.astype(np.float64) for v in (w, r, b)))
    for o32, o64 in zip(out32, out64):
        assert o32.dtype == np.float32 and o64.dtype == np.float64
        np.testing.assert_allclose(o32, o64, rtol=1e-4, atol=1e-5)


def test_shape_cache_of_the_planned_program():
    """The shape-derived steps of a model with dynamic dims are kept per set of input
    shapes: alternating shapes give the values of a run of every step in order."""
    from mli.ir import read_model
    from conftest import SHARED
    xml = SHARED / "vectors" / "ov_real" / "pt_har_lstm__torch_fp16.xml"
    if not xml.is_file():
        pytest.skip(f"{xml} not found (set MLI_SHARED)")
    model, plain = read_model(xml), read_model(xml)
    assert model._program._shape_steps
    plain._program._shape_steps = []          # every step, in graph order, each call
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 128, 9), (3, 20, 9),
                                                             (1, 128, 9), (2, 1, 9))]
    for x in xs:
        saved = x.copy()
        got, ref = model({"x": x}), plain({"x": x})
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k])
            assert got[k].flags.writeable
        np.testing.assert_array_equal(x, saved)
    assert len(model._program._shape_cache) == 3


def test_c_runner_refuses_misaligned_arrays_and_the_ops_align_them():
    """An IR's weights can start at any byte of its .bin: the ops hand the C
    runner aligned copies, and the bridge refuses a misaligned array rather
    than load floats from it (undefined in C; UBSan found one)."""
    from mli import _core
    from mli.ir.ops.recurrent import _c_array
    raw = np.frombuffer(bytearray(4 * 8 + 1), np.float32, 8, 1).reshape(1, 1, 8)
    assert raw.ctypes.data % 4 and _c_array(raw).ctypes.data % 4 == 0
    z = np.zeros
    with pytest.raises(ValueError, match="x: not aligned"):
        _core.float_rnn_sequence("rnn", "tanh", False, 0.0, [False], raw, z((1, 1, 2), np.float32), None,
                                 np.ones(1, np.int64), z((1, 2, 8), np.float32), z((1, 2, 2), np.float32),
                                 z((1, 2), np.float32), z((1, 1, 1, 2), np.float32), z((1, 1, 2), np.float32), None)

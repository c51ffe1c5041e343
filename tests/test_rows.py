"""Batched rows (mli.rows, mlipy_*_cell_rows_*): every row equal, bit for
bit, to a separate call of the per-row kernel, on every ISA path and in both
rounding modes, saturating and 40-bit-clamp data included; refusals."""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import mli
from mli import _core

KINDS = ("fx16", "fx8", "fx8w16d")
MODES = (mli.RNN_ONE_TO_ONE, mli.RNN_BATCH_TO_BATCH, mli.RNN_BATCH_TO_LAST)
ROUNDINGS = ("up", "convergent")
MLI_HOME = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))


def dtypes(kind):
    return (np.int8 if kind == "fx8" else np.int16), (np.int16 if kind == "fx16" else np.int8)


def full(dt):
    return np.iinfo(dt).min, np.iinfo(dt).max


@pytest.fixture(params=mli.supported_isas())
def isa(request):
    with mli.use_isa(request.param):
        yield request.param


@pytest.fixture(params=ROUNDINGS)
def rounding(request):
    with mli.rounding(request.param):
        yield request.param


class Case:
    """B rows of one cell call: stacked x [B, (T,) N], h [B, M], c [B, M]."""

    def __init__(self, kind, lstm, mode, *, B=5, N=7, M=9, T=6, act=mli.RNN_ACT_TANH, seed=0, x=None, h=None, c=None,
                 w=None, b=None, frac=(6, 7, 5, None, 3)):
        rng = np.random.default_rng(seed)
        dt, wt = dtypes(kind)
        f_in, f_h, f_c, f_w, f_b = frac
        f_w = (15 if wt == np.int16 else 7) if f_w is None else f_w
        wshape = (4, M, N + M) if lstm else (M, N + M)
        bshape = (4, M) if lstm else (M,)
        xshape = (B, N) if mode == mli.RNN_ONE_TO_ONE else (B, T, N)
        ri = lambda lim, shape: rng.integers(lim[0], lim[1] + 1, shape)  # noqa: E731
        self.kind, self.lstm, self.mode = kind, lstm, mode
        self.w = mli.Tensor((ri(full(wt), wshape) if w is None else w).astype(wt), f_w)
        self.b = mli.Tensor((ri(full(wt), bshape) if b is None else b).astype(wt), f_b)
        self.x = mli.Tensor((ri(full(dt), xshape) if x is None else x).astype(dt), f_in)
        self.h = mli.Tensor((ri(full(dt), (B, M)) if h is None else h).astype(dt), f_h)
        self.c = mli.Tensor((ri(full(dt), (B, M)) if c is None else c).astype(dt), f_c)
        self.cfg = mli.RnnCellConfig(mode=mode, act=act)

    def rows(self, **kw):
        if self.lstm:
            return getattr(mli, f"lstm_cell_rows_{self.kind}")(self.x, self.h, self.w, self.b, self.cfg, self.c, **kw)
        return getattr(mli, f"basic_rnn_cell_rows_{self.kind}")(self.x, self.h, self.w, self.b, self.cfg, **kw)

    def separate(self, r):
        xr = mli.Tensor(self.x.numpy()[r], self.x.frac_bits)
        hr = mli.Tensor(self.h.numpy()[r] if self.h.rank == 2 else self.h.numpy(), self.h.frac_bits)
        if self.lstm:
            cr = mli.Tensor(self.c.numpy()[r] if self.c.rank == 2 else self.c.numpy(), self.c.frac_bits)
            return getattr(mli, f"lstm_cell_{self.kind}")(xr, hr, self.w, self.b, self.cfg, cr)
        return getattr(mli, f"basic_rnn_cell_{self.kind}")(xr, hr, self.w, self.b, self.cfg), None

    def check(self, **kw):
        got = self.rows(**kw)
        out, cell = got if self.lstm else (got, None)
        for r in range(self.x.shape[0]):
            o, c = self.separate(r)
            assert np.array_equal(out.numpy()[r], o.numpy()), f"out of row {r}"
            assert out.frac_bits == o.frac_bits and out.el_type == o.el_type
            if self.lstm:
                assert np.array_equal(cell.numpy()[r], c.numpy()), f"cell of row {r}"
        return got


def snapshot(*tensors):
    return [t.numpy().copy() for t in tensors]


# ------------------------------------------------------------------ equality
@pytest.mark.parametrize("lstm", [True, False], ids=["lstm", "rnn"])
@pytest.mark.parametrize("mode", MODES, ids=["one_to_one", "batch_to_batch", "batch_to_last"])
@pytest.mark.parametrize("kind", KINDS)
def test_rows_equal_separate_calls(isa, rounding, kind, mode, lstm):
    for act in (mli.RNN_ACT_TANH, mli.RNN_ACT_SIGM, mli.RNN_ACT_NONE):
        case = Case(kind, lstm, mode, act=act, seed=int(act))
        before = snapshot(case.x, case.h, case.c, case.w, case.b)
        case.check()
        for a, t in zip(before, (case.x, case.h, case.c, case.w, case.b)):
            assert np.array_equal(a, t.numpy())  # inputs unchanged
    # HAR-like shape (even sizes: rows read in place), more rows than one block of 64
    Case(kind, lstm, mode, B=67, N=32, M=32, T=5, seed=9, frac=(12, 15, 12, None, 15)).check()
    # M a multiple of 16 over >= 8 steps: on AVX-512 VNNI the LSTM rows run one
    # after another through the kernel's fused step (packed once for all rows)
    Case(kind, lstm, mode, B=5, N=24, M=32, T=9, seed=11, frac=(12, 15, 12, None, 15)).check()


@pytest.mark.parametrize("lstm", [True, False], ids=["lstm", "rnn"])
@pytest.mark.parametrize("kind", KINDS)
def test_saturating_and_40_bit_clamp_rows(isa, rounding, kind, lstm):
    """Full-scale weights, bias and data with frac bits that push the bias
    term and the partial sums to the accumulator's limit; rows mixed so that
    only some of them saturate (zero, full-scale, random, one-signed)."""
    dt, wt = dtypes(kind)
    lo, hi = full(dt)
    wl, wh = full(wt)
    B, N, M, T = 9, 40, 24, 4
    rng = np.random.default_rng(3)
    x = rng.integers(lo, hi + 1, (B, T, N))
    x[0] = 0
    x[1] = hi
    x[2] = lo
    x[3] = rng.choice([lo, hi], (T, N))
    x[4] //= 256
    h = rng.choice([lo, hi], (B, M))
    h[0] = 0
    wshape = (4, M, N + M) if lstm else (M, N + M)
    # -32767 keeps every int16 weight pair within the direct form's chunks
    # (the rows' shared pass); full-range pairs take the split form (below)
    w = rng.choice([wl + (wt == np.int16), wh], wshape)
    w[..., ::3] = wh  # one-signed runs: partial sums grow in one direction
    b = rng.choice([wl, wh], wshape[:-1])
    bits = 8 * np.dtype(dt).itemsize - 1
    for frac in ((bits, 0, 2, None, 0), (bits, bits, 3, None, 0), (0, bits, 1, None, 0), (3, 9, bits, None, 5)):
        for mode in (mli.RNN_BATCH_TO_BATCH, mli.RNN_BATCH_TO_LAST):
            for act in (mli.RNN_ACT_TANH, mli.RNN_ACT_NONE):
                Case(kind, lstm, mode, B=B, N=N, M=M, T=T, act=act, x=x, h=h, w=w, b=b, frac=frac).check()
    w[..., 0] = wl  # now int16 pairs of -32768: the rows run one by one
    Case(kind, lstm, mli.RNN_BATCH_TO_BATCH, B=B, N=N, M=M, T=T, x=x, h=h, w=w, b=b, frac=(bits, 0, 2, None, 0)).check()


@pytest.mark.parametrize("lstm", [True, False], ids=["lstm", "rnn"])
def test_fx16_weights_only_the_split_form_takes(isa, rounding, lstm):
    """Pairs of -32768 weights: no direct form, the rows run one by one."""
    M, N = 8, 6
    w = np.full((4, M, N + M) if lstm else (M, N + M), -32768)
    w[..., 1::4] = 32767
    Case("fx16", lstm, mli.RNN_BATCH_TO_BATCH, B=4, N=N, M=M, w=w).check()


@pytest.mark.parametrize("lstm", [True, False], ids=["lstm", "rnn"])
@pytest.mark.parametrize("kind", KINDS)
def test_one_row(isa, kind, lstm):
    Case(kind, lstm, mli.RNN_BATCH_TO_BATCH, B=1).check()
    Case(kind, lstm, mli.RNN_ONE_TO_ONE, B=1, N=300, M=40).check()


def _rnn_rows_data(kind, B, T, N, M, w_lim, seed):
    """Rows whose data reach every form of the batched basic RNN step (AVX-512
    VNNI, K a multiple of 16): row r's inputs and state scaled down by
    r mod 4 bytes of the type (zero, small, one chunk, full scale), so that
    one block of rows mixes int32 start values, whole rows, rows cut over
    their bytes, and states small enough for one int32 sum with others not."""
    rng = np.random.default_rng(seed)
    dt, wt = dtypes(kind)
    lo, hi = full(dt)
    x = rng.integers(lo, hi + 1, (B, T, N))
    h = rng.integers(lo, hi + 1, (B, M))
    for r in range(B):
        x[r] >>= (3 - r % 4) * (4 if dt == np.int16 else 2)
        h[r] >>= (3 - (r + 1) % 4) * (4 if dt == np.int16 else 2)
    w = rng.integers(-w_lim, w_lim + 1, (M, N + M))
    b = rng.integers(*full(wt), (M,))
    return x, h, w, b


@pytest.mark.parametrize("kind", KINDS)
def test_rnn_rows_batched_step_forms(isa, rounding, kind):
    """The basic RNN rows of K = 16, 32 and 48 (whole groups, one group left
    over), row counts that leave 4, 2 and 1 rows of a block of 8, step
    counts past the 32 whose start values are made ahead, an odd input
    length (padded to pairs), and weights from small (every state sum one
    int32 chunk) to full scale (sums over the state's and the input's
    bytes); every row equal to its own kernel call."""
    dt, wt = dtypes(kind)
    wmax = full(wt)[1]
    f = (12, 15, 12, None, 15) if dt == np.int16 else (5, 7, 5, None, 7)
    for B, T, N, M, w_lim in ((15, 35, 32, 32, wmax), (7, 33, 20, 48, wmax // 64), (13, 9, 11, 16, wmax),
                              (3, 70, 32, 32, 40)):
        for mode in (mli.RNN_BATCH_TO_BATCH, mli.RNN_BATCH_TO_LAST):
            for act in (mli.RNN_ACT_TANH, mli.RNN_ACT_SIGM, mli.RNN_ACT_NONE):
                x, h, w, b = _rnn_rows_data(kind, B, T, N, M, w_lim, seed=B + T + int(act))
                Case(kind, False, mode, B=B, N=N, M=M, T=T, act=act, x=x, h=h, w=w, b=b, frac=f).check()
    x, h, w, b = _rnn_rows_data(kind, 9, 1, 24, 32, wmax, seed=4)
    Case(kind, False, mli.RNN_ONE_TO_ONE, B=9, N=24, M=32, act=mli.RNN_ACT_TANH, x=x[:, 0], h=h, w=w, b=b,
         frac=f).check()
    # one state [M] shared by every row (read in place by all of them)
    x, h, w, b = _rnn_rows_data(kind, 10, 4, 16, 32, wmax, seed=5)
    Case(kind, False, mli.RNN_BATCH_TO_BATCH, B=10, N=16, M=32, T=4, x=x, h=h[3], w=w, b=b, frac=f).check()


@pytest.mark.parametrize("kind", KINDS)
def test_rnn_rows_batched_step_bounds(isa, rounding, kind):
    """The batched basic RNN step where its shortcuts stop: a state shift
    below 8 (no sums over bytes: rows whose state is not one int32 chunk
    take the AVX2 step beside the batched others), inputs so long that their
    sums over bytes could pass int32 (the AVX2 start values), and weights and
    data whose sums end in ties (rounding to even), all against separate calls."""
    dt, wt = dtypes(kind)
    wmax = full(wt)[1]
    bits = 8 * np.dtype(dt).itemsize - 1
    # out_shift = f_h + f_w - f_d = 0 + 15 - 12 = 3 (fx16)
    x, h, w, b = _rnn_rows_data(kind, 11, 12, 16, 32, wmax // 4, seed=21)
    Case(kind, False, mli.RNN_BATCH_TO_BATCH, B=11, N=16, M=32, T=12, x=x, h=h, w=w, b=b,
         frac=(6, 0, 3, None, 0)).check()
    # N = 640: 255 * (a row's input sum of |w|) >= 2^31 with full-scale weights
    x, h, w, b = _rnn_rows_data(kind, 5, 6, 640, 16, wmax, seed=22)
    Case(kind, False, mli.RNN_BATCH_TO_BATCH, B=5, N=640, M=16, T=6, x=x, h=h, w=w, b=b,
         frac=(bits, bits, 3, None, 0)).check()
    # ties: weights multiples of 2^10 (2^4 for 8-bit), data multiples of 2^6 (2^2)
    x, h, w, b = _rnn_rows_data(kind, 6, 5, 16, 32, wmax, seed=23)
    sw, sd = (10, 6) if wt == np.int16 else (4, 2)
    sd = sd if dt == np.int16 else 2
    w, x, h = (w >> sw) << sw, (x >> sd) << sd, (h >> sd) << sd
    for act in (mli.RNN_ACT_TANH, mli.RNN_ACT_NONE):
        Case(kind, False, mli.RNN_BATCH_TO_BATCH, B=6, N=16, M=32, T=5, act=act, x=x, h=h, w=w, b=b,
             frac=(bits - 3, bits, bits - 3, None, bits)).check()


def test_rnn_rows_one_int32_sum_boundary(isa, rounding):
    """fx16 at the bounds of the batched step's int32 sums: every weight
    -32767 (a row's sum of |w| 32 * 32767 over each part) and data all -m,
    so that a sum is exactly m * 1048544: one int32 for m <= 2048, past 2^31
    for m = 2049 (read as one int32 sum it would wrap), and the input's
    start values from one int32 with the rounding offset only up to m = 2047."""
    N = M = 32
    w = np.full((M, N + M), -32767)
    b = np.zeros(M, np.int64)
    rows = [(2047, 0), (2048, 0), (2049, 0), (0, 2048), (0, 2049), (2049, 2049), (2048, 2049), (1, 2048)]
    for mode, T in ((mli.RNN_ONE_TO_ONE, 1), (mli.RNN_BATCH_TO_BATCH, 3)):
        x = np.stack([np.full((T, N), -mx) for mx, _ in rows])
        x = x[:, 0] if mode == mli.RNN_ONE_TO_ONE else x
        h = np.stack([np.full(M, -mh) for _, mh in rows])
        for act in (mli.RNN_ACT_TANH, mli.RNN_ACT_SIGM):
            Case("fx16", False, mode, B=len(rows), N=N, M=M, T=T, act=act, x=x, h=h, w=w, b=b,
                 frac=(15, 15, 12, 15, 0)).check()
    # M = 272: the state's low bytes (255 each) times the weights pass 2^31
    # (255 * 272 * 32767), so no sums over bytes: the AVX2 step per row
    M = 272
    w = np.full((M, 16 + M), -32767)
    h = np.array([np.full(M, 255), np.full(M, 127), np.full(M, -255)])
    x = np.full((3, 2, 16), 255)
    Case("fx16", False, mli.RNN_BATCH_TO_BATCH, B=3, N=16, M=M, T=2, x=x, h=h, w=w, b=np.zeros(M, np.int64),
         frac=(15, 15, 12, 15, 0)).check()


def test_rnn_rows_stacked_weights_whole_groups(isa, rounding):
    """One-to-one with stacked weights [L, M, N+M] whose L*M outputs are
    whole groups of 16 while M is odd (the state padded to pairs) or not."""
    rng = np.random.default_rng(6)
    for kind in KINDS:
        dt, wt = dtypes(kind)
        for L, M in ((16, 3), (2, 8)):
            N, B = 10, 9
            w = mli.Tensor(rng.integers(*full(wt), (L, M, N + M)).astype(wt), 7)
            b = mli.Tensor(rng.integers(*full(wt), (L, M)).astype(wt), 4)
            x = mli.Tensor(rng.integers(*full(dt), (B, N)).astype(dt), 5)
            h = mli.Tensor(rng.integers(*full(dt), (B, M)).astype(dt), 6)
            cfg = mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=mli.RNN_ACT_TANH)
            out = getattr(mli, f"basic_rnn_cell_rows_{kind}")(x, h, w, b, cfg)
            for r in range(B):
                o = getattr(mli, f"basic_rnn_cell_{kind}")(mli.Tensor(x.numpy()[r], 5), mli.Tensor(h.numpy()[r], 6),
                                                           w, b, cfg)
                assert np.array_equal(out.numpy()[r], o.numpy().reshape(-1)), (kind, L, M, r)


def test_shared_state_lists_and_cell_out(isa):
    case = Case("fx16", True, mli.RNN_BATCH_TO_BATCH, B=4)
    h0, c0 = case.h.numpy()[0].copy(), case.c.numpy()[0].copy()
    case.h = mli.Tensor(np.tile(h0, (4, 1)), case.h.frac_bits)
    case.c = mli.Tensor(np.tile(c0, (4, 1)), case.c.frac_bits)
    out, cell = case.rows()
    shared = mli.lstm_cell_rows_fx16(case.x, mli.Tensor(h0, case.h.frac_bits), case.w, case.b, case.cfg,
                                     mli.Tensor(c0, case.c.frac_bits))
    assert np.array_equal(shared[0].numpy(), out.numpy()) and np.array_equal(shared[1].numpy(), cell.numpy())
    xs = [mli.Tensor(r.copy(), case.x.frac_bits) for r in case.x.numpy()]
    hs = [mli.Tensor(r.copy(), case.h.frac_bits) for r in case.h.numpy()]
    listed = mli.lstm_cell_rows(xs, hs, case.w, case.b, case.cfg, case.c)
    assert np.array_equal(listed[0].numpy(), out.numpy()) and np.array_equal(listed[1].numpy(), cell.numpy())
    co = mli.Tensor(np.zeros((4, 9), np.int16), 0)
    o2, c2 = case.rows(cell_out=co)
    assert c2 is co and np.array_equal(co.numpy(), cell.numpy()) and co.frac_bits == case.c.frac_bits
    assert np.array_equal(o2.numpy(), out.numpy())
    o3, c3 = case.rows(cell_out=case.c)  # in place
    assert c3 is case.c and np.array_equal(case.c.numpy(), cell.numpy())


def test_basic_rnn_stacked_weights_one_to_one(isa):
    """One-to-one with weights [L, M, N+M]: K = L*M outputs per row."""
    rng = np.random.default_rng(5)
    L, M, N, B = 3, 5, 4, 6
    w = mli.Tensor(rng.integers(-32768, 32768, (L, M, N + M)).astype(np.int16), 15)
    b = mli.Tensor(rng.integers(-32768, 32768, (L, M)).astype(np.int16), 4)
    x = mli.Tensor(rng.integers(-32768, 32768, (B, N)).astype(np.int16), 9)
    h = mli.Tensor(rng.integers(-32768, 32768, (B, M)).astype(np.int16), 11)
    cfg = mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=mli.RNN_ACT_SIGM)
    out = mli.basic_rnn_cell_rows_fx16(x, h, w, b, cfg)
    assert out.shape == (B, L * M)
    for r in range(B):
        o = mli.basic_rnn_cell_fx16(mli.Tensor(x.numpy()[r], 9), mli.Tensor(h.numpy()[r], 11), w, b, cfg)
        assert np.array_equal(out.numpy()[r], o.numpy().reshape(-1))


# ------------------------------------------------------------------ refusals
def test_zero_and_huge_row_counts_refused():
    case = Case("fx16", True, mli.RNN_ONE_TO_ONE)
    empty = mli.Tensor(np.zeros((0, 7), np.int16), 6)
    with pytest.raises(mli.MliArgumentError):
        mli.lstm_cell_rows_fx16(empty, case.h, case.w, case.b, case.cfg, case.c)
    with pytest.raises(mli.MliArgumentError):
        mli.lstm_cell_rows_fx16([], case.h, case.w, case.b, case.cfg, case.c)
    huge = mli.Tensor.raw(bytearray(64), shape=(2 ** 31, 7), el_type=mli.EL_FX_16, frac_bits=6)
    with pytest.raises(mli.MliArgumentError):
        mli.lstm_cell_rows_fx16(huge, case.h, case.w, case.b, case.cfg, case.c)
    near = mli.Tensor.raw(bytearray(64), shape=(2 ** 31 - 1, 7), el_type=mli.EL_FX_16, frac_bits=6)
    with pytest.raises(mli.MliNotEnoughMemError):  # refused before any output is allocated
        mli.lstm_cell_rows_fx16(near, case.h, case.w, case.b, case.cfg, case.c)
    with pytest.raises(_core.BridgeError):
        _core.cell_rows(True, 1, 2 ** 31, case.x, case.h, True, case.w, case.b, 0, 1, None, case.c, case.c)


def test_outputs_aliasing_inputs_refused():
    case = Case("fx16", True, mli.RNN_BATCH_TO_LAST, B=3, N=9, M=9)
    h_alias = mli.Tensor(case.h.numpy(), case.h.frac_bits)  # out over prev_out's memory
    before = snapshot(case.x, case.h, case.c)
    with pytest.raises(mli.MliIncompatibleTensorsError) as e:
        case.rows(out=h_alias)
    assert e.value.mlipy_safety and e.value.argument == "out" and "prev_out" in str(e.value)
    x1 = Case("fx16", False, mli.RNN_ONE_TO_ONE, B=3, N=9, M=9)
    with pytest.raises(mli.MliIncompatibleTensorsError):
        x1.rows(out=mli.Tensor(x1.x.numpy(), 0))
    out = mli.Tensor(np.zeros((3, 9), np.int16), 0)
    with pytest.raises(ValueError):  # cell_out over out
        case.rows(out=out, cell_out=out)
    for a, t in zip(before, (case.x, case.h, case.c)):
        assert np.array_equal(a, t.numpy())


def test_bad_row_named_and_nothing_written():
    case = Case("fx16", True, mli.RNN_BATCH_TO_BATCH, B=5)
    xs = [mli.Tensor(r.copy(), case.x.frac_bits) for r in case.x.numpy()]
    xs[3] = mli.Tensor(np.zeros((6, 8), np.int16), case.x.frac_bits)  # N + M no longer the weights' width
    out = mli.Tensor(np.full((5, 6, 9), 1234, np.int16), 0)
    co = mli.Tensor(np.full((5, 9), 77, np.int16), 0)
    with pytest.raises(mli.MliShapeMismatchError) as e:
        mli.lstm_cell_rows_fx16(xs, case.h, case.w, case.b, case.cfg, case.c, out=out, cell_out=co)
    assert e.value.row == 3 and "of row 3" in str(e.value) and e.value.argument == "weights"
    assert (out.numpy() == 1234).all() and (co.numpy() == 77).all()
    xs[3] = mli.Tensor(case.x.numpy()[3].copy(), case.x.frac_bits + 1)
    with pytest.raises(mli.MliIncompatibleTensorsError) as e:
        mli.lstm_cell_rows_fx16(xs, case.h, case.w, case.b, case.cfg, case.c, out=out)
    assert e.value.row == 3 and e.value.field == "frac_bits"
    xs[3] = mli.Tensor(np.zeros((5, 7), np.int16), case.x.frac_bits)  # fewer steps than row 0
    with pytest.raises(mli.MliIncompatibleTensorsError) as e:
        mli.basic_rnn_cell_rows_fx16(xs, case.h, Case("fx16", False, 1).w, Case("fx16", False, 1).b, case.cfg)
    assert e.value.row == 3 and e.value.field == "shape[0]"
    xs[3] = mli.Tensor(case.x.numpy()[3].astype(np.int8), case.x.frac_bits)  # wrong element type
    with pytest.raises(mli.MliTypeMismatchError) as e:
        mli.lstm_cell_rows_fx16(xs, case.h, case.w, case.b, case.cfg, case.c)
    assert e.value.row == 3
    assert (out.numpy() == 1234).all()


def test_modes_outside_the_three_refused():
    case = Case("fx8", True, 7)
    with pytest.raises(mli.MliBadFuncCfgError):
        case.rows()
    rnn = Case("fx8", False, 7)
    with pytest.raises(mli.MliBadFuncCfgError):
        rnn.rows()


# the LSTM through the shared-weights engine; the basic RNN through the
# batched AVX-512 step where the machine has it (K = 256, full-scale weights)
CTRL_C_CALLS = {
    "lstm": """
        B, T = 8, 3 * 10**6
        x = mli.Tensor(np.full((B, T, 2), 37, np.int8), 7)
        z = lambda *s: mli.Tensor(np.full(s, 3, np.int8), 6)
        h, w, b, c = mli.Tensor(np.zeros(2, np.int8), 7), z(4, 2, 4), z(4, 2), z(2)
        cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH)
        call = lambda: mli.lstm_cell_rows_fx8(x, h, w, b, cfg, c)
    """,
    "rnn": """
        B, T, K = 8, 10**6, 256
        x = mli.Tensor(np.full((B, T, 2), 3000, np.int16), 12)
        h = mli.Tensor(np.full(K, 20000, np.int16), 15)
        w = mli.Tensor(np.full((K, K + 2), 30000, np.int16), 15)
        b = mli.Tensor(np.zeros(K, np.int16), 0)
        cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST, act=mli.RNN_ACT_TANH)
        call = lambda: mli.basic_rnn_cell_rows_fx16(x, h, w, b, cfg)
    """,
}


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="POSIX signals")
@pytest.mark.parametrize("cell", sorted(CTRL_C_CALLS))
def test_ctrl_c_interrupts_rows(cell):
    code = textwrap.dedent("""
        import os, signal, threading, time, numpy as np, mli
    """) + textwrap.dedent(CTRL_C_CALLS[cell]) + textwrap.dedent("""
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.time()
        try:
            call()
            print("finished")
        except KeyboardInterrupt:
            print(f"{time.time() - t0 - 0.5:.3f}")
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([MLI_HOME] + [p for p in os.environ.get("PYTHONPATH", "")
                                                                     .split(os.pathsep) if p])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tempfile.gettempdir())
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() != "finished"
    assert float(p.stdout) < 0.5

"""Mode equivalences: batch-to-batch equals one-to-one stepped over time;
batch-to-last equals the last row; the LSTM steps compose to the kernel."""
import numpy as np
import pytest

import mli
from mli import reference as R

KINDS = ["fx8", "fx16", "fx8w16d"]


def setup(kind, T=7, N=5, M=6, seed=3, gates=1):
    rng = np.random.default_rng(seed)
    dt = np.int8 if kind == "fx8" else np.int16
    wt = np.int16 if kind == "fx16" else np.int8
    lim_d, lim_w = np.iinfo(dt).max // 2, np.iinfo(wt).max // 2
    x = rng.integers(-lim_d, lim_d, (T, N)).astype(dt)
    h0 = rng.integers(-lim_d, lim_d, M).astype(dt)
    wshape = (4, M, N + M) if gates == 4 else (M, N + M)
    w = rng.integers(-lim_w, lim_w, wshape).astype(wt)
    b = rng.integers(-lim_w, lim_w, wshape[:-1]).astype(wt)
    q = 7 if kind == "fx8" else 15
    fr = dict(fx8=(5, q, 6, 6), fx16=(12, q, 14, 13), fx8w16d=(12, q, 6, 6))[kind]
    return x, h0, w, b, fr


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("act", [0, 1, 2])
def test_rnn_batch_to_batch_is_one_to_one_stepped(kind, act):
    x, h0, w, b, (fi, fh, fw, fb) = setup(kind)
    fh_out = fh if act == 0 else (7 if kind == "fx8" else 15)
    rnn = getattr(mli, f"basic_rnn_cell_{kind}")
    seq = rnn(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w, fw), mli.Tensor(b, fb),
              mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH, act=act), out_frac_bits=fh).numpy()
    last = rnn(mli.Tensor(x, fi), mli.Tensor(h0, fh), mli.Tensor(w, fw), mli.Tensor(b, fb),
               mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_LAST, act=act), out_frac_bits=fh).numpy()
    # One-to-one steps: the shifts use the ORIGINAL state frac bits, so the
    # stepped state keeps prev_out's frac as the batch modes do.
    h = mli.Tensor(h0, fh)
    for t in range(len(x)):
        y = rnn(mli.Tensor(x[t], fi), h, mli.Tensor(w, fw), mli.Tensor(b, fb),
                mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=act), out_frac_bits=fh)
        np.testing.assert_array_equal(y.numpy(), seq[t])
        assert y.frac_bits == fh_out
        h = mli.Tensor(y.numpy().copy(), fh)
    np.testing.assert_array_equal(last, seq[-1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("act", [0, 1, 2])
def test_lstm_batch_to_batch_is_one_to_one_stepped(kind, act):
    x, h0, w, b, (fi, fh, fw, fb) = setup(kind, gates=4)
    fc = 11 if kind != "fx8" else 3
    c0 = np.zeros(len(h0), x.dtype)
    lstm = getattr(mli, f"lstm_cell_{kind}")
    args = lambda xx, hh: (mli.Tensor(xx, fi), hh, mli.Tensor(w, fw), mli.Tensor(b, fb))  # noqa: E731
    seq, c_seq = lstm(*args(x, mli.Tensor(h0, fh)), mli.RnnCellConfig(mode=1, act=act), mli.Tensor(c0, fc))
    last, c_last = lstm(*args(x, mli.Tensor(h0, fh)), mli.RnnCellConfig(mode=2, act=act), mli.Tensor(c0, fc))
    h, c = mli.Tensor(h0, fh), mli.Tensor(c0, fc)
    for t in range(len(x)):
        y, c = lstm(*args(x[t], h), mli.RnnCellConfig(mode=0, act=act), c)
        np.testing.assert_array_equal(y.numpy(), seq.numpy()[t])
        h = mli.Tensor(y.numpy().copy(), fh)
    np.testing.assert_array_equal(c.numpy(), c_seq.numpy())
    np.testing.assert_array_equal(last.numpy(), seq.numpy()[-1])
    np.testing.assert_array_equal(c_last.numpy(), c_seq.numpy())


@pytest.mark.parametrize("kind", KINDS)
def test_stacked_one_to_one_is_per_gate_dense(kind):
    """Stacked weights [L, M, N+M]: every slice is the plain cell on the same input and state."""
    x, h0, w, b, (fi, fh, fw, fb) = setup(kind, gates=4)
    rnn = getattr(mli, f"basic_rnn_cell_{kind}")
    cfg = mli.RnnCellConfig(mode=0, act=0)
    full = rnn(mli.Tensor(x[0], fi), mli.Tensor(h0, fh), mli.Tensor(w, fw), mli.Tensor(b, fb), cfg, out_frac_bits=9)
    assert full.shape == (4, len(h0))
    for g in range(4):
        part = rnn(mli.Tensor(x[0], fi), mli.Tensor(h0, fh), mli.Tensor(w[g], fw), mli.Tensor(b[g], fb), cfg,
                   out_frac_bits=9)
        np.testing.assert_array_equal(full.numpy()[g], part.numpy())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("act", [0, 1, 2])
def test_lstm_steps_compose(kind, act):
    """The exported steps (gates, cell update, hidden) give the kernel's step,
    and each equals the reference's step (so a mismatch points at a step)."""
    from mli import _core
    from mli.enums import VARIANT

    x, h0, w, b, (fi, fh, fw, fb) = setup(kind, gates=4)
    fc = 11 if kind != "fx8" else 3
    q = 7 if kind == "fx8" else 15
    f_ir = q - 3
    M = len(h0)
    rng = np.random.default_rng(5)
    c0 = rng.integers(-2000 if kind != "fx8" else -60, 2000 if kind != "fx8" else 60, M).astype(x.dtype)
    d = R.dense(kind, x[0], fi, w.reshape(4 * M, -1), fw, b.reshape(-1), fb, f_ir, state=h0, f_state=fh)
    gates = np.array(d, dtype=x.dtype)
    _core.lstm_gates(VARIANT[kind], gates, M, f_ir)
    ri, rg, rf, ro = R.lstm_gates(d, kind, f_ir)
    np.testing.assert_array_equal(gates, np.concatenate([ri, rg, rf, ro]))
    c = c0.copy()
    _core.lstm_cell_update(VARIANT[kind], gates, M, c, q - fc)
    np.testing.assert_array_equal(c, R.lstm_cell_update(ri, rg, rf, c0, fc, kind))
    h = np.zeros(M, x.dtype)
    mshift = fc + q - fh if act == 0 else q
    _core.lstm_hidden(VARIANT[kind], gates, M, c, fc, act, mshift, h)
    np.testing.assert_array_equal(h, R.lstm_hidden(c, fc, ro, act, fh, kind)[0])
    y, c_k = getattr(mli, f"lstm_cell_{kind}")(mli.Tensor(x[0], fi), mli.Tensor(h0, fh), mli.Tensor(w, fw),
                                               mli.Tensor(b, fb), mli.RnnCellConfig(mode=0, act=act),
                                               mli.Tensor(c0, fc))
    np.testing.assert_array_equal(y.numpy(), h)
    np.testing.assert_array_equal(c_k.numpy(), c)

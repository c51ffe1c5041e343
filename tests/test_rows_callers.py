"""The callers of the batched-rows kernels (mli.rows) against the per-row
computation they replaced, bit for bit: KernelBody.run / run_sequence (a
TensorIterator stepping a body, fixed-point cells), the fixed-point sequence
ops (rows grouped by length), the HAR example's test set (``mli har
--accuracy``) and the crosscheck data sets.  Odd cases: one row, zero rows,
unequal sequence lengths, the reverse direction, saturating rows, act NONE."""
import json
import os
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import mli
from mli.fixed_point.backends import mli1
from mli.fixed_point.registry import converter_for
from mli.graph import BackEdge, ConcatOutput, KernelBody, LastIterationOutput, MergedInput, SlicedInput, TensorIterator

KINDS = ("fx16", "fx8", "fx8w16d")
N, M = 5, 4


def make_body(cell, kind, seed=0, scale=1.0, act=mli.RNN_ACT_TANH):
    rng = np.random.default_rng(seed)
    in_frac = 5 if kind == "fx8" else 12
    if cell == "lstm":
        return KernelBody.from_float("lstm", rng.normal(0, .5 * scale, (4, M, N + M)), rng.normal(0, .3, (4, M)),
                                     kind=kind, in_frac=in_frac, cell_frac=5 if kind == "fx8" else 12)
    kw = {"state_frac": 4 if kind == "fx8" else 11} if act == mli.RNN_ACT_NONE else {}
    return KernelBody.from_float("rnn", rng.normal(0, .5 * scale, (M, N + M)), rng.normal(0, .3, M), kind=kind,
                                 in_frac=in_frac, act=act, **kw)


def directions(layer):
    return converter_for(layer.type).directions(layer)


def mli1_step(layer, bodies):
    """The fixed-point step of ``layer`` (a cell or sequence op stand-in) on the MLI 1.1
    backend, ``bodies`` its planned cells (one per direction)."""
    conv, qcells = converter_for(layer.type), [SimpleNamespace(body=b) for b in bodies]
    backend = mli1.Mli1Backend("fx16")           # the kind is the bodies'
    if hasattr(conv, "directions"):
        return backend.sequence(conv, layer, qcells)
    return backend.cell(conv, layer, qcells[0])


BODIES = [("lstm", mli.RNN_ACT_TANH), ("rnn", mli.RNN_ACT_TANH), ("rnn", mli.RNN_ACT_NONE)]
BODY_IDS = ["lstm", "rnn", "rnn-act-none"]


def per_row(body, x_rows, h_rows, c_rows, mode):
    """The per-row computation KernelBody did before batched rows: one MLI
    call per row (x_rows [B, N] one-to-one or [B, T, N] batch-to-batch)."""
    fn = getattr(mli, body._fname)
    cfg = mli.RnnCellConfig(mode=mode, act=body.act)
    ys, cs = [], []
    for r in range(len(h_rows)):
        xt = mli.Tensor(np.ascontiguousarray(x_rows[r]), body.in_frac)
        ht = mli.Tensor(np.ascontiguousarray(h_rows[r]), body.state_frac)
        if body.cell == "lstm":
            y, c = fn(xt, ht, body.weights, body.bias, cfg, mli.Tensor(np.ascontiguousarray(c_rows[r]),
                                                                        body.cell_frac))
            cs.append(c.numpy().copy())
        else:
            kw = {"out_frac_bits": body.out_frac} if body.act == mli.RNN_ACT_NONE else {}
            y = fn(xt, ht, body.weights, body.bias, cfg, **kw)
        ys.append(y.numpy().copy())
    return ys, cs


def old_run(body, x, h, c=None):
    """KernelBody.run as the per-row loop."""
    B = h.size // M
    ys, cs = per_row(body, x.reshape(B, N), h.reshape(B, M), None if c is None else c.reshape(B, M),
                     mli.RNN_ONE_TO_ONE)
    y = np.array(ys, body.dtype).reshape(B, M)
    out = (y.reshape(x.shape[:-1] + (M,)), y.reshape(h.shape))
    return out + (np.array(cs, body.dtype).reshape(h.shape),) if c is not None else out


def old_run_sequence(body, x, h0, c0=None):
    """KernelBody.run_sequence as one batch-to-batch call per row."""
    T = x.shape[0]
    B = h0.size // M
    xb = x.reshape(T, B, N)
    y = np.empty((T, B, M), body.dtype)
    c = None if c0 is None else c0.reshape(B, M).copy()
    if T:
        ys, cs = per_row(body, xb.transpose(1, 0, 2), h0.reshape(B, M), c, mli.RNN_BATCH_TO_BATCH)
        for r in range(B):
            y[:, r] = ys[r].reshape(T, M)
            if c is not None:
                c[r] = cs[r]
        h = y[-1].copy()
    else:
        h = h0.reshape(B, M).copy()
    out = (y.reshape((T,) + x.shape[1:-1] + (M,)), h.reshape(h0.shape))
    return out + (c.reshape(h0.shape),) if c0 is not None else out


def same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(u, v)


def state(body, rng, shape, amp):
    args = [body.quantize(rng.uniform(-.9, .9, shape), "h")]
    if body.cell == "lstm":
        args.append(body.quantize(rng.uniform(-amp, amp, shape), "c"))
    return args


# --------------------------------------------------------------------------- KernelBody
@pytest.mark.parametrize("amp", [1.5, 60.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("B", [0, 1, 6])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell, act", BODIES, ids=BODY_IDS)
def test_run_is_the_per_row_loop(cell, act, kind, B, amp):
    body = make_body(cell, kind, act=act, scale=4.0 if amp > 2 else 1.0)
    rng = np.random.default_rng(B)
    x = body.quantize(rng.uniform(-amp, amp, (B, N)), "x")
    st = state(body, rng, (B, M), amp)
    before = [a.copy() for a in (x, *st)]
    same(body.run([x, *st]), old_run(body, x, *st))
    same([x, *st], before)                                   # inputs untouched


def test_run_rows_in_any_layout():
    """x [2, 3, N] with h [6, M] (rows of x and h matched in order) and a single row [N] / [M]."""
    body = make_body("lstm", "fx16", seed=3)
    rng = np.random.default_rng(3)
    x = body.quantize(rng.uniform(-2, 2, (2, 3, N)), "x")
    st = state(body, rng, (6, M), 2)
    same(body.run([x, *st]), old_run(body, x, *st))
    same(body.run([x[0, 0], st[0][0], st[1][0]]), old_run(body, x[0, 0], st[0][0], st[1][0]))


@pytest.mark.parametrize("amp", [1.5, 60.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("B, T", [(6, 9), (1, 9), (1, 1), (0, 5), (4, 0)])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell, act", BODIES, ids=BODY_IDS)
def test_run_sequence_is_one_call_per_row(cell, act, kind, B, T, amp):
    body = make_body(cell, kind, act=act, seed=1, scale=4.0 if amp > 2 else 1.0)
    rng = np.random.default_rng(T)
    x = body.quantize(rng.uniform(-amp, amp, (T, B, N)), "x")
    st = state(body, rng, (B, M), amp)
    before = [a.copy() for a in (x, *st)]
    same(body.run_sequence(x, *st), old_run_sequence(body, x, *st))
    same(body.run_sequence(x[::-1], *st), old_run_sequence(body, x[::-1], *st))   # reversed, strided
    if B == 1:                                               # x [T, N], h [M]
        one = [s[0] for s in st]
        same(body.run_sequence(x[:, 0], *one), old_run_sequence(body, x[:, 0], *one))
    same([x, *st], before)


@pytest.mark.parametrize("stride", [1, -1], ids=["fwd", "rev"])
@pytest.mark.parametrize("cell, act", BODIES, ids=BODY_IDS)
def test_stepped_tensor_iterator_is_the_per_row_loop(cell, act, stride):
    """A TI that is not fused steps KernelBody.run: each step one rows call,
    every value that of the per-row loop."""
    body = make_body(cell, "fx16", act=act, seed=2)
    body.fuse = False
    rng = np.random.default_rng(5)
    B, T = 5, 7
    x = body.quantize(rng.uniform(-2, 2, (B, T, N)), "x")
    st = state(body, rng, (B, M), 2)
    lstm = cell == "lstm"
    rng_ = dict(start=0, end=-1) if stride > 0 else dict(start=-1, end=0)
    ins = [SlicedInput(0, 0, 1, stride=stride, **rng_), MergedInput(1, 1)]
    outs = [ConcatOutput(0, 0, 1, stride=stride, **rng_), ConcatOutput(1, 1, 0, stride=B, part_size=B), LastIterationOutput(0, 2)]
    edges = [BackEdge(1, 1)]
    if lstm:
        ins.append(MergedInput(2, 2))
        outs.append(ConcatOutput(2, 3, 0, stride=B, part_size=B))
        edges.append(BackEdge(2, 2))
    ti = TensorIterator(body, ins, outs, edges)
    got = ti(x, *st)
    h, c = st[0], (st[1] if lstm else None)
    ys, hs, cs = [], [], []
    for t in (range(T) if stride > 0 else range(T - 1, -1, -1)):
        res = old_run(body, np.ascontiguousarray(x[:, t:t + 1]), h, c)
        ys.append(res[0])
        h = res[1]
        hs.append(h)
        if lstm:
            c = res[2]
            cs.append(c)
    want = [np.concatenate(ys if stride > 0 else ys[::-1], 1), np.concatenate(hs, 0), ys[-1]]
    if lstm:
        want.append(np.concatenate(cs, 0))
    same(got, want)


def test_a_bad_row_raises_what_the_per_row_call_raises():
    for attempt in ("bias", "ir"):
        body = make_body("lstm", "fx16")
        rng = np.random.default_rng(0)
        x = body.quantize(rng.uniform(-1, 1, (3, N)), "x")
        st = state(body, rng, (3, M), 1)
        if attempt == "bias":
            body.bias.frac_bits = 40          # beyond in + weights frac: the kernel refuses
        else:
            body._one = mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=mli.RNN_ACT_TANH,
                                          ir=mli.Tensor(np.zeros(3, np.int16)))
        with pytest.raises(mli.MliError) as old:
            old_run(body, x, *st) if attempt == "bias" else \
                mli.lstm_cell_fx16(mli.Tensor(x[0], 12), mli.Tensor(st[0][0], 15), body.weights, body.bias,
                                   body._one, mli.Tensor(st[1][0], 12))
        with pytest.raises(type(old.value), match="of row 0"):
            body.run([x, *st])


# --------------------------------------------------------------------------- fixed point
def seq_layer(cell, direction):
    return SimpleNamespace(type="LSTMSequence" if cell == "lstm" else "RNNSequence", name="seq", id=0,
                           attrs={"direction": direction})


def old_sequence(layer, bodies, x, states, lens):
    """The MLI 1.1 backend's sequence step as it ran before: one batch-to-batch call per row over
    its valid steps (read backwards for the reverse direction)."""
    lstm = layer.type == "LSTMSequence"
    B_, T = x.shape[:2]
    finals = [np.array(v, copy=True) for v in states]
    ys = []
    for d, reverse in enumerate(directions(layer)):
        body = bodies[d]
        yq = np.zeros((B_, T, M), body.dtype)
        for b in range(B_):
            n = int(lens[b])
            if not n:
                continue
            t = np.arange(n)[::-1] if reverse else np.arange(n)
            xq = mli1.quantize(body, x[b], "x")[t]
            hq = mli1.quantize(body, states[0][b, d], "h")
            cq = mli1.quantize(body, states[1][b, d], "c") if lstm else None
            res = old_run_sequence(body, xq, hq, cq)
            yq[b, t] = res[0]
            finals[0][b, d] = body.dequantize(res[1], "h")
            if lstm:
                finals[1][b, d] = body.dequantize(res[2], "c")
        ys.append(mli1.dequantize(body, yq, "h", x.dtype))
    return (np.stack(ys, axis=1), *finals)


@pytest.mark.parametrize("lengths", ["full", "mixed", "one-row", "one-full-row", "zeros"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", ["lstm", "rnn"])
def test_fixed_point_sequence_groups_rows_by_length(cell, kind, direction, lengths):
    T = 8
    lens = {"full": [T] * 5, "mixed": [T, 3, T, 0, 3, 1, T, 5], "one-row": [6], "one-full-row": [T],
            "zeros": [0, 0]}[lengths]
    B_ = len(lens)
    layer = seq_layer(cell, direction)
    dirs = 2 if direction == "bidirectional" else 1
    bodies = [make_body(cell, kind, seed=10 + d, scale=3.0) for d in range(dirs)]
    fn = mli1_step(layer, bodies)
    rng = np.random.default_rng(B_)
    x = rng.uniform(-6, 6, (B_, T, N)).astype(np.float32)          # saturating inputs included
    states = [rng.uniform(-.9, .9, (B_, dirs, M)).astype(np.float32)]
    if cell == "lstm":
        states.append(rng.uniform(-3, 3, (B_, dirs, M)).astype(np.float32))
    lens_a = np.array(lens, np.int64)
    before = [a.copy() for a in (x, *states)]
    got = fn(x, *states, lens_a)
    same(got, old_sequence(layer, bodies, x, states, lens_a))
    same([x, *states], before)
    # every row of full length: the fast path (mli1.FastSequence) answers, with the same values
    fast = mli1.FastSequence(cell == "lstm", directions(layer), bodies)
    assert (fast.run((x, *states, lens_a)) is not None) == (lengths in ("full", "one-full-row"))
    if lengths in ("full", "one-full-row"):
        same(fast.run((x, *states, lens_a)), got)
        x_nan = x.copy()
        x_nan[-1, -1, -1] = np.nan                  # not finite: the general path (its error)
        assert fast.run((x_nan, *states, lens_a)) is None
        for k in range(len(states)):
            bad = [v.copy() for v in states]
            bad[k][0, -1, 0] = np.inf
            assert fast.run((x, *bad, lens_a)) is None


@pytest.mark.parametrize("B", [1, 7])
@pytest.mark.parametrize("cell", ["lstm", "rnn"])
def test_fixed_point_cell_is_the_per_row_loop(cell, B):
    """An LSTMCell / RNNCell op (e.g. in a TensorIterator body) on [B, N]: one rows call."""
    lstm = cell == "lstm"
    body = make_body(cell, "fx16", seed=4, scale=3.0)
    layer = SimpleNamespace(type="LSTMCell" if lstm else "RNNCell", name="cell", id=0, attrs={})
    fn = mli1_step(layer, [body])
    rng = np.random.default_rng(B)
    g = 4 if lstm else 1
    x = rng.uniform(-5, 5, (B, N)).astype(np.float32)
    h = rng.uniform(-.9, .9, (B, M)).astype(np.float32)
    W, R, Bs = (np.zeros((g * M, N), np.float32), np.zeros((g * M, M), np.float32), np.zeros(g * M, np.float32))
    if lstm:
        c = rng.uniform(-3, 3, (B, M)).astype(np.float32)
        got = fn(x, h, c, W, R, Bs)
        res = old_run(body, mli1.quantize(body, x, "x"), mli1.quantize(body, h, "h"), mli1.quantize(body, c, "c"))
        same(got, (mli1.dequantize(body, res[1], "h", x.dtype), mli1.dequantize(body, res[2], "c", x.dtype)))
    else:
        got = fn(x, h, W, R, Bs)
        res = old_run(body, mli1.quantize(body, x, "x"), mli1.quantize(body, h, "h"))
        same([got], [mli1.dequantize(body, res[1], "h", x.dtype)])




# --------------------------------------------------------------------------- GRU (mli.fixed_point.gru)
def make_gru(kind, lbr, clip, seed=0, scale=1.0):
    from mli.fixed_point.gru import GruCell
    rng = np.random.default_rng(seed)
    W, R = rng.normal(0, .6 * scale, (3 * M, N)), rng.normal(0, .6 * scale, (3 * M, M))
    Bs = rng.normal(0, .3, ((4 if lbr else 3) * M,))
    return GruCell(W, R, Bs, linear_before_reset=lbr, kind=kind, clip=clip, in_frac=5 if kind == "fx8" else 12)


def gru_per_row_step(cell, x, h):
    """GruCell.step as it was: each row its own _step."""
    out = np.empty_like(h)
    for b in range(h.shape[0]):
        out[b] = cell._step(mli.Tensor(np.ascontiguousarray(x[b]), cell.in_frac),
                            mli.Tensor(np.ascontiguousarray(h[b]), cell.state_frac)).numpy()
    return out


GRU_CASES = [(lbr, clip) for lbr in (False, True) for clip in (0.0, 0.8)]
GRU_IDS = [f"lbr{int(lbr)}-clip{clip}" for lbr, clip in GRU_CASES]


@pytest.mark.parametrize("amp", [1.5, 60.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lbr, clip", GRU_CASES, ids=GRU_IDS)
def test_gru_rows_are_the_per_row_steps(lbr, clip, kind, amp):
    cell = make_gru(kind, lbr, clip, scale=4.0 if amp > 2 else 1.0)
    rng = np.random.default_rng(7)
    B, T = 6, 9
    x = cell.quantize(rng.uniform(-amp, amp, (B, T, N)), "x")
    h = cell.quantize(rng.uniform(-.9, .9, (B, M)), "h")
    before = [x.copy(), h.copy()]
    np.testing.assert_array_equal(cell.step(x[:, 0], h), gru_per_row_step(cell, x[:, 0], h))
    y, h_last = cell.run_rows(x, h)
    for b in range(B):
        yb, hb = cell.run_sequence(x[b], h[b])
        np.testing.assert_array_equal(y[b], yb)
        np.testing.assert_array_equal(h_last[b], hb)
    for nb, nt in ((1, T), (0, T), (3, 0), (2, 1)):                # odd sizes
        y, h_last = cell.run_rows(x[:nb, :nt], h[:nb])
        assert y.shape == (nb, nt, M) and h_last.shape == (nb, M) and y.dtype == h_last.dtype == cell.dtype
        for b in range(nb):
            yb, hb = cell.run_sequence(x[b, :nt], h[b])
            np.testing.assert_array_equal(y[b], yb)
            np.testing.assert_array_equal(h_last[b], hb)
    same([x, h], before)
    with pytest.raises(ValueError, match="run_rows: x must be"):
        cell.run_rows(x[0], h)
    with pytest.raises(TypeError, match="x must be"):
        cell.run_rows(x.astype(np.float32), h)


def old_gru_sequence(layer, cells, x, h0, lens):
    """The MLI 1.1 backend's GRUSequence step as it ran before: each row stepped on its own."""
    B_, T = x.shape[:2]
    final = np.array(h0, copy=True)
    ys = []
    for d, reverse in enumerate(directions(layer)):
        cell = cells[d]
        yq = np.zeros((B_, T, M), cell.dtype)
        xq, hq = mli1.quantize(cell, x, "x"), mli1.quantize(cell, h0[:, d], "h")
        for b in range(B_):
            t = np.arange(lens[b])[::-1] if reverse else np.arange(lens[b])
            if not len(t):
                continue
            y, h = cell.run_sequence(xq[b, t], hq[b])
            yq[b, t] = y
            final[b, d] = cell.dequantize(h, "h")
        ys.append(mli1.dequantize(cell, yq, "h", x.dtype))
    return np.stack(ys, axis=1), final


@pytest.mark.parametrize("lengths", ["full", "mixed", "one-row"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lbr, clip", GRU_CASES, ids=GRU_IDS)
def test_fixed_point_gru_sequence_rows(lbr, clip, direction, lengths):
    T = 7
    lens = np.array({"full": [T] * 4, "mixed": [T, 2, T, 0, 2, 1, T], "one-row": [5]}[lengths], np.int64)
    layer = SimpleNamespace(type="GRUSequence", name="gru", id=0, attrs={"direction": direction})
    dirs = 2 if direction == "bidirectional" else 1
    cells = [make_gru("fx16", lbr, clip, seed=20 + d, scale=2.0) for d in range(dirs)]
    fn = mli1_step(layer, cells)
    rng = np.random.default_rng(len(lens))
    x = rng.uniform(-5, 5, (len(lens), T, N)).astype(np.float32)
    h0 = rng.uniform(-.9, .9, (len(lens), dirs, M)).astype(np.float32)
    same(fn(x, h0, lens), old_gru_sequence(layer, cells, x, h0, lens))


@pytest.mark.parametrize("lbr", [False, True])
def test_fixed_point_gru_cell_rows(lbr):
    cell = make_gru("fx8w16d", lbr, 0.0, seed=3)
    layer = SimpleNamespace(type="GRUCell", name="gru", id=0, attrs={"linear_before_reset": str(lbr).lower()})
    fn = mli1_step(layer, [cell])
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, (5, N)).astype(np.float32)
    h = rng.uniform(-.9, .9, (5, M)).astype(np.float32)
    W, R = np.zeros((3 * M, N), np.float32), np.zeros((3 * M, M), np.float32)
    Bs = np.zeros((4 if lbr else 3) * M, np.float32)
    want = gru_per_row_step(cell, mli1.quantize(cell, x, "x"), mli1.quantize(cell, h, "h"))
    same([fn(x, h, W, R, Bs)], [mli1.dequantize(cell, want, "h", x.dtype)])

OV_REAL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "vectors",
                       "ov_real")
OV_REAL = os.environ.get("MLI_SHARED") and os.path.join(os.environ["MLI_SHARED"], "vectors", "ov_real") or OV_REAL


@pytest.mark.skipif(not os.path.isdir(OV_REAL), reason="shared ov_real vectors not found (set MLI_SHARED)")
@pytest.mark.parametrize("name", ["pt_har_lstm__torch_fp16", "pt_lstm_bi_l2_bf__torch_fp16",
                                  "pt_kws_lstm__torch_ti_fp32"])
def test_fixed_point_model_batch_runs_the_rows_kernels(name, monkeypatch):
    """A converter's model with dynamic dims (shape-derived steps planned once per
    input shape) runs its MLI cells, not the float ops, and a batch of 64 rows goes
    through the batched-rows kernels: the same values as every step in graph order."""
    from mli import rows
    from mli.fixed_point import to_fixed_point
    from mli.ir import read_model
    with np.load(os.path.join(OV_REAL, name + ".npz")) as d:
        inputs = {k[4:]: d[k] for k in d.files if k.startswith("in__")}
    fpm = to_fixed_point(read_model(os.path.join(OV_REAL, name + ".xml")), inputs, "fx16")
    prog = fpm._model._program
    assert bool(prog._shape_steps) == ("_ti_" not in name)     # planned per input shape
    x = inputs["x"]
    xb = np.random.default_rng(0).standard_normal((64,) + x.shape[1:]).astype(x.dtype) * x.std()
    calls = []
    for fname in ("lstm_cell_rows_fx16", "basic_rnn_cell_rows_fx16"):
        def spy(*a, _fn=getattr(rows, fname), **kw):
            calls.append(a[0].shape[0])
            return _fn(*a, **kw)
        monkeypatch.setattr(rows, fname, spy)
    got = fpm({"x": xb})
    assert calls and set(calls) == {64}
    flt = fpm.float_model({"x": xb})
    assert all(not np.array_equal(got[k], flt[k]) for k in got)
    monkeypatch.setattr(prog, "_shape_steps", [])             # every step in graph order
    same(list(fpm({"x": xb}).values()), list(got.values()))

# --------------------------------------------------------------------------- HAR example
try:
    from mli.tools import har as _har
    HAR_DIR = _har.default_data_dir()
    HAS_HAR = os.path.isfile(os.path.join(HAR_DIR, "small_test_base", "tests.idx"))
except ImportError:  # pragma: no cover
    HAS_HAR = False
needs_har = pytest.mark.skipif(not HAS_HAR, reason="HAR data not found (set MLI_HAR_DATA)")


@pytest.fixture(scope="module")
def har_tests():
    from mli.io import read_idx
    return read_idx(os.path.join(HAR_DIR, "small_test_base", "tests.idx"))


def assert_row_of(rows_res, one_res, r):
    for k in _har.LAYERS:
        a, b = rows_res[k], one_res[k]
        assert a.frac_bits == b.frac_bits and a.dtype == b.dtype and a.shape[1:] == b.shape, k
        np.testing.assert_array_equal(a.numpy()[r], b.numpy(), err_msg=f"{k} of row {r}")


@needs_har
@pytest.mark.filterwarnings("ignore::mli.SaturationWarning")
@pytest.mark.parametrize("rounding", ["convergent", "up"])
@pytest.mark.parametrize("layer3", ["custom", "library"])
@pytest.mark.parametrize("depth", [16, 816, 8])
def test_har_rows_is_run_har_per_row(har_tests, depth, layer3, rounding):
    model = _har.load_har(HAR_DIR, depth)
    # the test set, and saturating rows (inputs far beyond the input range)
    xs = np.concatenate([har_tests, har_tests[:5] * 40.0])
    with mli.rounding(rounding):
        got = _har.run_har_rows(_har.quantize_input(xs, depth), depth, layer3, model=model)
        for r, x in enumerate(xs):
            assert_row_of(got, _har.run_har(_har.quantize_input(x, depth), depth, layer3, model=model), r)
        one = _har.run_har_rows(_har.quantize_input(xs[3:4], depth).numpy(), depth, layer3, model=model)  # B = 1
        assert_row_of(one, _har.run_har(_har.quantize_input(xs[3], depth), depth, layer3, model=model), 0)
        two = _har.run_har_rows(_har.quantize_input(xs[-2:], depth), depth, layer3, model=model)          # B = 2
        for r in range(2):
            assert_row_of(two, _har.run_har(_har.quantize_input(xs[r - 2], depth), depth, layer3, model=model), r)
        none = _har.run_har_rows(_har.quantize_input(xs[:0], depth), depth, layer3, model=model)   # B = 0
        for k in _har.LAYERS:
            assert none[k].shape == (0,) + one[k].shape[1:] and none[k].frac_bits == one[k].frac_bits
            assert none[k].dtype == one[k].dtype


@needs_har
def test_har_rows_refusals(har_tests):
    model = _har.load_har(HAR_DIR, 16)
    x = _har.quantize_input(har_tests[:2], 16)
    with pytest.raises(ValueError, match=r"x_fx: expected int16\[B, T, 9\] with 13 frac bits, got int16\[128, 9\]"):
        _har.run_har_rows(x.numpy()[0], 16, model=model)
    with pytest.raises(ValueError, match=r"x_fx: expected int16\[B, T, 9\] with 13 frac bits, got int8"):
        _har.run_har_rows(x.numpy().astype(np.int8), 16, model=model)
    with pytest.raises(ValueError, match="layer3"):
        _har.run_har_rows(x, 16, "other", model=model)
    before = x.numpy().copy()
    _har.run_har_rows(x, 16, model=model)
    np.testing.assert_array_equal(x.numpy(), before)


@needs_har
@pytest.mark.parametrize("layer3", ["custom", "library"])
def test_har_accuracy_is_the_per_vector_classification(har_tests, layer3):
    model = _har.load_har(HAR_DIR, 816)
    want = [int(np.argmax(_har.run_har(_har.quantize_input(t, 816), 816, layer3, model=model)["out"].numpy()))
            for t in har_tests]
    for jobs in (1, 2, 7, 64):
        ok, n, pred = _har.accuracy(model, layer3, jobs=jobs)
        assert pred.tolist() == want and n == len(har_tests)


def test_row_chunks():
    from mli.tools.jobs import row_chunks
    assert row_chunks(0, 4) == []
    assert row_chunks(30, 1) == [(0, 30)]
    assert row_chunks(30, 4) == [(0, 7), (7, 15), (15, 22), (22, 30)]
    assert row_chunks(3, 8) == [(0, 1), (1, 2), (2, 3)]
    assert row_chunks(130, 1) == [(0, 43), (43, 86), (86, 130)]      # at most 64 rows a call


# --------------------------------------------------------------------------- crosscheck data sets
def _cli(capsys, *argv):
    from mli.tools.crosscheck import main
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _per_vector_chains(prep, datas, mode, feeds):
    """The computation before batched rows: each vector's chain on its own."""
    from mli.tools.crosscheck import run as cc
    return [cc._run_chain(prep, d, mode, f) for d, f in zip(datas, feeds)]


def chain_case(tmp_path, lengths, kind="fx16", seed=0, bad=None):
    """A folder of input vectors (T = lengths[v]; v == bad: a wrong input size)
    through lstm b2b -> rnn b2l (act NONE) -> stacked rnn one-to-one, and an
    lstm b2l from a stored state; firmware dumps from the per-vector run with
    one LSB off in vector 1."""
    from mli.io.npz import write_npz
    from mli.tools.crosscheck import run_case
    rng = np.random.default_rng(seed)
    d = 7 if kind == "fx8" else 15
    wt = np.int16 if kind == "fx16" else np.int8
    dt = np.int8 if kind == "fx8" else np.int16
    M2, M3 = 3, 2
    ri = lambda dtype, shape: rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, shape).astype(dtype)  # noqa
    write_npz(tmp_path / "w.npz", {"l_w": ri(wt, (4, M, N + M)), "l_b": ri(wt, (4, M)) // 8,
                                   "r_w": ri(wt, (M2, M + M2)), "r_b": ri(wt, M2) // 8,
                                   "s_w": ri(wt, (2, M3, M2 + M3)), "s_b": ri(wt, (2, M3)) // 8,
                                   "k_w": ri(wt, (4, M, 2 * M)), "k_b": ri(wt, (4, M)) // 8,
                                   "h0": ri(dt, M), "c0": ri(dt, M)})
    (tmp_path / "in").mkdir()
    for v, T in enumerate(lengths):
        x = ri(dt, (T, N + (v == bad)))
        if v % 2:
            x //= 64                                          # every other vector far from saturating
        np.save(tmp_path / "in" / f"v{v:02d}.npy", x)
    lw = dict(weights="w.npz:l_w", weights_frac=d - 2, bias="w.npz:l_b", bias_frac=d - 3)
    layers = [
        dict(name="l0", kernel="lstm_cell", mode="batch_to_batch", prev_out="zeros", cell="zeros", cell_frac=d - 4, **lw),
        dict(name="r1", kernel="basic_rnn_cell", mode="batch_to_last", act="none", weights="w.npz:r_w",
             weights_frac=d - 1, bias="w.npz:r_b", bias_frac=d - 2, prev_out="zeros", prev_out_frac=d - 3, out_frac=d - 5),
        dict(name="s2", kernel="basic_rnn_cell", mode="one_to_one", act="sigm", weights="w.npz:s_w", weights_frac=d - 1,
             bias="w.npz:s_b", bias_frac=d - 2, prev_out="zeros"),
        dict(name="l3", kernel="lstm_cell", mode="batch_to_last", input="@l0", prev_out="w.npz:h0", prev_out_frac=d,
             cell="w.npz:c0", cell_frac=d - 3, weights="w.npz:k_w", weights_frac=d - 1, bias="w.npz:k_b",
             bias_frac=d - 2),
    ]
    case = {"kind": kind, "input": "in/v00.npy", "input_frac": d - 3, "layers": layers}
    (tmp_path / "one.json").write_text(json.dumps(case))
    (tmp_path / "fw").mkdir()
    for v in range(len(lengths)):
        case["input"] = f"in/v{v:02d}.npy"
        (tmp_path / "one.json").write_text(json.dumps(case))
        if v == bad:
            outs = {k: np.zeros(1, dt) for k in ("l0", "r1", "s2", "l3", "l3.cell")}
        else:
            outs = {k: t.numpy().copy() for k, t in run_case(tmp_path / "one.json").items()}
        if v == 1:
            outs["l0"].reshape(-1)[7] += 1
        for k, a in outs.items():
            (tmp_path / "fw" / k).mkdir(exist_ok=True)
            np.save(tmp_path / "fw" / k / f"v{v:02d}.npy", a)
    case["input"] = "in"
    case["vectors"] = True
    for lay in layers:
        lay["firmware"] = f"fw/{lay['name']}"
    layers[3]["firmware_cell"] = "fw/l3.cell"
    path = tmp_path / "ds.json"
    path.write_text(json.dumps(case))
    return path


@pytest.mark.parametrize("isolate", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_crosscheck_chain_rows_is_the_per_vector_chain(tmp_path, kind, isolate):
    from mli.tools.crosscheck import run as cc
    path = chain_case(tmp_path, [6, 6, 4, 6, 1, 4, 6], kind)
    prep = cc._prepare(str(path), None, isolate=isolate, vectors=True)
    items = prep.vector_data()
    datas = [d for _, d in items]
    feeds = [cc._firmware_feed(prep, d) for d in datas]
    for mode in ("convergent", "up"):
        got = cc._run_chain_rows(prep, datas, mode, feeds)
        want = _per_vector_chains(prep, datas, mode, feeds)
        for g, w in zip(got, want):
            assert list(g) == list(w)
            for name in w:
                for a, b in zip(g[name], w[name]):
                    if b is None:
                        assert a is None
                        continue
                    assert (a.shape, a.dtype, a.frac_bits, a.el_type) == (b.shape, b.dtype, b.frac_bits, b.el_type)
                    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


@pytest.mark.parametrize("lengths, bad", [([5] * 9, None), ([5, 5, 3, 5, 3, 1, 5], None), ([5], None),
                                          ([5, 5, 5, 5, 5, 5], 3)],
                         ids=["equal", "unequal", "one", "bad-vector"])
def test_crosscheck_dataset_output_is_unchanged(tmp_path, capsys, monkeypatch, lengths, bad):
    """Every line (text and JSON, --jobs 1 and N) as the per-vector computation prints it."""
    from mli.tools.crosscheck import run as cc
    path = chain_case(tmp_path, lengths, bad=bad)
    runs = {}
    for label in ("rows", "per-vector"):
        if label == "per-vector":
            monkeypatch.setattr(cc, "_run_chain_rows", _per_vector_chains)
        for jobs in ("1", "2", "4"):
            for extra in ((), ("--json",), ("--isolate",)):
                runs[(label, jobs, extra)] = _cli(capsys, path, "--jobs", jobs, *extra)
    ref = runs[("per-vector", "1", ())]
    if len(lengths) > 1:
        assert ref[0] == (2 if bad is not None else 1) and "vector v01.npy: MISMATCH" in ref[1]
    else:
        assert ref[0] == 0 and "1 vector" in ref[1]
    if bad is not None:
        assert "vector v02.npy" in ref[1] and "v03" not in ref[1] and "layer 'l0'.weights" in ref[2]
    for (label, jobs, extra), res in runs.items():
        assert res == runs[("per-vector", "1", extra)], (label, jobs, extra)


def _har_rows_per_vector(x_fx, depth=16, layer3="custom", data_dir=None, *, model=None):
    """run_har_rows as the per-vector run_har computed it."""
    x = x_fx if isinstance(x_fx, mli.Tensor) else mli.Tensor(np.asarray(x_fx), _har.input_frac_bits(depth))
    res = [_har.run_har(mli.Tensor(np.ascontiguousarray(r), x.frac_bits), depth, layer3, model=model)
           for r in x.numpy()]
    return {k: mli.Tensor(np.stack([r[k].numpy() for r in res]), res[0][k].frac_bits) for k in _har.LAYERS}


@needs_har
@pytest.mark.parametrize("bad", [None, 3])
def test_crosscheck_har_dataset_output_is_unchanged(tmp_path, capsys, monkeypatch, har_tests, bad):
    """``mli crosscheck --har DUMPS --in FOLDER --vectors``: vectors of unequal
    lengths (and one of a bad shape) give the lines the per-vector run gives."""
    model = _har.load_har(HAR_DIR, 816)
    (tmp_path / "in").mkdir()
    (tmp_path / "fw").mkdir()
    for v, T in enumerate([128, 128, 64, 128, 64, 17, 128]):
        x = har_tests[v % len(har_tests), :T] * (30.0 if v == 5 else 1.0)        # v05 saturates
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mli.SaturationWarning)
            xq = _har.quantize_input(x, 816)
        np.save(tmp_path / "in" / f"v{v:02d}.npy", xq.numpy()[:, :8] if v == bad else xq.numpy())
        sub = tmp_path / "fw" / f"v{v:02d}"
        sub.mkdir()
        for k, t in _har.run_har(xq, 816, model=model).items():
            a = t.numpy().copy()
            if v == 2 and k == "lstm2":
                a[5, 3] += 1
            np.save(sub / f"{k}.npy", a)
    argv = ["--har", tmp_path / "fw", "--depth", 816, "--data", HAR_DIR, "--in", tmp_path / "in", "--vectors"]
    runs = {}
    for label in ("rows", "per-vector"):
        if label == "per-vector":
            monkeypatch.setattr(_har, "run_har_rows", _har_rows_per_vector)
        for jobs in ("1", "3"):
            for extra in ((), ("--json",)):
                runs[(label, jobs, extra)] = _cli(capsys, *argv, "--jobs", jobs, *extra)
    ref = runs[("per-vector", "1", ())]
    assert "vector v02.npy: MISMATCH lstm2" in ref[1]
    assert ref[0] == (2 if bad else 1)
    if bad:
        assert "vector v02.npy" in ref[1] and "v03" not in ref[1] and "--in: x_fx: expected int16[T, 9]" in ref[2]
    for (label, jobs, extra), res in runs.items():
        assert res == runs[("per-vector", "1", extra)], (label, jobs, extra)

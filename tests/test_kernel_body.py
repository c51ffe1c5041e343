"""KernelBody: an MLI cell as a TensorIterator/Loop body, and the whole-sequence fast path.

The central check: a TensorIterator over a KernelBody gives bit-identical
outputs whether it is fused into one batch-to-batch MLI call per row or
stepped one one-to-one call per step (forward and reverse, RNN and LSTM,
fx16 / fx8 / fx8w16d, concatenated and last-iteration outputs)."""

import numpy as np
import pytest

import mli
from mli import kernels, rows
from mli.graph import (BackEdge, ConcatOutput, InvariantInput, KernelBody, LastIterationOutput,
                       Loop, MergedInput, SlicedInput, TensorIterator)

KINDS = ["fx16", "fx8", "fx8w16d"]
CELLS = ["lstm", "rnn"]
N, M, B, T = 5, 4, 3, 7


def make_body(cell, kind, seed=0, fuse=True, scale=1.0):
    rng = np.random.default_rng(seed)
    in_frac = 5 if kind == "fx8" else 12
    if cell == "lstm":
        w, b = rng.normal(0, .5 * scale, (4, M, N + M)), rng.normal(0, .3, (4, M))
        return KernelBody.from_float("lstm", w, b, kind=kind, in_frac=in_frac,
                                     cell_frac=5 if kind == "fx8" else 12, fuse=fuse)
    w, b = rng.normal(0, .5 * scale, (M, N + M)), rng.normal(0, .3, M)
    return KernelBody.from_float("rnn", w, b, kind=kind, in_frac=in_frac, fuse=fuse)


def whole(stride):
    return dict(start=0, end=-1) if stride > 0 else dict(start=-1, end=0)


def recurrence(body, in_stride=1, out_stride=1):
    """x [B, T, N] sliced on axis 1; outputs: y concatenated on axis 1, h_out last,
    h_out concatenated on axis 0 (part B), y last, (c_out last)."""
    lstm = body.cell == "lstm"
    inputs = [SlicedInput(0, 0, 1, stride=in_stride, **whole(in_stride)), MergedInput(1, 1)]
    outputs = [ConcatOutput(0, 0, 1, stride=out_stride, **whole(out_stride)),
               LastIterationOutput(1, 1),
               ConcatOutput(1, 2, 0, stride=B * out_stride, part_size=B, **whole(out_stride)),
               LastIterationOutput(0, 3)]
    edges = [BackEdge(1, 1)]
    if lstm:
        inputs.append(MergedInput(2, 2))
        outputs.append(LastIterationOutput(2, 4))
        edges.append(BackEdge(2, 2))
    return TensorIterator(body, inputs, outputs, edges)


def data(body, seed=1, amp=2.0):
    rng = np.random.default_rng(seed)
    args = [body.quantize(rng.uniform(-amp, amp, (B, T, N)), "x"),
            body.quantize(rng.uniform(-.9, .9, (B, M)), "h")]
    if body.cell == "lstm":
        args.append(body.quantize(rng.uniform(-1.5, 1.5, (B, M)), "c"))
    return args


@pytest.fixture
def calls(monkeypatch):
    """Records (kernel name, mode) of every MLI cell call, per-row kernels
    (mli.kernels) and batched-rows kernels (mli.rows) alike."""
    log = []
    for kind in KINDS:
        for module, names in ((kernels, (f"lstm_cell_{kind}", f"basic_rnn_cell_{kind}")),
                              (rows, (f"lstm_cell_rows_{kind}", f"basic_rnn_cell_rows_{kind}"))):
            for name in names:
                fn = getattr(module, name)

                def spy(*a, _fn=fn, _name=name, **kw):
                    log.append((_name, a[4].mode))
                    return _fn(*a, **kw)
                monkeypatch.setattr(module, name, spy)
    return log


def assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        np.testing.assert_array_equal(u, v)


# --------------------------------------------------------------------------- fused == stepped
@pytest.mark.parametrize("amp", [2.0, 40.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("in_stride, out_stride", [(1, 1), (-1, -1), (-1, 1), (1, -1)],
                         ids=["fwd", "rev", "rev-in", "rev-out"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", CELLS)
def test_fused_equals_stepped(cell, kind, in_stride, out_stride, amp, calls):
    fused_body, stepped_body = make_body(cell, kind), make_body(cell, kind, fuse=False)
    args = data(fused_body, amp=amp)
    before = [a.copy() for a in args]
    fused = recurrence(fused_body, in_stride, out_stride)(*args)
    n_fused = list(calls)
    calls.clear()
    stepped = recurrence(stepped_body, in_stride, out_stride)(*args)
    assert_same(fused, stepped)
    assert_same(args, before)                               # inputs untouched
    assert n_fused == [(stepped_body._fname, mli.RNN_BATCH_TO_BATCH)] * B   # one call per row
    # stepped: one batched-rows one-to-one call per step for all B rows
    assert calls == [(stepped_body._rows_fname, mli.RNN_ONE_TO_ONE)] * T
    assert fused[0].shape == (B, T, M) and fused[2].shape == (B * T, M)
    for i, u in enumerate(fused):                           # separate arrays, as stepping gives
        assert all(not np.shares_memory(u, v) for v in fused[i + 1:])
    if out_stride < 0:      # reversed output: value of iteration k lands at position T-1-k
        np.testing.assert_array_equal(fused[0][:, 0], fused[1])
    else:
        np.testing.assert_array_equal(fused[0][:, -1], fused[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", CELLS)
def test_stepping_is_the_mli_cell(cell, kind):
    """The stepped body is a plain loop of one-to-one MLI calls per row."""
    body = make_body(cell, kind, fuse=False)
    args = data(body)
    out = recurrence(body)(*args)
    cfg = mli.RnnCellConfig(mode=mli.RNN_ONE_TO_ONE, act=mli.RNN_ACT_TANH)
    fn = getattr(mli, body._fname)
    for r in range(B):
        h = mli.Tensor(args[1][r], body.state_frac)
        c = mli.Tensor(args[2][r], body.cell_frac) if cell == "lstm" else None
        for t in range(T):
            x = mli.Tensor(np.ascontiguousarray(args[0][r, t]), body.in_frac)
            if cell == "lstm":
                h, c = fn(x, h, body.weights, body.bias, cfg, c)
            else:
                h = fn(x, h, body.weights, body.bias, cfg)
            np.testing.assert_array_equal(out[0][r, t], h.numpy())
        if cell == "lstm":
            np.testing.assert_array_equal(out[4][r], c.numpy())


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", CELLS)
def test_single_sequence_is_one_batch_to_batch_call(cell, kind, reverse, calls):
    """x [T, N] and h [M]: the TI is exactly MLI's batch-to-batch call on the
    (reversed) sequence."""
    body = make_body(cell, kind, seed=4)
    rng = np.random.default_rng(5)
    x = body.quantize(rng.uniform(-2, 2, (T, N)), "x")
    h0 = body.quantize(rng.uniform(-.5, .5, M), "h")
    s = -1 if reverse else 1
    inputs = [SlicedInput(0, 0, 0, stride=s, **whole(s)), MergedInput(1, 1)]
    outputs = [ConcatOutput(0, 0, 0, stride=s, **whole(s)), LastIterationOutput(1, 1)]
    edges = [BackEdge(1, 1)]
    args = [x, h0]
    if cell == "lstm":
        c0 = body.quantize(rng.uniform(-1, 1, M), "c")
        inputs.append(MergedInput(2, 2))
        outputs.append(LastIterationOutput(2, 2))
        edges.append(BackEdge(2, 2))
        args.append(c0)
    y, h, *c = TensorIterator(body, inputs, outputs, edges)(*args)
    assert len(calls) == 1
    cfg = mli.RnnCellConfig(mode=mli.RNN_BATCH_TO_BATCH, act=mli.RNN_ACT_TANH)
    seq = mli.Tensor(np.ascontiguousarray(x[::s]), body.in_frac)
    fn = getattr(mli, body._fname)
    if cell == "lstm":
        want, cell_out = fn(seq, mli.Tensor(h0, 15 if kind != "fx8" else 7), body.weights,
                            body.bias, cfg, mli.Tensor(c0, body.cell_frac))
        np.testing.assert_array_equal(c[0], cell_out.numpy())
    else:
        want = fn(seq, mli.Tensor(h0, 15 if kind != "fx8" else 7), body.weights, body.bias, cfg)
    np.testing.assert_array_equal(y, want.numpy()[::s])
    np.testing.assert_array_equal(h, want.numpy()[-1])
    assert y.shape == (T, M) and h.shape == (M,)


@pytest.mark.parametrize("cell", CELLS)
def test_run_sequence_equals_run(cell):
    body = make_body(cell, "fx16", seed=7)
    args = data(body, seed=8)
    seq = np.moveaxis(args[0], 1, 0)                        # [T, B, N]
    res = body.run_sequence(seq, *args[1:])
    state = list(args[1:])
    for t in range(T):
        out = body.run([seq[t], *state])
        np.testing.assert_array_equal(res[0][t], out[0])
        state = list(out[1:])
    assert_same(res[1:], state)
    empty = body.run_sequence(seq[:0], *args[1:])
    assert empty[0].shape == (0, B, M)
    assert_same(empty[1:], args[1:])


@pytest.mark.parametrize("rows_", [1, B])
@pytest.mark.parametrize("act", ["tanh", "sigm", "none"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", CELLS)
def test_run_rows_into_equals_run_sequence(cell, kind, act, rows_, calls):
    """The unchecked whole-sequence call mli.fixed_point uses: run_sequence's values,
    one per-row kernel call for one row, one batched-rows call for more."""
    body = make_body(cell, kind, seed=3)
    a = {"tanh": mli.RnnActivation.TANH, "sigm": mli.RnnActivation.SIGM, "none": mli.RnnActivation.NONE}[act]
    body = KernelBody(cell, body.weights, body.bias, in_frac=body.in_frac, cell_frac=body.cell_frac, kind=kind,
                      act=a, state_frac=(4 if kind == "fx8" else 11) if act == "none" else None)
    args = [v[:rows_] for v in data(body, seed=4, amp=4.0)]
    want = body.run_sequence(np.moveaxis(args[0], 1, 0), *args[1:])
    calls.clear()
    for _ in range(2):                      # the second call reuses the tensor wrappers
        x, h = args[0].copy(), args[1].copy()
        c = args[2].copy() if cell == "lstm" else None
        y = np.empty((rows_, T, M), body.dtype)
        body._run_rows_into(x, h, c, y)
        np.testing.assert_array_equal(y, np.moveaxis(want[0], 0, 1))
        if c is not None:
            np.testing.assert_array_equal(c, want[2])
        assert_same([x, h], [args[0], args[1]])
    name = body._fname if rows_ == 1 else body._rows_fname
    assert calls == [(name, mli.RNN_BATCH_TO_BATCH)] * 2


# --------------------------------------------------------------------------- not fusable
def test_cell_sequence_output_is_stepped(calls):
    """Concatenating c_out needs every step's cell: stepped, same values."""
    body = make_body("lstm", "fx16")
    args = data(body)
    ti = TensorIterator(body, [SlicedInput(0, 0, 1), MergedInput(1, 1), MergedInput(2, 2)],
                        [ConcatOutput(2, 0, 1), ConcatOutput(0, 1, 1)],
                        [BackEdge(1, 1), BackEdge(2, 2)])
    with pytest.raises(mli.graph.GraphError, match="'c_out'"):   # c_out [B, M] has no time axis
        ti(*args)
    assert {m for _, m in calls} == {mli.RNN_ONE_TO_ONE}
    calls.clear()
    args[0] = args[0][:1]                                   # one row: c_out [1, M] on axis 0
    args[1], args[2] = args[1][:1], args[2][:1]
    ti = TensorIterator(body, [SlicedInput(0, 0, 1), MergedInput(1, 1), MergedInput(2, 2)],
                        [ConcatOutput(2, 0, 0), ConcatOutput(0, 1, 1)],
                        [BackEdge(1, 1), BackEdge(2, 2)])
    cs, ys = ti(*args)
    assert calls == [("lstm_cell_fx16", mli.RNN_ONE_TO_ONE)] * T       # one row: the per-row kernel
    fused = recurrence(body)(np.repeat(args[0], B, 0), np.repeat(args[1], B, 0),
                             np.repeat(args[2], B, 0))
    np.testing.assert_array_equal(ys, fused[0][:1])
    np.testing.assert_array_equal(cs[-1], fused[4][0])


def test_other_port_maps_are_stepped(calls):
    body = make_body("rnn", "fx16")
    x, h0 = data(body)
    # invariant x: no time axis to fuse
    ti = TensorIterator(body, [InvariantInput(0, 0), MergedInput(1, 1)],
                        [LastIterationOutput(1, 0)], [BackEdge(1, 1)], num_iterations=3)
    ti(x[:, 0], h0)
    assert calls == [("basic_rnn_cell_rows_fx16", mli.RNN_ONE_TO_ONE)] * 3 and body.fusable(ti) is False
    calls.clear()
    # slicing on the last axis of x (N = 1 per chunk): stepped, and fails like stepping
    ti = TensorIterator(body, [SlicedInput(0, 0, 2), MergedInput(1, 1)],
                        [LastIterationOutput(1, 0)], [BackEdge(1, 1)])
    with pytest.raises(ValueError, match="the weights need N = 5"):
        ti(x, h0)
    # back edge from y instead of h_out
    ti = TensorIterator(body, [SlicedInput(0, 0, 0), MergedInput(1, 1)],
                        [LastIterationOutput(1, 0)], [BackEdge(0, 1)])
    assert not body.fusable(ti)
    y = ti(x[0], h0[0])[0]
    calls.clear()
    fused = TensorIterator(body, [SlicedInput(0, 0, 0), MergedInput(1, 1)],
                           [LastIterationOutput(1, 0)], [BackEdge(1, 1)])
    np.testing.assert_array_equal(fused(x[0], h0[0])[0], y.reshape(M))   # y is [1, M]
    assert len(calls) == 1


def test_errors_are_the_same_fused_and_stepped():
    for fuse in (True, False):
        body = make_body("lstm", "fx16", fuse=fuse)
        x, h, c = data(body)
        with pytest.raises(TypeError, match=r"body input 'x' must be int16, got float32; "
                                            r"quantize floats with body.quantize"):
            recurrence(body)(x.astype(np.float32), h, c)
        with pytest.raises(ValueError, match=r"x \[3, 1, 5\] has 3 rows but h \[2, 4\] has 2"):
            recurrence(body)(x, h[:2], c[:2])
        with pytest.raises(ValueError, match=r"c \[3, 3\] must have h's shape \[3, 4\]"):
            recurrence(body)(x, h, c[:, :3])


def _ti_on_axis(body, lead, post, outs, in_stride=1):
    """x [*lead, T, *post, N] sliced on its time axis (len(lead)); outs names each output:
    'y' (y concatenated on the time axis), 'y-' (the same axis counted from the end), 'y_rev'
    (reverse concatenation), 'y_last', 'h_last', 'c_last'."""
    ax = len(lead)
    rank = len(lead) + len(post) + 2
    ports = {"y": lambda e: ConcatOutput(0, e, ax), "y-": lambda e: ConcatOutput(0, e, ax - rank),
             "y_rev": lambda e: ConcatOutput(0, e, ax, stride=-1, **whole(-1)),
             "y_last": lambda e: LastIterationOutput(0, e), "h_last": lambda e: LastIterationOutput(1, e),
             "c_last": lambda e: LastIterationOutput(2, e)}
    inputs, edges = [SlicedInput(0, 0, ax, stride=in_stride, **whole(in_stride)), MergedInput(1, 1)], [BackEdge(1, 1)]
    if body.cell == "lstm":
        inputs.append(MergedInput(2, 2))
        edges.append(BackEdge(2, 2))
    return TensorIterator(body, inputs, [ports[o](e) for e, o in enumerate(outs)], edges)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", CELLS)
def test_bridge_run_equals_stepping(cell, kind):
    """From its second call on, a fused TI over C-contiguous arrays runs in the bridge
    (KernelBody's kernel functions not replaced), batch-major or time-major, forward or
    reverse: same outputs as stepping, separate arrays, inputs untouched."""
    fused, stepped = make_body(cell, kind), make_body(cell, kind, fuse=False)
    rng = np.random.default_rng(11)
    lstm = cell == "lstm"
    c_last = ["c_last"] if lstm else []
    for lead, post in [((), ()), ((1,), ()), ((B,), ()), ((2, B), ()), ((), (B,)), ((2,), (B,))]:
        for outs, in_stride in [(["y", "h_last"] + c_last, 1), (["h_last"] + c_last + ["y_last", "y-"], 1),
                                (c_last + ["y_last", "h_last", "h_last"], 1), (["y_rev", "h_last"], 1),
                                (["y", "h_last"] + c_last, -1), (["y_rev", "y_last"] + c_last, -1)]:
            rows = lead + post
            args = [fused.quantize(rng.uniform(-2, 2, (np.prod(rows, dtype=int) * T, N)), "x")
                    .reshape(lead + (T,) + post + (N,)),
                    fused.quantize(rng.uniform(-.9, .9, rows + (M,)), "h")]
            if lstm:
                args.append(fused.quantize(rng.uniform(-1.5, 1.5, rows + (M,)), "c"))
            before = [a.copy() for a in args]
            ti = _ti_on_axis(fused, lead, post, outs, in_stride)
            want = _ti_on_axis(stepped, lead, post, outs, in_stride)(*args)
            first, second = ti(*args), ti(*args)
            bridge = ti._kernel_plan[1].fast.run(ti, tuple(args))
            assert bridge is not None, (lead, post, outs, in_stride)
            for got in (first, second, bridge):
                assert_same(got, want)
                for i, u in enumerate(got):
                    assert all(not np.shares_memory(u, v) for v in list(got[i + 1:]) + args if v is not u)
            assert_same(args, before)


def test_other_outputs_take_the_python_paths():
    """h_out concatenated (parts of B rows): the fused Python run, same values as stepping."""
    fused, stepped = make_body("lstm", "fx16"), make_body("lstm", "fx16", fuse=False)
    args = data(fused)
    ti = recurrence(fused)
    want = recurrence(stepped)(*args)
    assert_same(ti(*args), want)
    assert_same(ti(*args), want)
    assert ti._kernel_plan[1] and ti._kernel_plan[1].fast.run(ti, tuple(args)) is None


def test_a_replaced_kernel_function_is_called(calls, monkeypatch):
    """The bridge's run is only for the package's own kernel functions: a spy put
    in place before or after the TI's first call sees one call per row."""
    body = make_body("lstm", "fx16")
    args = data(body)
    ti = recurrence(body)
    want = ti(*args)                       # plan made under the spy
    assert len(calls) == B
    assert_same(ti(*args), want)
    assert len(calls) == 2 * B
    monkeypatch.undo()                     # the package's own functions again: the bridge's run
    calls.clear()
    ti = TensorIterator(body, [SlicedInput(0, 0, 1), MergedInput(1, 1), MergedInput(2, 2)],
                        [ConcatOutput(0, 0, 1), LastIterationOutput(2, 1)], [BackEdge(1, 1), BackEdge(2, 2)])
    y, c = ti(*args)
    assert ti._kernel_plan[1].fast.run(ti, tuple(args)) is not None
    np.testing.assert_array_equal(y, want[0])
    np.testing.assert_array_equal(c, want[4])
    log = []
    fn = kernels.lstm_cell_fx16
    monkeypatch.setattr(kernels, "lstm_cell_fx16", lambda *a, **kw: log.append(a[4].mode) or fn(*a, **kw))
    y, c = ti(*args)                       # spy put in place after the plan was made
    assert log == [mli.RNN_BATCH_TO_BATCH] * B
    np.testing.assert_array_equal(y, want[0])


def test_a_used_fused_tensor_iterator_pickles_and_copies():
    import copy
    import pickle
    body = make_body("lstm", "fx16")
    args = data(body)
    ti = recurrence(body)
    want = ti(*args)
    assert_same(ti(*args), want)                           # the plan and the bridge's run are made
    for dup in (copy.deepcopy(ti), pickle.loads(pickle.dumps(ti)), copy.copy(ti)):
        assert_same(dup(*args), want)
        assert_same(dup(*args), want)


def test_loop_over_a_kernel_body_steps_it():
    body = make_body("lstm", "fx8w16d")
    x, h, c = data(body)
    want = recurrence(body)(x, h, c)
    loop = Loop(body, [SlicedInput(2, 0, 1), MergedInput(3, 1), MergedInput(4, 2)],
                [ConcatOutput(0, 0, 1), LastIterationOutput(2, 1)],
                [BackEdge(1, 1), BackEdge(2, 2)])
    y, c_last = loop(np.int64(T), np.bool_(True), x, h, c)
    np.testing.assert_array_equal(y, want[0])
    np.testing.assert_array_equal(c_last, want[4])


# --------------------------------------------------------------------------- construction
def test_attributes_and_quantization():
    body = make_body("lstm", "fx8w16d")
    assert (body.kind, body.input_size, body.state_size, body.dtype) == ("fx8w16d", N, M,
                                                                         np.dtype(np.int16))
    assert body.num_inputs == body.num_outputs == 3
    assert body.input_names == ("x", "h", "c") and body.output_names == ("y", "h_out", "c_out")
    assert body.fracs["h"] == body.fracs["y"] == 15 and body.fracs["c"] == 12
    assert body.weights.el_type == mli.EL_FX_8 and "fx8w16d" in repr(body)
    q = body.quantize(np.array([0.5, -1.0, 2.0]), "h")
    assert q.dtype == np.int16 and q.tolist() == [16384, -32768, 32767]
    np.testing.assert_array_equal(body.dequantize(q[:2], "h"), [0.5, -1.0])
    rnn = make_body("rnn", "fx8")
    assert rnn.num_inputs == 2 and rnn.dtype == np.int8 and rnn.state_frac == 7
    with pytest.raises(ValueError, match="what must be one of"):
        rnn.quantize(1.0, "c")


def test_act_none_state_frac():
    rng = np.random.default_rng(0)
    body = KernelBody.from_float("rnn", rng.normal(0, .3, (M, N + M)), rng.normal(0, .1, M),
                                 kind="fx16", in_frac=12, state_frac=11, act=mli.RNN_ACT_NONE)
    x, h = body.quantize(rng.uniform(-1, 1, (B, T, N)), "x"), body.quantize(np.zeros((B, M)), "h")
    fused = recurrence(body)(x, h)
    body.fuse = False
    assert_same(fused, recurrence(body)(x, h))


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(cell="gru"), ValueError, "cell must be 'lstm' or 'rnn'"),
    (dict(state_frac=14), ValueError, "state_frac must be 15"),
    (dict(cell_frac=None), ValueError, "needs cell_frac"),
    (dict(kind="fx8"), TypeError, "kind fx8 needs FX_8 weights"),
    (dict(kind="fx32"), ValueError, "kind must be one of"),
    (dict(in_frac=-1), ValueError, "in_frac must be an integer in 0..255"),
    (dict(bias=mli.Tensor(np.zeros((4, M), np.int16), 27)), ValueError,
     r"bias frac 27 exceeds in_frac \+ weights frac = 26"),
    (dict(weights=np.zeros((4, M, N + M), np.int16)), TypeError, "must be an mli.Tensor"),
    (dict(weights=mli.Tensor(np.zeros((4, M, M), np.int16), 14)), ValueError,
     r"weights must be \[4, M, N\+M\]"),
    (dict(act=mli.RNN_ACT_NONE), ValueError, "needs state_frac"),
])
def test_construction_errors(kwargs, exc, msg):
    args = dict(cell="lstm", weights=mli.Tensor(np.zeros((4, M, N + M), np.int16), 14),
                bias=mli.Tensor(np.zeros((4, M), np.int16), 14), in_frac=12, cell_frac=12)
    args.update(kwargs)
    with pytest.raises(exc, match=msg):
        KernelBody(args.pop("cell"), args.pop("weights"), args.pop("bias"), **args)


def test_tensor_inputs_must_carry_the_body_frac_bits():
    body = make_body("rnn", "fx16")
    x, h = data(body)
    out = body.run([mli.Tensor(x[:, 0], body.in_frac), h])
    assert_same(out, body.run([x[:, 0], h]))
    with pytest.raises(ValueError, match="'x' is a Tensor with frac bits 3, the body expects 12"):
        body.run([mli.Tensor(x[:, 0], 3), h])


@pytest.mark.parametrize("cell", CELLS)
def test_zero_rows_fused_equals_stepping(cell):
    """No rows (a zero-length batch axis, sequences of any length): the fused TI, on
    its first call and its later ones, gives the stepped TI's empty outputs."""
    fused, stepped = make_body(cell, "fx16"), make_body(cell, "fx16", fuse=False)
    c_last = ["c_last"] if cell == "lstm" else []
    for lead, post in [((0,), ()), ((), (0,)), ((2,), (0,)), ((0,), (B,))]:
        for outs in (["y", "h_last"] + c_last, ["y_rev", "y_last"] + c_last, ["h_last"] + c_last):
            for steps in (1, T):
                x = np.ones(lead + (steps,) + post + (N,), fused.dtype)
                h = np.ones(lead + post + (M,), fused.dtype)
                args = [x, h] + ([h.copy()] if cell == "lstm" else [])
                want = _ti_on_axis(stepped, lead, post, outs)(*args)
                ti = _ti_on_axis(fused, lead, post, outs)
                for _ in range(2):
                    assert_same(ti(*args), want)

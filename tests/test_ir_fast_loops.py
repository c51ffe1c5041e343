"""Loop bodies' stepped steps compiled per signature (mli.ir.fast) and Loops with a
recurrent condition run through their plan (mli.ir.lifted).

A compiled step does the numpy operations of its op's step on the same operands, so
the outputs must be the same bit for bit as with the steps themselves (the compiled
steps off), on the real converter IRs and on hand-built Loops (early stop, zero
iterations, back edges, errors)."""
import numpy as np
import pytest

from ir_loop_cases import case_inputs, case_named, looped_cases, record_plans
from test_ir import Weights, graph, layer, net, param, pm_in, pm_out, port, result, write

from mli.graph import GraphError
from mli.ir import fast, lifted, read_model


CASES = looped_cases()


def _no_compiling(monkeypatch):
    monkeypatch.setattr(lifted.LiftedPlan, "_compile", lambda self, key, cur: None)


@pytest.mark.skipif(not CASES, reason="shared/vectors not found")
@pytest.mark.parametrize("path,case", CASES, ids=[c["name"] for _, c in CASES])
def test_compiled_steps_equal_the_steps(path, case, monkeypatch):
    """Every real TensorIterator / Loop IR: twice (the second call finds its compiled
    steps kept) with the compiled steps, and once without: the same outputs, bit for
    bit."""
    inputs = case_inputs(path, case)
    model = read_model(path / f"{case['name']}.xml")
    got = [model(inputs), model(inputs)]      # (ReadValue/Assign state: call 2 differs)
    with monkeypatch.context() as m:
        _no_compiling(m)
        stepped = read_model(path / f"{case['name']}.xml")
        ref = [stepped(inputs), stepped(inputs)]
    for out, want in zip(got, ref):
        for k, v in want.items():
            assert out[k].dtype == v.dtype and out[k].shape == v.shape, k
            np.testing.assert_array_equal(out[k], v, err_msg=k)


@pytest.mark.parametrize("name,types", [
    ("keras_lstm_seq__keras_direct_fp32",
     {"MatMul", "Add", "Split", "Sigmoid", "Multiply", "Tanh", "Broadcast", "Unsqueeze",
      "ScatterUpdate"}),
    ("mo_onnx_loop_rnn__mo_newfe_fp32",
     {"MatMul", "Add", "Tanh", "Unsqueeze", "Abs", "ReduceMean", "Less", "LogicalAnd"})])
def test_real_loops_run_compiled(name, types, monkeypatch):
    """The Keras LSTM Loop (its accumulated output's shape arithmetic compiled away: the
    ShapeOf / Slice / Concat feeding its Broadcast; its gates' three Sigmoids of one
    Split's parts one Sigmoid of the Split's input) and the ONNX Loop RNN with its early
    exit condition (planned, the condition stepped): every stepped op compiled."""
    path, case = case_named(CASES, name)
    plans = record_plans(monkeypatch)
    model = read_model(path / f"{case['name']}.xml")
    model(case_inputs(path, case))
    (p,) = plans
    assert p is not None and p._fast
    for fs in p._fast.values():
        assert fs.compiled == len(p.loop) or name.startswith("keras")
    last = list(p._fast.values())[-1]
    assert len(last.runners) <= len(p.loop)
    ran = {st[4].type for st in p.loop}
    assert types <= ran
    if name.startswith("keras"):
        assert len(p._fast) == 2       # its output accumulator starts [20, 1, 1]
        # no ShapeOf x2, Slice, Concat; the three gate Sigmoids of the Split one
        assert len(last.runners) == len(p.loop) - 6
    else:
        assert p.dynamic


# --------------------------------------------------------------------------- hand-built
X6 = np.array([[0.5, -1.0, 2.0, 0.25, -3.0, 1.5],
               [1.0, 0.5, -0.5, 2.0, 4.0, -1.0]], np.float32)
A0 = np.array([[0.5], [-1.0]], np.float32)


def _early_exit_loop(tmp_path, thr=2.0, trip="trip", seq_dims=None, a0_dims=(2, 1)):
    """Loop over X [2, 6] (axis 1): acc = tanh(acc_in + x_t) * 3 (a back edge), the
    scan of acc and its last value; the condition mean(|acc|) < thr is recurrent (the
    body reads the carried state), so the plan steps it with the rest."""
    w = Weights()
    d = [2, 1]
    f = {"auto_broadcast": "numpy"}
    body = graph([
        param(0, "x_t", "f32", d), param(1, "acc_in", "f32", d),
        layer(2, "sum", "Add", data=f, ins=[port(0, "f32", d), port(1, "f32", d)],
              outs=[port(2, "f32", d)]),
        layer(4, "th", "Tanh", ins=[port(0, "f32", d)], outs=[port(1, "f32", d)]),
        w.const(6, np.float32(3.0)),
        layer(7, "acc", "Multiply", data=f, ins=[port(0, "f32", d), port(1, "f32", [])],
              outs=[port(2, "f32", d)]),
        result(3, "f32", d),
        layer(8, "abs", "Abs", ins=[port(0, "f32", d)], outs=[port(1, "f32", d)]),
        w.const(9, np.array([0, 1], np.int64)),
        layer(12, "mean", "ReduceMean", data={"keep_dims": "false"},
              ins=[port(0, "f32", d), port(1, "i64", [2])], outs=[port(2, "f32", [])]),
        w.const(13, np.float32(thr)),
        layer(14, "lt", "Less", data=f, ins=[port(0, "f32", []), port(1, "f32", [])],
              outs=[port(2, "boolean", [])]),
        result(5, "boolean", [])],
        [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 4, 0), (4, 1, 7, 0), (6, 0, 7, 1), (7, 2, 3, 0),
         (7, 2, 8, 0), (8, 1, 12, 0), (9, 0, 12, 1), (12, 2, 14, 0), (13, 0, 14, 1),
         (14, 2, 5, 0)])
    pm = (pm_in(2, 0, 1) + pm_in(3, 1) + pm_out(4, 3, 1) + pm_out(5, 3)
          + pm_out(-1, 5, purpose="execution_condition"))
    inner = (f'<port_map>{pm}</port_map><back_edges><edge from-layer="3" to-layer="1"/>'
             f'</back_edges><body>{body}</body>')
    outer = [param(0, "X", "f32", [2, 6]), param(1, "A0", "f32", list(a0_dims)),
             param(2, "trip", "i64", []) if trip == "trip" else w.const(2, np.int64(trip)),
             param(3, "cond", "boolean", [])]
    seq = seq_dims or [2, None]
    layers = [*outer, layer(10, "loop", "Loop", "opset5", inner=inner,
                            ins=[port(0, "i64", []), port(1, "boolean", []),
                                 port(2, "f32", [2, 6]), port(3, "f32", list(a0_dims))],
                            outs=[port(4, "f32", seq, "Seq"), port(5, "f32", d, "Last")]),
              result(11, "f32", seq), result(12, "f32", d)]
    edges = [(2, 0, 10, 0), (3, 0, 10, 1), (0, 0, 10, 2), (1, 0, 10, 3), (10, 4, 11, 0),
             (10, 5, 12, 0)]
    return write(tmp_path, net(layers, edges), w)


def _reference(x, a0, trip, cond, thr=2.0):
    """What the Loop computes (numpy, float32)."""
    acc, seq = a0, []
    k = 0
    while cond and (trip < 0 or k < trip):
        acc = np.tanh(acc + x[:, k:k + 1]) * np.float32(3.0)
        seq.append(acc)
        cond = bool(np.mean(np.abs(acc)) < np.float32(thr))
        k += 1
    return (np.concatenate(seq, axis=1) if seq else np.empty((2, 0), np.float32)), acc


def _both(xml, inputs, monkeypatch):
    """The outputs (or the error) with the plan and compiled steps, and without a plan."""
    out = []
    for planned in (True, False):
        with monkeypatch.context() as m:
            plans = record_plans(m, planned)
            model = read_model(xml)
            try:
                res = model(inputs)
                res = model(inputs)        # (again: the compiled steps kept)
            except Exception as e:         # noqa: BLE001 -- compared below
                res = e
            out.append((res, plans))
    return out


@pytest.mark.parametrize("thr,trip,stops", [
    (2.0, 6, 3),        # the condition turns false in iteration 3
    (0.5, 6, 1),        # ... in the first one
    (50.0, 4, 4),       # never false: the trip count ends it
    (50.0, 6, 6),       # ... at the last chunk
    (2.0, 0, 0),        # zero iterations (trip count 0)
])
def test_recurrent_condition_stops_where_stepping_stops(tmp_path, monkeypatch, thr, trip,
                                                        stops):
    xml = _early_exit_loop(tmp_path, thr)
    inputs = {"X": X6, "A0": A0, "trip": np.int64(trip), "cond": np.bool_(True)}
    (got, plans), (ref, _) = _both(xml, inputs, monkeypatch)
    seq, last = _reference(X6, A0, trip, True, thr)
    assert ref["Seq"].shape == (2, stops)
    np.testing.assert_allclose(ref["Seq"], seq, rtol=1e-6)
    np.testing.assert_allclose(ref["Last"], last, rtol=1e-6)
    (p,) = plans
    assert p is not None and p.dynamic
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)
    if stops > 1:
        assert p._fast and all(f.compiled == len(p.loop) for f in p._fast.values())


def test_recurrent_condition_false_input_runs_nothing(tmp_path, monkeypatch):
    xml = _early_exit_loop(tmp_path)
    inputs = {"X": X6, "A0": A0, "trip": np.int64(5), "cond": np.bool_(False)}
    (got, _), (ref, _) = _both(xml, inputs, monkeypatch)
    assert got["Seq"].shape == ref["Seq"].shape == (2, 0)
    np.testing.assert_array_equal(got["Last"], A0)
    np.testing.assert_array_equal(ref["Last"], A0)


def test_recurrent_condition_past_the_chunks_raises_as_stepping(tmp_path, monkeypatch):
    """trip count -1, the condition never false: the chunks of X run out; the plan gives
    up and the driver raises its error (the same as without the plan)."""
    xml = _early_exit_loop(tmp_path, 50.0)
    inputs = {"X": X6, "A0": A0, "trip": np.int64(-1), "cond": np.bool_(True)}
    (got, plans), (ref, _) = _both(xml, inputs, monkeypatch)
    assert isinstance(got, GraphError) and isinstance(ref, GraphError)
    assert str(got) == str(ref) and "iteration 6 needs chunk 6" in str(got)


def test_static_scan_after_an_early_stop_is_refused_alike(tmp_path, monkeypatch):
    """A declared static scan length the early stop does not reach: the same error."""
    xml = _early_exit_loop(tmp_path, 2.0, seq_dims=[2, 6])
    inputs = {"X": X6, "A0": A0, "trip": np.int64(6), "cond": np.bool_(True)}
    (got, _), (ref, _) = _both(xml, inputs, monkeypatch)
    assert type(got) is type(ref) and str(got) == str(ref) and "declares" in str(got)


def test_a_changed_state_shape_recompiles(tmp_path, monkeypatch):
    """Compiled steps check the carried states' shapes at every iteration: a call with
    another initial shape (A0 [1, 1], broadcast to [2, 1] by the first iteration) runs
    compiled steps for each signature it meets, and gives what stepping gives."""
    xml = _early_exit_loop(tmp_path, 50.0, a0_dims=(None, 1))
    for a0 in (A0, A0[:1], A0):
        inputs = {"X": X6, "A0": a0, "trip": np.int64(6), "cond": np.bool_(True)}
        (got, plans), (ref, _) = _both(xml, inputs, monkeypatch)
        assert not isinstance(ref, Exception), ref
        for k, v in ref.items():
            assert got[k].shape == v.shape
            np.testing.assert_array_equal(got[k], v)


def test_sigmoid_compiled_equals_the_op():
    from mli.ir.ops.elementwise import _sigmoid
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        x = (rng.standard_normal((3, 40)) * 20).astype(dt)
        x[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.0]
        for v in (x, x[:, 5:17], x.T):
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(fast._sigmoid_fast(np.dtype(dt))(v), _sigmoid(v))


def test_signature_keys_small_integers_by_value():
    a = [np.zeros((2, 3), np.float32), np.array([1, 2], np.int64), np.bool_(True), None]
    k1 = fast.signature(a, [0, 1, 2])
    b = list(a)
    b[1] = np.array([1, 3], np.int64)
    assert fast.signature(b, [0, 1, 2]) != k1
    assert fast.signature(b, [0, 1, 2], changing={1}) == fast.signature(a, [0, 1, 2], {1})
    b[0] = np.zeros((2, 3), np.float32) + 5       # float contents: not in the key
    assert fast.signature(b, [0, 2]) == fast.signature(a, [0, 2])
    assert fast.signature(a, [3]) is None


def test_a_changed_state_shape_compiles_each_signature(tmp_path, monkeypatch):
    """The [1, 1] initial state: the first iteration's signature and the next ones' are
    compiled apart (two kept compilations)."""
    xml = _early_exit_loop(tmp_path, 50.0, a0_dims=(None, 1))
    plans = record_plans(monkeypatch)
    model = read_model(xml)
    model({"X": X6, "A0": A0[:1], "trip": np.int64(6), "cond": np.bool_(True)})
    (p,) = plans
    assert len(p._fast) == 2


def _gates_ti(tmp_path):
    """A TensorIterator over X [2, 6] (axis 1): z = acc_in [2, 4] + x_t; Split(z) into 4
    parts; acc = Concat(Sigmoid(p0), Sigmoid(p1), Tanh(p2), Sigmoid(p3)) fed back and
    concatenated; Sigmoid(p3) is also the last-iteration output (a body result)."""
    from test_ir import ti_net
    w = Weights()
    d, p = [2, 4], [2, 1]
    layers = [param(0, "x_t", "f32", p), param(1, "acc_in", "f32", d),
              layer(2, "z", "Add", data={"auto_broadcast": "numpy"},
                    ins=[port(0, "f32", d), port(1, "f32", p)], outs=[port(2, "f32", d)]),
              w.const(4, np.int64(1)),
              layer(5, "split", "Split", data={"num_splits": 4},
                    ins=[port(0, "f32", d), port(1, "i64", [])],
                    outs=[port(k, "f32", p) for k in range(2, 6)]),
              *[layer(lid, f"g{lid}", typ, ins=[port(0, "f32", p)], outs=[port(1, "f32", p)])
                for lid, typ in ((6, "Sigmoid"), (7, "Sigmoid"), (8, "Tanh"), (9, "Sigmoid"))],
              layer(10, "cat", "Concat", data={"axis": 1},
                    ins=[port(k, "f32", p) for k in range(4)], outs=[port(4, "f32", d)]),
              result(3, "f32", d), result(11, "f32", p)]
    edges = [(1, 0, 2, 0), (0, 0, 2, 1), (2, 2, 5, 0), (4, 0, 5, 1), (5, 2, 6, 0),
             (5, 3, 7, 0), (5, 4, 8, 0), (5, 5, 9, 0), (6, 1, 10, 0), (7, 1, 10, 1),
             (8, 1, 10, 2), (9, 1, 10, 3), (10, 4, 3, 0), (9, 1, 11, 0)]
    pm = pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 3, 1, stride=4, part=4) + pm_out(3, 11)
    text = ti_net(pm, body=graph(layers, edges), out_t=24, dims_last=p,
                  ins=[port(0, "f32", [2, 6]), port(1, "f32", d)],
                  outer=[param(0, "X", "f32", [2, 6]), param(1, "A0", "f32", d)])
    return write(tmp_path, text, w)


def test_split_sigmoids_are_one_sigmoid_with_the_same_values(tmp_path, monkeypatch):
    """Sigmoid(p0) and Sigmoid(p1) become one Sigmoid of the Split's input (the result
    Sigmoid(p3) keeps its own): the same outputs as the steps, bit for bit, also at
    exp's extremes."""
    xml = _gates_ti(tmp_path)
    x = np.array([[0.0, -0.0, 90.0, -90.0, 3.5, -17.25],
                  [1e-8, -1e-8, 20.0, -20.0, 0.5, np.inf]], np.float32)
    inputs = {"X": x, "A0": np.array([[0.25, -2.0, 1.0, 4.0], [-1.0, 0.0, 2.0, -3.0]],
                                     np.float32)}
    plans = record_plans(monkeypatch)
    got = read_model(xml)(inputs)
    (p,) = plans
    (fs,) = p._fast.values()
    assert fs.compiled == len(p.loop) and len(fs.runners) == len(p.loop) - 1
    with monkeypatch.context() as m:
        _no_compiling(m)
        ref = read_model(xml)(inputs)
    for k, v in ref.items():
        assert got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)

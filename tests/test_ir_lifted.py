"""TensorIterator and Loop bodies run through their whole-sequence plan (mli.ir.lifted)
against the same bodies stepped one iteration at a time (the plan switched off).

Element-wise ops, reshapes and per-iteration fallbacks compute the same float operations
on the same operands, and a cell run over the whole sequence computes what its steps
compute (in C where the step is in C, with the numpy runner where the step is numpy), so
the outputs must agree bit for bit.  Only a MatMul by an invariant matrix, which becomes
one product over all iterations, may round otherwise (BLAS may pick other kernels for a
matrix than for the per-iteration products): there the outputs agree within RTOL/ATOL
(a few float32 ulp carried through the recurrence, the float runners' own tolerance in
test_ir_float_rnn)."""
import numpy as np
import pytest

from ir_loop_cases import case_inputs, case_named, looped_cases, record_plans

from mli.ir import lifted, read_model

RTOL, ATOL = 1e-5, 2e-6
# float16 outputs (computed in float32): an ulp of float32 apart may round to
# neighbouring float16 values, one float16 ulp (2^-10 relative) apart
F16_TOL = {"rtol": 2.0 ** -10, "atol": 2.0 ** -24}


CASES = looped_cases()
if not CASES:
    pytest.skip("shared/vectors not found", allow_module_level=True)


def _run(path, case, planned, monkeypatch, plans=None):
    inputs = case_inputs(path, case)
    made = record_plans(monkeypatch, planned)
    out = read_model(path / f"{case['name']}.xml")(inputs)
    if plans is not None:
        plans.extend(made)
    return out


@pytest.mark.parametrize("path,case", CASES, ids=[c["name"] for _, c in CASES])
def test_planned_equals_stepped(path, case, monkeypatch):
    plans = []
    got = _run(path, case, True, monkeypatch, plans)
    ref = _run(path, case, False, monkeypatch)
    batched = any(p and any(s[4].type == "MatMul" for s in p.lift) for p in plans)
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        if batched:
            tol = F16_TOL if v.dtype == np.float16 else {"rtol": RTOL, "atol": ATOL}
            np.testing.assert_allclose(got[k], v, err_msg=k, **tol)
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_har_ti_runs_one_sequence(monkeypatch):
    """The HAR LSTMCell TI (torch's sequence-to-TI conversion): the iteration counter,
    the length masks and the input Squeeze are planned as sequence steps, the recurrence
    is the cell with the Selects of its states; in a call the masks pick the cell's
    states in every iteration, so the cell runs as one sequence (never stepped)."""
    path, case = case_named(CASES, "pt_har_lstm__torch_static_ti_fp16")
    plans = []
    stepped = []
    monkeypatch.setattr(lifted.LiftedPlan, "_step", lambda *a: stepped.append(a))
    got = _run(path, case, True, monkeypatch, plans)
    assert len(plans) == 2 and all(plans) and not stepped
    for p in plans:
        assert len(p.counters) == 1
        assert {s[4].type for s in p.lift} == {"Greater", "Equal", "Squeeze", "Add"}
        assert {s[4].type for s in p.loop} == {"LSTMCell", "Select", "Unsqueeze"}
        assert p.cell[4].type == "LSTMCell"
    monkeypatch.undo()
    ref = _run(path, case, False, monkeypatch)
    for k, v in ref.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


@pytest.mark.parametrize("step", [1, 2, -1, -2])
def test_chunks_are_the_drivers_slices(step):
    x = np.arange(2 * 8 * 3).reshape(2, 8, 3)
    size, n = abs(step), 8 // abs(step)
    first = 0 if step > 0 else 8 - size
    got = lifted._chunks(x, 1, n, first, step, size)
    for k in range(n):
        s = first + k * step
        np.testing.assert_array_equal(got[k], x[:, s:s + size])


def test_counter_wraps_like_repeated_adds():
    init, c = np.array([2**31 - 3], np.int32), np.array([1], np.int32)
    got = lifted._counter(init, c, 6)
    v, want = init, []
    with np.errstate(over="ignore"):
        for _ in range(6):
            want.append(v)
            v = v + c
    np.testing.assert_array_equal(got, np.stack(want))


def test_keras_loop_condition_from_its_counters(monkeypatch):
    """A Keras LSTM Loop (trip count far beyond the sequence, the condition from two
    counters): the plan finds the stop from the counters alone, and the input product
    of every step is one MatMul."""
    path, case = case_named(CASES, "keras_lstm_seq__keras_direct_fp32")
    plans = []
    _run(path, case, True, monkeypatch, plans)
    (p,) = plans
    assert p.is_loop and len(p.counters) == 2
    assert "MatMul" in {s[4].type for s in p.lift} and "Gather" in {s[4].type for s in p.lift}
    assert {s[4].type for s in p.cond_steps} <= {"Add", "Less", "LogicalAnd"}


def test_loop_with_a_recurrent_condition_is_stepped_by_its_plan(monkeypatch):
    """An early-exit Loop (its condition reads the running sum): the plan steps the
    recurrence with the condition, stops where it turns false, and gives what the
    driver's stepping gives, bit for bit."""
    path, case = case_named(CASES, "mo_onnx_loop_early_exit__mo_newfe_fp32")
    plans = []
    got = _run(path, case, True, monkeypatch, plans)
    (p,) = plans
    assert p is not None and p.dynamic
    ref = _run(path, case, False, monkeypatch)
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def _unary_ti(tmp_path, ops):
    """A TensorIterator over X [2, 6] (axis 1) whose body adds ``ops``(x_t) to a merged
    accumulator: ``ops`` is [(type, data, output element type)], applied in turn."""
    from test_ir import graph, layer, param, pm_in, pm_out, port, result, ti_net, write
    d = [2, 1]
    layers = [param(0, "x_t", "f32", d), param(1, "acc_in", "f32", d)]
    edges, src, et = [], 0, "f32"
    for k, (typ, data, out_et) in enumerate(ops):
        lid = 4 + k
        layers.append(layer(lid, f"op{k}", typ, data=data, ins=[port(0, et, d)],
                            outs=[port(1, out_et, d)]))
        edges.append((src, 0 if src == 0 else 1, lid, 0))
        src, et = lid, out_et
    layers += [layer(2, "acc", "Add", data={"auto_broadcast": "numpy"},
                     ins=[port(0, "f32", d), port(1, "f32", d)], outs=[port(2, "f32", d)]),
               result(3, "f32", d)]
    edges += [(src, 0 if src == 0 else 1, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)]
    pm = pm_in(0, 0, 1) + pm_in(1, 1) + pm_out(2, 3, 1) + pm_out(3, 3)
    return write(tmp_path, ti_net(pm, body=graph(layers, edges)))


def _both_ways(xml, inputs, monkeypatch, planned):
    plans = record_plans(monkeypatch, planned)
    return read_model(xml)(inputs), plans


def test_a_warning_while_lifting_steps_the_body(tmp_path, monkeypatch):
    """exp overflows in iteration 3 only: lifting Exp over the sequence warns, so the call
    is stepped and warns there, once, as without the plan."""
    xml = _unary_ti(tmp_path, [("Exp", None, "f32")])
    x = np.zeros((2, 6), np.float32)
    x[1, 3] = 100.0
    inputs = {"X": x, "A0": np.zeros((2, 1), np.float32)}
    out = {}
    for planned in (True, False):
        with pytest.warns(RuntimeWarning, match="overflow") as record:
            out[planned], plans = _both_ways(xml, inputs, monkeypatch, planned)
        assert len(record) == 1 and (plans[0] is not None) == planned
    for k in out[False]:
        np.testing.assert_array_equal(out[True][k], out[False][k])


def test_an_error_while_lifting_is_raised_by_stepping(tmp_path, monkeypatch):
    """Convert f32 -> i32 refuses a fractional value in iteration 4: with the plan the
    error is the one stepping raises (the same message, naming the layer)."""
    xml = _unary_ti(tmp_path, [("Convert", {"destination_type": "i32"}, "i32"),
                               ("Convert", {"destination_type": "f32"}, "f32")])
    x = np.ones((2, 6), np.float32)
    x[0, 4] = 0.5
    inputs = {"X": x, "A0": np.zeros((2, 1), np.float32)}
    msgs = []
    for planned in (True, False):
        with pytest.raises(Exception, match="non-integral") as e:
            _both_ways(xml, inputs, monkeypatch, planned)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1] and "op0" in msgs[0]
    x[0, 4] = 2.0      # and with integral values the plan gives the stepped result
    got, plans = _both_ways(xml, inputs, monkeypatch, True)
    ref, _ = _both_ways(xml, inputs, monkeypatch, False)
    assert plans[0] is not None and {s[4].type for s in plans[0].lift} == {"Convert"}
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])

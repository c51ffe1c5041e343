"""The planned IR program: constant folding, loop-invariant steps of TI/Loop bodies, the
whole-sequence runners of the recurrent Sequence ops (bit-identical to stepping them) and
the fixed-point quantizer (identical to MLI's helper)."""

import threading

import numpy as np
import pytest

from conftest import manifest_cases
from test_ir import Weights, layer, net, param, port, result, write

from mli import Tensor
from mli.ir import IRError, read_model
from mli.ir.ops import recurrent as rec
from mli.ir.ops.elementwise import _sigmoid

CASES_DIR, CASES = manifest_cases("ov_real", "OpenVINO real-converter cases")


# --------------------------------------------------------------------------- runners
def _weights(rng, kind, N, M, lbr):
    g = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    nb = 4 if lbr else g
    w = (rng.standard_normal((g * M, N)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((g * M, M)) * 0.5).astype(np.float32)
    b = (rng.standard_normal(nb * M) * 0.5).astype(np.float32)
    return w, r, b


def _stepper(kind, M, clip, lbr, w, r, b):
    if kind == "lstm":
        acts = [_sigmoid, np.tanh, np.tanh]
        return lambda x, h, c: rec.lstm_step(acts, clip, M, x, h, c, w, r, b)
    if kind == "gru":
        return lambda x, h: rec.gru_step([_sigmoid, np.tanh], clip, M, lbr, x, h, w, r, b)
    return lambda x, h: rec.rnn_step([np.tanh], clip, M, x, h, w, r, b)


def _runner(kind, M, clip, lbr, w, r, b):
    if kind == "lstm":
        return rec._lstm_runner(M, clip, w, r, b)
    if kind == "gru":
        return rec._gru_runner(M, clip, lbr, w, r, b)
    return rec._rnn_runner(M, clip, np.tanh, w, r, b)


@pytest.mark.parametrize("kind,lbr", [("lstm", False), ("gru", False), ("gru", True),
                                      ("rnn", False)])
@pytest.mark.parametrize("B", [1, 3])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("clip", [0.0, 0.7])
@pytest.mark.parametrize("lengths", ["full", "mixed"])
def test_sequence_runner_is_bit_identical_to_stepping(kind, lbr, B, reverse, clip, lengths):
    rng = np.random.default_rng(hash((kind, lbr, B, reverse, clip, lengths)) % 2**32)
    N, M, T = 5, 7, 9
    w, r, b = _weights(rng, kind, N, M, lbr)
    x = rng.uniform(-2, 2, (B, T, N)).astype(np.float32)
    states = [rng.uniform(-1, 1, (B, M)).astype(np.float32)
              for _ in range(2 if kind == "lstm" else 1)]
    lens = np.full(B, T) if lengths == "full" else rng.integers(0, T + 1, B)
    if lengths == "mixed":
        lens[0] = T - 2
    want_y, want_states = rec.run_sequence(_stepper(kind, M, clip, lbr, w, r, b), x, states,
                                           lens, reverse)
    y = np.zeros((B, T, M), np.float32)
    got = rec._run_fast(_runner(kind, M, clip, lbr, w, r, b), x, states, lens, reverse, y)
    got = got if isinstance(got, tuple) else (got,)
    assert y.tobytes() == want_y.tobytes()
    for g, s in zip(got, want_states):
        assert np.asarray(g).tobytes() == np.asarray(s).tobytes()


def test_sequence_runner_zero_steps_keeps_the_states():
    rng = np.random.default_rng(1)
    w, r, b = _weights(rng, "lstm", 3, 4, False)
    h, c = rng.uniform(-1, 1, (2, 4)).astype(np.float32), rng.uniform(-1, 1, (2, 4)).astype(
        np.float32)
    y = np.zeros((2, 0, 4), np.float32)
    got = rec._run_fast(rec._lstm_runner(4, 0.0, w, r, b), np.zeros((2, 0, 3), np.float32),
                        [h, c], np.zeros(2, np.int64), False, y)
    assert np.array_equal(got[0], h) and np.array_equal(got[1], c)


# --------------------------------------------------------------------------- folding
def _convert_model(tmp_path, values, dst="i32"):
    """Const f32 -> Convert -> Result, plus Parameter x + that constant -> Result."""
    w = Weights()
    c = np.asarray(values, np.float32)
    d = list(c.shape)
    text = net([param(0, "x", "f32", d), w.const(1, c),
                layer(2, "cvt", "Convert", data={"destination_type": dst},
                      ins=[port(0, "f32", d)], outs=[port(1, dst, d, "k")]),
                layer(3, "add", "Add", ins=[port(0, "f32", d), port(1, "f32", d)],
                      outs=[port(2, "f32", d, "y")]),
                result(4, dst, d), result(5, "f32", d)],
               [(1, 0, 2, 0), (2, 1, 4, 0), (0, 0, 3, 0), (1, 0, 3, 1), (3, 2, 5, 0)])
    return read_model(write(tmp_path, text, w))


def test_constant_steps_are_folded_and_results_are_fresh_copies(tmp_path):
    m = _convert_model(tmp_path, [1.0, -2.0, 3.0])
    assert [s[4].type for s in m._program.steps] == ["Add"]        # Convert folded
    x = np.ones(3, np.float32)
    a, b = m({"x": x}), m({"x": x})
    assert a["k"].dtype == np.int32 and a["k"].tolist() == [1, -2, 3]
    assert a["k"] is not b["k"] and a["k"].flags.writeable
    a["k"][0] = 99                                                  # not the planned value
    assert m({"x": x})["k"].tolist() == [1, -2, 3]


def test_a_constant_step_that_fails_still_fails_when_run(tmp_path):
    m = _convert_model(tmp_path, [1.5, 2.0, 3.0])                   # not integral: refused
    assert "Convert" in [s[4].type for s in m._program.steps]      # not folded
    with pytest.raises(IRError, match="cvt.*non-integral"):
        m({"x": np.ones(3, np.float32)})


# --------------------------------------------------------------------------- hoisting
def _case(name):
    case = next(c for c in CASES if c["name"] == name)
    with np.load(CASES_DIR / f"{name}.npz") as z:
        inputs = {i["name"]: z[i["npz_key"]] for i in case["inputs"]}
        expected = {o["name"]: z[o["npz_key"]] for o in case["outputs"]}
    return read_model(CASES_DIR / f"{name}.xml"), inputs, expected


def test_ti_body_invariant_steps_run_once_and_match_stepping_everything():
    model, inputs, _ = _case("pt_har_lstm__torch_static_ti_fp16")
    got = model(inputs)
    tis = [s[0] for s in model._program.steps if s[4].type == "TensorIterator"]
    assert tis
    bodies = [s[4].body for s in model._program.steps if s[4].type == "TensorIterator"]
    for body in bodies:
        hoisted = body.program().hoisted(
            [i for i, p in enumerate(body.parameters)])            # everything invariant
        assert hoisted.pre                                          # something is hoisted
    # the same model with every body stepped in full (no hoisting) gives the same bits
    from mli.ir.ops import subgraph
    start = subgraph._LoopBody.start
    try:
        subgraph._LoopBody.start = lambda self, arrays, inputs: False
        plain = read_model(CASES_DIR / "pt_har_lstm__torch_static_ti_fp16.xml")(inputs)
    finally:
        subgraph._LoopBody.start = start
    for k in got:
        assert got[k].tobytes() == plain[k].tobytes()


def test_one_model_in_two_threads():
    model, inputs, _ = _case("pt_har_lstm__torch_static_ti_fp16")
    want = model(inputs)
    out, errors = [], []

    def work():
        try:
            for _ in range(3):
                out.append(model(inputs))
        except Exception as e:          # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for o in out:
        for k in want:
            assert o[k].tobytes() == want[k].tobytes()


# --------------------------------------------------------------------------- quantizer
@pytest.mark.parametrize("kind", ["fx16", "fx8"])
def test_fixed_point_quantizer_matches_mli_helper(kind):
    from mli.fixed_point.backends.mli1 import quantize as _quantize
    from mli.graph import KernelBody

    rng = np.random.default_rng(3)
    M, N = 4, 3
    body = KernelBody.from_float("lstm", rng.normal(0, .3, (4, M, N + M)),
                                 rng.normal(0, .1, (4, M)), kind=kind, in_frac=5, cell_frac=3)
    el = "fx8" if kind == "fx8" else "fx16"
    edge = np.array([0.0, -0.0, 0.5, -0.5, 1 / 64, -1 / 64, 1 / 32 - 1e-9, 3.999, -4.0, 1e9,
                     -1e9, 2.0 ** -6, -(2.0 ** -6), 1e-40], np.float32)
    for what, frac in (("x", 5), ("h", body.fracs["h"]), ("c", 3)):
        for v in (edge, rng.normal(0, 3, (2, 5, 7)).astype(np.float32),
                  rng.normal(0, 3, 11).astype(np.float64)):
            want = Tensor.from_float(v, el, frac, saturate=True).numpy()
            got = _quantize(body, v, what)
            assert got.dtype == want.dtype and np.array_equal(got, want), (what, v)
    with pytest.raises(ValueError, match="NaN or infinity"):
        _quantize(body, np.array([1.0, np.nan], np.float32), "x")

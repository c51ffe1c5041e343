"""TensorIterator bodies run through their whole-sequence plan (mli.ir.lifted) against the
same bodies stepped one iteration at a time (the plan switched off).

Element-wise ops, reshapes and per-iteration fallbacks compute the same float operations
on the same operands, so those TIs must agree bit for bit.  A MatMul by an invariant
matrix becomes one product over all iterations, which BLAS may round differently from
the per-iteration products: there the outputs agree within RTOL/ATOL (a few float32 ulp
carried through the recurrence, the float runners' own tolerance in test_ir_float_rnn)."""
import numpy as np
import pytest

from conftest import SHARED

from mli.ir import lifted, read_model
from mli.ir.ops import subgraph

RTOL, ATOL = 1e-5, 2e-6


def _ti_cases():
    import json
    out = []
    for folder in ("ov_real", "ov_ti_loop"):
        path = SHARED / "vectors" / folder
        if not (path / "manifest.json").is_file():
            continue
        for c in json.loads((path / "manifest.json").read_text(encoding="utf-8"))["cases"]:
            ops = c.get("ops") or {}
            is_ti = any(k.startswith("TensorIterator") for k in ops) or c["name"].startswith("ti_")
            if is_ti and c.get("category") not in ("error", "unsupported"):
                out.append((path, c))
    return out


CASES = _ti_cases()
if not CASES:
    pytest.skip("shared/vectors not found", allow_module_level=True)


def _run(path, case, planned, monkeypatch, plans=None):
    with np.load(path / f"{case['name']}.npz") as z:
        inputs = {i["name"]: z[i["npz_key"]] for i in case["inputs"]}

    def plan_for(program, ti):
        p = lifted.plan_for(program, ti) if planned else None
        if plans is not None:
            plans.append(p)
        return p
    monkeypatch.setattr(subgraph, "plan_for", plan_for)
    return read_model(path / f"{case['name']}.xml")(inputs)


@pytest.mark.parametrize("path,case", CASES, ids=[c["name"] for _, c in CASES])
def test_planned_equals_stepped(path, case, monkeypatch):
    plans = []
    got = _run(path, case, True, monkeypatch, plans)
    ref = _run(path, case, False, monkeypatch)
    batched = any(p and any(s[4].type == "MatMul" for s in p.lift) for p in plans)
    for k, v in ref.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        if batched:
            np.testing.assert_allclose(got[k], v, rtol=RTOL, atol=ATOL, err_msg=k)
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_har_ti_steps_only_the_recurrence(monkeypatch):
    """The HAR LSTMCell TI (torch's sequence-to-TI conversion): the iteration counter,
    the length masks and the input Squeeze run once per call, the cell and the Selects
    of its states per iteration."""
    path, case = next(((p, c) for p, c in CASES if c["name"] == "pt_har_lstm__torch_static_ti_fp16"),
                      (None, None))
    if case is None:
        pytest.skip("the HAR TI case is not in ov_real")
    plans = []
    _run(path, case, True, monkeypatch, plans)
    assert len(plans) == 2 and all(plans)
    for p in plans:
        assert len(p.counters) == 1
        assert {s[4].type for s in p.lift} == {"Greater", "Equal", "Squeeze", "Add"}
        assert {s[4].type for s in p.loop} == {"LSTMCell", "Select", "Unsqueeze"}


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

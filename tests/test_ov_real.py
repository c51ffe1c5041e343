"""The IRs real converters wrote (shared/vectors/ov_real) through mli.tools.ovcases, and the
fixed-point conversion of their recurrent ops where the manifest asks for it."""
import contextlib

import numpy as np
import pytest

from conftest import manifest_cases

CASES_DIR, CASES = manifest_cases("ov_real", "OpenVINO real-converter cases")

from mli.ir import read_model  # noqa: E402
from mli.tools.ovcases import run_case  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case):
    result = run_case(CASES_DIR, case)
    assert result.name == case["name"] and result.category == case["category"]
    assert result.passed, result.message


def test_lowlatency2_state_kept_and_reset():
    """ReadValue/Assign: a second call continues from the first's state; reset_state
    starts again (the expected values are those of one call after a reset)."""
    case = next(c for c in CASES if "lowlatency2" in c["name"])
    with np.load(CASES_DIR / f"{case['name']}.npz") as z:
        inputs = {i["name"]: z[i["npz_key"]] for i in case["inputs"]}
        expected = {o["name"]: z[o["npz_key"]] for o in case["outputs"]}
    model = read_model(CASES_DIR / f"{case['name']}.xml")
    tol = case.get("tolerance") or {"rtol": 1e-4, "atol": 1e-5}
    first = model(inputs)
    for k, v in expected.items():
        np.testing.assert_allclose(first[k], v, **tol)
    assert model.state
    second = model(inputs)
    assert any(not np.allclose(second[k], first[k], **tol) for k in first)
    model.reset_state()
    again = model(inputs)
    for k in first:
        np.testing.assert_array_equal(again[k], first[k])


FIXED = [c for c in CASES if c.get("fixed_point")]


@pytest.mark.parametrize("case", FIXED, ids=[c["name"] for c in FIXED])
def test_fixed_point_sn(case):
    """fx16 on the case inputs reaches the manifest's min_sn_db on every listed output."""
    from mli.fixed_point import to_fixed_point
    from mli.metrics import sn_db
    fp = case["fixed_point"]
    with np.load(CASES_DIR / f"{case['name']}.npz") as z:
        inputs = {i["name"]: z[i["npz_key"]] for i in case["inputs"]}
    model = read_model(CASES_DIR / f"{case['name']}.xml")
    fpm = to_fixed_point(model, inputs, fp.get("kind", "fx16"))
    ref = model(inputs)
    with _counting_kernel_calls() as calls:
        got = fpm(inputs)
    sn = {o: sn_db(ref[o], got[o]) for o in fp["outputs"]}
    assert min(sn.values()) >= fp["min_sn_db"], sn
    # the recurrent ops really ran on the MLI kernels (the shape-step cache once kept
    # the float ops in place: no kernel call, S/N = inf); an output may still be exact
    # (a state read before the recurrent op, as in the LowLatency2 cases)
    assert calls, "no MLI kernel was called"
    assert any(np.isfinite(v) for v in sn.values()), sn


@contextlib.contextmanager
def _counting_kernel_calls():
    """Count calls of the kernel functions of mli.kernels and mli.rows (the
    fixed-point bodies look them up per call)."""
    from mli import kernels, rows
    calls = []
    saved = [(mod, n, f) for mod in (kernels, rows) for n, f in vars(mod).items()
             if callable(f) and n.startswith(("lstm_cell_", "basic_rnn_cell_", "fully_connected_",
                                              "eltwise_", "sigm_", "tanh_"))]

    def wrap(name, f):
        def counted(*a, **kw):
            calls.append(name)
            return f(*a, **kw)
        return counted
    for mod, n, f in saved:
        setattr(mod, n, wrap(n, f))
    try:
        yield calls
    finally:
        for mod, n, f in saved:
            setattr(mod, n, f)

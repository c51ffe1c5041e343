"""mli.reference against the shared MLI 1.1 reference vectors, bit for bit.

Every case of ``shared/vectors/mli11`` with status OK and a defined output,
for the kernels in ``RUNNERS``, is rebuilt from its npz and compared exactly:
once with the default (convergent) rounding against ``expected_*``, once
with ``rounding="up"`` against ``expected_*_if_round_up`` where present.
Ids are the case names.  Shared data: ``$MLI_SHARED`` or ``<root>/../shared``.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from mli import reference as ref

SHARED = Path(os.environ.get("MLI_SHARED")
              or Path(__file__).resolve().parents[1].parent / "shared")
VECTORS = SHARED / "vectors" / "mli11"
KINDS = {"fx8", "fx16", "fx8w16d"}


def _meta(z):
    return json.loads(str(z["meta_json"]))


def _shape(meta, role):
    return tuple(int(v) for v in meta[f"{role}_shape"][:meta[f"{role}_rank"]])


def _tensor(z, meta, role):
    """(data, frac) of tensor `role`: dense row-major data in its logical shape.

    Rank-0 tensors (eltwise scalars) come back as 0-d arrays built from
    ``R_scalar``; strided layouts are refused here (see ``_fc``).
    """
    dtype = {0: np.int8, 1: np.int16}[meta[f"{role}_el_type"]]
    frac = meta[f"{role}_frac"]
    if meta[f"{role}_rank"] == 0:
        return np.array(meta[f"{role}_scalar"], dtype=dtype), frac
    assert not any(meta[f"{role}_mem_stride"]), f"{role}: strided layout not handled"
    shape = _shape(meta, role)
    data = z[f"{role}_data"]
    assert data.dtype == dtype
    return data[:int(np.prod(shape))].reshape(shape), frac


def _fc(z, meta, rounding):
    x, f_in = _tensor(z, meta, "in")
    b, f_b = _tensor(z, meta, "bias")
    stride = meta["weights_mem_stride"][0]
    if stride:                                   # rows padded: SPEC 5, R = mem_stride[0]
        w, f_w = z["weights_data"], meta["weights_frac"]
    else:
        w, f_w = _tensor(z, meta, "weights")
    y = ref.fully_connected(meta["kind"], x, f_in, w, f_w, b, f_b, meta["out_frac"],
                            rounding, row_stride=stride or None)
    return {"out": (y, meta["out_frac"])}


def _rnn(z, meta, rounding):
    args = [_tensor(z, meta, r) for r in ("in", "prev_out", "weights", "bias")]
    flat = [v for pair in args for v in pair]
    y, f_y, ir = ref.basic_rnn_cell(meta["kind"], *flat, meta["cfg_mode"], meta["cfg_act"],
                                    meta["out_frac"], rounding, return_ir=True)
    res = {"out": (y, f_y)}
    if meta.get("expected_ir_written"):           # BATCH_TO_LAST: first K IR elements
        res["ir"] = (ir, None)
    return res


def _lstm(z, meta, rounding):
    args = [_tensor(z, meta, r) for r in ("in", "prev_out", "weights", "bias", "cell")]
    flat = [v for pair in args for v in pair]
    y, f_y, cell, ir = ref.lstm_cell(meta["kind"], *flat, meta["cfg_mode"], meta["cfg_act"],
                                     rounding)
    return {"out": (y, f_y), "cell": (cell, meta["cell_frac"]),
            "ir": (ir, ref.lstm.gate_frac(meta["kind"]) - 3)}


def _activation(func):
    def run(z, meta, rounding):
        x, f_in = _tensor(z, meta, "in")
        return {"out": func(meta["kind"], x, f_in, rounding)}
    return run


def _relu(z, meta, rounding):
    x, f_in = _tensor(z, meta, "in")
    return {"out": (ref.relu(x, f_in, meta["relu_type"]), f_in)}


def _eltwise(op):
    def run(z, meta, rounding):
        a, f_a = _tensor(z, meta, "in1")
        b, f_b = _tensor(z, meta, "in2")
        return {"out": ref.eltwise(op, meta["kind"], a, f_a, b, f_b, meta["out_frac"],
                                   rounding)}
    return run


def _convert(z, meta, rounding):
    x, f_in = _tensor(z, meta, "in")
    bits = {0: 8, 1: 16}[meta["out_el_type"]]
    return {"out": (ref.convert_tensor(x, f_in, bits, meta["out_frac"], rounding),
                    meta["out_frac"])}


def _float_to_fx(z, meta, rounding):
    bits = {0: 8, 1: 16}[meta["out_el_type"]]
    return {"out": (ref.float_to_fx(z["src_float32"], bits, meta["out_frac"]),
                    meta["out_frac"])}


def _fx_to_float(z, meta, rounding):
    x, f_in = _tensor(z, meta, "in")
    assert x.size <= meta["dst_size"]
    return {"float32": ref.fx_to_float(x, f_in)}


RUNNERS = {
    "fully_connected": _fc, "basic_rnn_cell": _rnn, "lstm_cell": _lstm,
    "tanh": _activation(ref.tanh), "sigm": _activation(ref.sigm), "relu": _relu,
    "eltwise_add": _eltwise("add"), "eltwise_sub": _eltwise("sub"),
    "eltwise_mul": _eltwise("mul"), "convert_tensor": _convert,
    "float_to_fx_tensor": _float_to_fx, "fx_tensor_to_float": _fx_to_float,
}


def _case_params():
    if not VECTORS.is_dir():
        return [pytest.param(None, id="shared-vectors-missing", marks=pytest.mark.skip(
            reason=f"shared vectors not found at {VECTORS} (set MLI_SHARED)"))]
    params = []
    for path in sorted(VECTORS.glob("*.npz")):
        with np.load(path) as z:
            meta = _meta(z)
        if (meta["kernel"] in RUNNERS and meta["expected_status"] == 0
                and meta.get("output_defined")):
            params.append(pytest.param(path, id=path.stem))
    return params


CASES = _case_params()


def _check(path, rounding):
    with np.load(path) as z:
        meta = _meta(z)
        got = RUNNERS[meta["kernel"]](z, meta, rounding)
        alt = "_if_round_up" if rounding == "up" else ""
        if "float32" in got:
            expected = z["expected_float32"]
            np.testing.assert_array_equal(got["float32"].reshape(-1).view(np.uint32),
                                          expected.view(np.uint32))
            return
        for part in ("out", "cell"):
            if part not in got:
                continue
            y, frac = got[part]
            expected = z[f"expected_{part}_data{alt}"] if f"expected_{part}_data{alt}" in z \
                else z[f"expected_{part}_data"]
            assert y.dtype == expected.dtype
            if f"expected_{part}_rank" in meta:          # helpers record no metadata
                assert y.shape == _shape(meta, f"expected_{part}")
                assert frac == meta[f"expected_{part}_frac"]
            np.testing.assert_array_equal(y.reshape(-1), expected, err_msg=part)
        if "ir" in got and rounding == "convergent":      # no round-up IR is recorded
            ir, frac = got["ir"]
            expected = z["expected_ir_data"]
            np.testing.assert_array_equal(np.asarray(ir).reshape(-1),
                                          expected[:np.size(ir)], err_msg="ir")
            if meta["kernel"] == "lstm_cell":
                assert frac == meta["expected_ir_frac"]


@pytest.mark.parametrize("path", CASES)
def test_vector(path):
    _check(path, "convergent")


@pytest.mark.parametrize("path", CASES)
def test_vector_round_up(path):
    _check(path, "up")

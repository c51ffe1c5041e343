"""The slow numpy model of MLI 2.0.2 (mli.reference.mli2) against MLI's own answers.

Every case of ``shared/vectors/mli20`` (``official/`` included) runs through
the reference in both rounding modes and must give MLI's status, LUT-creation
statuses, output elements, output metadata and LSTM cell exactly, and leave
every other byte of every buffer as it was.  The worked examples of
SPEC_MLI2.md check the building blocks on their own (no shared data needed).
"""
import zlib

import numpy as np
import pytest
from conftest import SHARED

from mli.reference import mli2 as R
from mli.reference.mli2.codes import _CONTAINER
from mli.reference.mli2.eltwise import _sa_factor
from mli.reference.mli2.fxmath import _i
from mli.reference.mli2.tensor import _offsets
from mli.reference.mli2_cases import expected, load_case, run_case

# numpy only: nothing here runs the C core, so the sanitizer pass (.ci/sanitize.sh) leaves it out
pytestmark = pytest.mark.numpy_only

MLI20 = SHARED / "vectors" / "mli20"
CASES = sorted(MLI20.glob("*.npz")) + sorted(MLI20.glob("official/*.npz"))
MODES = ("convergent", "up")


# ---------------------------------------------------------------------------
# The reference cases

def _untouched(meta, arrays, res):
    """Bytes of every buffer that the call must not change, compared with the case's
    initial data: all inputs, and the output and cell outside their elements."""
    problems = []
    written = {}                          # role -> (element offsets, element size)
    if res.status == R.OK:
        touched = ["out"] + (["cell"] if meta["kernel"] == "lstm_cell" else [])
        for name in touched:
            t = res.tensors[name]
            role = name
            if name == "out" and meta.get("out_aliases_in"):   # the output lives in in's buffer
                role = "in0" if meta["kernel"] == "rnn_dense" else "in"
            written[role] = (_offsets(t.dims(), t.strides()).reshape(-1),
                             np.dtype(_CONTAINER[t.el_type]).itemsize)
    for role, t in res.tensors.items():
        if t is None or t.buf is None or f"{role}_data" not in arrays:
            continue
        before = np.ascontiguousarray(arrays[f"{role}_data"]).view(np.uint8).reshape(-1)
        after = t.buf.raw[:before.size].copy()
        if role in written:
            offs, size = written[role]
            mask = np.ones(before.size, dtype=bool)
            for k in range(size):
                mask[offs * size + k] = False
            before, after = before[mask], after[mask]
        if not np.array_equal(before, after):
            problems.append(f"{role}: bytes outside the outputs changed")
    return problems


@pytest.mark.skipif(not CASES, reason=f"MLI 2.0.2 reference cases not found at {MLI20} "
                                      "(set MLI_SHARED to the shared folder; CI always has it)")
@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem if p.parent == MLI20 else f"official/{p.stem}")
def test_case(path):
    meta, arrays = load_case(path)
    for rounding in MODES:
        res = run_case(meta, arrays, rounding)
        where = f"{meta['case_id']} ({rounding}, {meta.get('mutation') or meta['description']})"
        assert res.status == meta["expected_status"], where
        if "expected_lut_create_status" in meta:
            assert res.lut_status == meta["expected_lut_create_status"], where
        assert not _untouched(meta, arrays, res), where
        if not meta["output_defined"]:
            continue
        want = expected(meta, arrays, "out_data", rounding)
        assert res.out.shape == want.shape, where
        np.testing.assert_array_equal(res.out, want, err_msg=where)
        for key in ("rank", "shape", "mem_stride", "el_type", "frac_bits", "zero_point", "scale",
                    "scale_frac_bits", "sa_dim"):
            if f"expected_out_{key}" in meta:
                assert res.out_meta[key] == meta[f"expected_out_{key}"], f"{where}: out {key}"
        if meta["kernel"] == "lstm_cell":
            np.testing.assert_array_equal(res.cell, expected(meta, arrays, "cell_data", rounding),
                                          err_msg=f"{where}: cell")


# ---------------------------------------------------------------------------
# The worked examples of SPEC_MLI2.md

@pytest.mark.parametrize("x, n, up, conv", [
    (5, 1, 3, 2), (-5, 1, -2, -2), (7, 1, 4, 4), (-7, 1, -3, -4), (10, 2, 3, 2), (6, 2, 2, 2),
    (2**31 - 1, 1, 2**30 - 1, 2**30),         # UP adds the half with saturation
    (-5, 40, 0, 0),                           # n > W-1: 0, also for negative x
    (3, -2, 12, 12), (2**30, -3, 2**31 - 1, 2**31 - 1),   # negative n: saturating left shift
])
def test_rshr(x, n, up, conv):
    assert _i(R.rshr(x, n, 32, "up")) == up
    assert _i(R.rshr(x, n, 32, "convergent")) == conv
    # the per-element path gives the same
    assert R.rshr([x, x], [n, n], 32, "up").tolist() == [up, up]
    assert R.rshr([x, x], [n, n], 32, "convergent").tolist() == [conv, conv]


def test_shifts_and_norm():
    assert R.norm32([0, -1, 1, 2**30, 2**30 - 1, -2**30, -2**30 - 1, -2**31]).tolist() == \
        [31, 31, 30, 0, 1, 1, 0, 0]
    assert R.shl([1, -1, 0, 5], 40, 32).tolist() == [2**31 - 1, -2**31, 0, 2**31 - 1]
    assert R.shl([-1], 31, 32).tolist() == [-2**31]
    assert R.asr([-5, 5], [1, 40], 32).tolist() == [-3, 0]
    assert R.wrap([32767 << 17], 32).tolist() == [-131072]          # fx16 bias truncation (7)
    assert R.add_sat([2**63 - 10, -2**63 + 10], [20, -20], 64).tolist() == [2**63 - 1, -2**63]
    assert R.rshr([2**62], 63, 64, "up").tolist() == [0]           # the half saturates: floor(MAX / 2^63)
    assert R.div_trunc(-7, 2) == -3


def test_bias_preround():
    assert R.bias_preround([100000, 65535, -1234567]).tolist() == [100000, 65534, -1234624]


@pytest.mark.parametrize("name, crc, total, first, last, at_offset", [
    ("tanh", 0x4CBBF8B6, -32767, [-32767, -32767, -32766, -32766, -32766, -32766],
     [32766] * 5 + [32767], 0),
    ("sigm", 0x589D26EB, 5226497, [1, 2, 2, 2, 2, 2], [32766] * 6, 16384),
])
def test_lut_tables(name, crc, total, first, last, at_offset):
    table = R.lut_table(name)
    assert zlib.crc32(table.astype("<i2").tobytes()) == crc
    assert int(table.astype(np.int64).sum()) == total
    assert table[:6].tolist() == first and table[-6:].tolist() == last
    size = R.get_lut_size(name)
    assert size == {"tanh": 688, "sigm": 640}[name] == 2 * table.size
    short = R.Lut(capacity=size - 1)
    assert R.create_lut(name, short) == R.NOT_ENGH_MEM
    assert short.type == R.FX_16 and short.table is None       # only the type is written
    lut = R.Lut(capacity=size)
    assert R.create_lut(name, lut) == R.OK
    assert lut.table[lut.input_offset] == at_offset and lut.out_frac_bits == 15


def _luts():
    tanh, sigm = R.Lut(capacity=688), R.Lut(capacity=640)
    R.create_lut("tanh", tanh)
    R.create_lut("sigm", sigm)
    return tanh, sigm


@pytest.mark.parametrize("rounding", MODES)
def test_transfer_examples(rounding):
    tanh, sigm = _luts()
    assert R.lut_lookup([4288, -4288, -1], 12, tanh, rounding).tolist() == [25576, -25576, -8]
    x = R.Tensor.from_array(np.array([5], np.int8), R.FX_8, frac_bits=5)
    y = R.Tensor.from_array(np.zeros(1, np.int8), R.FX_8)
    assert R.sigm("fx8", x, sigm, y, rounding) == R.OK
    assert y.read().tolist() == [69] and y.frac_bits == 7
    x = R.Tensor.from_array(np.array([10], np.int8), R.SA_8, zero_point=-3, scale=20000, scale_frac_bits=18)
    y = R.Tensor.from_array(np.zeros(1, np.int8), R.SA_8)
    assert R.tanh("sa8", x, tanh, y, rounding) == R.OK
    assert y.read().tolist() == [97] and y.sa() == R.SA_TANH_OUT


@pytest.mark.parametrize("rounding", MODES)
def test_fc_sa8_example(rounding):
    assert R.ratio(24000, 20, 30000, 19, rounding) == (26214, 16)
    assert R.mult(26214, 16, 20000, 22) == (2097120000, 40)
    x = R.Tensor.from_array(np.array([10, -20, 35]), R.SA_8, zero_point=5, scale=24000, scale_frac_bits=20)
    w = R.Tensor.from_array(np.array([[100, -50], [20, 7], [-127, 64]]), R.SA_8, scale=20000,
                            scale_frac_bits=22)
    b = R.Tensor.from_array(np.array([1000, -2000]), R.SA_32, scale=14648, scale_frac_bits=27)
    y = R.Tensor.from_array(np.zeros(2), R.SA_8, zero_point=-7, scale=30000, scale_frac_bits=19)
    assert R.fully_connected("sa8_sa8_sa32", x, w, b, R.FullyConnectedCfg(), y, rounding) == R.OK
    assert y.read().tolist() == [-12, -8]


def test_sa8_eltwise_examples():
    # MUL of a cell (3, 20000, 18) by a sigmoid output into the cell format
    assert _sa_factor(20000, 20000, 18 + 8 - 18, 31, "up") == (16384, 22)
    # the GRU's "1 - z": A = 255, c = 16384, shift 14 for both operands
    assert _sa_factor(1, 1, 0, 23, "convergent") == (16384, 14)
    z = np.array([-128, 0, 127])
    one_minus = R.sa_add(127, R.SA_SIGM_OUT, z, R.SA_SIGM_OUT, R.SA_SIGM_OUT, "up", sub=True)
    assert one_minus.tolist() == [127, -1, -128]                # -1 - z


def test_dense_rounds_each_input():
    inputs = [(np.array([3]), 1, np.array([[2]]), 1), (np.array([5]), 1, np.array([[2]]), 1)]
    for rounding, want in (("up", 5), ("convergent", 4)):
        assert R.dense_block("fx16", inputs, np.array([0]), 1, 0, rounding).tolist() == [want]


@pytest.mark.parametrize("rounding", MODES)
def test_lstm_example(rounding):
    """11.5: fx16, T = N = M = 1, act TANH: cell 212, output 2295 in both modes."""
    fx = R.FX_16
    x = R.Tensor.from_array(np.array([[8192]]), fx, 14)
    h = R.Tensor.from_array(np.array([-16384]), fx, 15)
    w_in = R.Tensor.from_array(np.array([16384, -8192, 4096, 32767]).reshape(4, 1, 1), fx, 15)
    w_out = R.Tensor.from_array(np.array([8192, 16384, 4096, -16384]).reshape(4, 1, 1), fx, 15)
    b = R.Tensor.from_array(np.array([512, -256, 8192, 0]).reshape(4, 1), fx, 14)
    cell = R.Tensor.from_array(np.array([1000]), fx, 11)
    out = R.Tensor.from_array(np.zeros((1, 1)), fx, 15)
    tanh, sigm = _luts()
    cfg = R.RnnCellCfg(results=R.RNN_OUT_ALL, act=R.RNN_ACT_TANH,
                       scratch_buf=R.Buffer.of(np.zeros(8, np.int16)), scratch_capacity=16)
    assert R.lstm_cell("fx16", x, h, w_in, w_out, b, tanh, sigm, cfg, cell, out, rounding) == R.OK
    assert cell.read().tolist() == [212] and out.read().tolist() == [[2295]]
    # the scratch is checked: 4 * M int16 elements
    cfg.scratch_capacity = 7
    assert R.lstm_cell("fx16", x, h, w_in, w_out, b, tanh, sigm, cfg, cell, out, rounding) == R.BAD_FUNC_CFG


def test_rounding_mode_is_checked():
    with pytest.raises(ValueError, match="rounding"):
        R.rshr(1, 1, 32, "conv")

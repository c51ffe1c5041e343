"""Every status path of the checks (SPEC.md section 12): the right MliError
subclass, .status, .argument and field, and nothing written on failure."""
import numpy as np
import pytest

import mli
from mli import Status, Tensor
from mli import _core
from mli.enums import VARIANT


def t16(shape, frac=10, fill=100):
    return Tensor(np.full(shape, fill, np.int16), frac)


def raw_like(t, **changes):
    """A raw tensor over a copy of t's buffer with some fields changed."""
    kw = dict(capacity=t.capacity, shape=t.shape4, rank=t.rank, mem_stride=t.mem_stride, el_type=t.el_type,
              frac_bits=t.frac_bits)
    kw.update(changes)
    buf = None if kw.pop("data_null", False) else np.frombuffer(bytes(t.base), np.uint8).copy()
    return Tensor.raw(buf, data_null=buf is None, **kw)


def strided_in():
    """A valid but non-contiguous [3, 4] input (rows 5 apart)."""
    return Tensor.raw(np.zeros(15, np.int16), shape=[3, 4], mem_stride=[5, 1], el_type=1, frac_bits=12)


def rnn_args(mode=1):
    x = t16((3, 4) if mode else (4,), 12)
    return dict(inp=x, prev_out=t16(5, 15), weights=t16((5, 9), 14), bias=t16(5, 14), mode=mode, act=1,
                ir=t16(5), out=Tensor(np.zeros(15, np.int16)))


def call_rnn(a):
    return _core.basic_rnn_cell(VARIANT["fx16"], a["inp"], a["prev_out"], a["weights"], a["bias"], a["mode"],
                                a["act"], a["ir"], a["out"])


RNN_CASES = [  # (id, mutation, status, argument)
    ("in_rank5", lambda a: a.update(inp=raw_like(a["inp"], rank=5)), Status.BAD_TENSOR, "in"),
    ("prev_out_zero_dim", lambda a: a.update(prev_out=raw_like(a["prev_out"], shape=[0])), Status.BAD_TENSOR,
     "prev_out"),
    ("weights_neg_stride", lambda a: a.update(weights=raw_like(a["weights"], mem_stride=[-1, 1])),
     Status.BAD_TENSOR, "weights"),
    ("weights_small_stride", lambda a: a.update(weights=raw_like(a["weights"], mem_stride=[8, 2])),
     Status.BAD_TENSOR, "weights"),
    ("bias_capacity", lambda a: a.update(bias=raw_like(a["bias"], capacity=8)), Status.NOT_ENGH_MEM, "bias"),
    ("out_null", lambda a: a.update(out=Tensor.raw(is_null=True)), Status.BAD_TENSOR, "out"),
    ("out_data_null", lambda a: a.update(out=Tensor.raw(data_null=True, capacity=30)), Status.BAD_TENSOR, "out"),
    ("in_strided", lambda a: a.update(inp=strided_in()), Status.INCOMPATEBLE_TENSORS,
     "in"),
    ("out_stride", lambda a: a.update(out=raw_like(a["out"], mem_stride=[4, 1])), Status.INCOMPATEBLE_TENSORS,
     "out"),
    ("b2l_no_ir", lambda a: a.update(mode=2, ir=None), Status.BAD_FUNC_CFG, "cfg"),
    ("b2l_ir_data_null", lambda a: a.update(mode=2, ir=Tensor.raw(data_null=True, capacity=10)),
     Status.BAD_FUNC_CFG, "cfg"),
    ("batch_rank1", lambda a: a.update(inp=t16(4, 12)), Status.BAD_FUNC_CFG, "in"),
    ("weights_rank", lambda a: a.update(weights=t16((5, 9, 1), 14)), Status.SHAPE_MISMATCH, "weights"),
    ("bias_vs_state", lambda a: a.update(bias=t16(4, 14), weights=t16((4, 9), 14)), Status.SHAPE_MISMATCH, "bias"),
    ("n_plus_m", lambda a: a.update(weights=t16((5, 10), 14)), Status.SHAPE_MISMATCH, "weights"),
    ("prev_out_rank2", lambda a: a.update(prev_out=t16((1, 5), 15)), Status.SHAPE_MISMATCH, "prev_out"),
    ("stacked_bias_rank", lambda a: a.update(mode=0, inp=t16(4, 12), weights=t16((2, 5, 9), 14)),
     Status.SHAPE_MISMATCH, "bias"),
    ("weights_vs_bias_type", lambda a: a.update(bias=Tensor(np.zeros(5, np.int8), 6)), Status.TYPE_MISMATCH,
     "bias"),
    ("in_vs_prev_type", lambda a: a.update(prev_out=Tensor(np.zeros(5, np.int8), 7)), Status.TYPE_MISMATCH,
     "prev_out"),
    ("bias_frac", lambda a: a.update(bias=t16(5, 27)), Status.INCOMPATEBLE_TENSORS, "bias"),
    ("b2l_out_capacity", lambda a: a.update(mode=2, out=Tensor(np.zeros(4, np.int16))), Status.NOT_ENGH_MEM, "out"),
    ("b2l_ir_capacity", lambda a: a.update(mode=2, ir=Tensor(np.zeros(4, np.int16))), Status.NOT_ENGH_MEM,
     "cfg.ir_tsr"),
    ("kind_type", lambda a: a.update(**{k: Tensor(np.zeros(a[k].shape, np.int8), a[k].frac_bits % 8)
                                        for k in ("inp", "prev_out", "weights", "bias")}),
     Status.TYPE_MISMATCH, "in"),
]


@pytest.mark.parametrize("name,mutate,status,argument", RNN_CASES, ids=[c[0] for c in RNN_CASES])
def test_rnn_status_paths(name, mutate, status, argument):
    a = rnn_args()
    mutate(a)
    before = None if a["out"].is_null or a["out"].data_null else bytes(a["out"].base)
    st = call_rnn(a)
    assert Status(st) == status
    assert _core.last_error()[2] == argument
    if before is not None:
        assert bytes(a["out"].base) == before  # nothing written on failure


def test_rnn_quirk_small_out_is_ok_but_not_written():
    """MLI 1.1 returns OK and overruns; mli-py returns OK and writes nothing."""
    a = rnn_args()
    buf = np.full(20, 7, np.int16)
    a["out"] = Tensor(buf)
    a["out"].capacity = 20  # 10 elements < 15 needed
    assert call_rnn(a) == 0
    assert _core.last_error()[8]  # flagged as an mli-py safety decision
    assert (buf == 7).all()


def test_python_wrapper_raises_typed_errors():
    x, h, w, b = t16((3, 4), 12), t16(6, 15), t16((5, 9), 14), t16(5, 14)
    with pytest.raises(mli.MliShapeMismatchError) as e:
        mli.basic_rnn_cell_fx16(x, h, w, b, mli.RnnCellConfig(mode=1))
    assert isinstance(e.value, ValueError) and e.value.status == Status.SHAPE_MISMATCH
    assert e.value.argument == "bias" and "MLI_STATUS_SHAPE_MISMATCH" in str(e.value)
    with pytest.raises(mli.MliTypeMismatchError) as e:
        mli.basic_rnn_cell_fx8(x, t16(5, 15), w, b, mli.RnnCellConfig(mode=1))
    assert isinstance(e.value, TypeError)
    with pytest.raises(mli.MliNotEnoughMemError) as e:
        mli.basic_rnn_cell_fx16(x, t16(5, 15), w, b, mli.RnnCellConfig(mode=1), out=Tensor(np.zeros(3, np.int16)))
    assert e.value.argument == "out" and e.value.mlipy_safety
    with pytest.raises(mli.MliBadFuncCfgError):
        mli.RnnCellConfig(mode=2**33)
    with pytest.raises(TypeError, match="prev_out"):
        mli.basic_rnn_cell_fx16(x, np.zeros(5, np.int16), w, b, mli.RnnCellConfig())


def lstm_args(mode=1):
    return dict(inp=t16((3, 4) if mode else (4,), 12), prev_out=t16(5, 15), weights=t16((4, 5, 9), 14),
                bias=t16((4, 5), 14), mode=mode, act=1, ir=t16(20), cell=t16(5, 11),
                out=Tensor(np.zeros(15, np.int16)), cfg_null=False)


def call_lstm(a):
    return _core.lstm_cell(VARIANT["fx16"], a["inp"], a["prev_out"], a["weights"], a["bias"], a["mode"], a["act"],
                           a["ir"], a["cell"], a["out"], cfg_null=a["cfg_null"])


LSTM_CASES = [
    ("cell_rank5", lambda a: a.update(cell=raw_like(a["cell"], rank=5)), Status.BAD_TENSOR, "cell"),
    ("out_null", lambda a: a.update(out=Tensor.raw(is_null=True)), Status.BAD_TENSOR, "out"),
    ("cfg_null", lambda a: a.update(cfg_null=True), Status.BAD_FUNC_CFG, "cfg"),
    ("ir_null", lambda a: a.update(ir=None), Status.BAD_FUNC_CFG, "cfg"),
    ("batch_rank1", lambda a: a.update(inp=t16(4, 12)), Status.BAD_FUNC_CFG, "in"),
    ("weights_rank2", lambda a: a.update(weights=t16((20, 9), 14)), Status.SHAPE_MISMATCH, "weights"),
    ("gates3", lambda a: a.update(weights=t16((3, 5, 9), 14), bias=t16((3, 5), 14)), Status.SHAPE_MISMATCH,
     "weights"),
    ("cell_size", lambda a: a.update(cell=t16(4, 11)), Status.SHAPE_MISMATCH, "cell"),
    ("in_strided", lambda a: a.update(inp=strided_in()), Status.INCOMPATEBLE_TENSORS, "in"),
    ("cell_type", lambda a: a.update(cell=Tensor(np.zeros(5, np.int8), 3)), Status.TYPE_MISMATCH, "cell"),
    ("bias_frac", lambda a: a.update(bias=t16((4, 5), 27)), Status.INCOMPATEBLE_TENSORS, "bias"),
    ("ir_capacity", lambda a: a.update(ir=t16(19)), Status.NOT_ENGH_MEM, "cfg.ir_tsr"),
    ("out_capacity", lambda a: a.update(out=Tensor(np.zeros(14, np.int16))), Status.NOT_ENGH_MEM, "out"),
]


@pytest.mark.parametrize("name,mutate,status,argument", LSTM_CASES, ids=[c[0] for c in LSTM_CASES])
def test_lstm_status_paths(name, mutate, status, argument):
    a = lstm_args()
    mutate(a)
    cell_before = bytes(a["cell"].base) if not a["cell"].is_null else None
    assert Status(call_lstm(a)) == status
    assert _core.last_error()[2] == argument
    if cell_before is not None:
        assert bytes(a["cell"].base) == cell_before


FC_CASES = [
    ("in_type", dict(inp=Tensor(np.zeros(9, np.int8), 4)), Status.TYPE_MISMATCH, "in"),
    ("bias_frac", dict(bias=t16(5, 30)), Status.INCOMPATEBLE_TENSORS, "bias"),
    ("weights_rank3", dict(weights=t16((5, 9, 1), 14)), Status.SHAPE_MISMATCH, "weights"),
    ("weights_cols", dict(weights=t16((5, 8), 14)), Status.SHAPE_MISMATCH, "weights"),
    ("weights_inner_stride", dict(weights=Tensor.raw(np.zeros(100, np.int16), shape=[5, 9], mem_stride=[18, 2],
                                                     el_type=1, frac_bits=14)),
     Status.INCOMPATEBLE_TENSORS, "weights"),
    ("out_capacity", dict(out=Tensor(np.zeros(4, np.int16))), Status.NOT_ENGH_MEM, "out"),
    ("weights_row_reach", dict(weights=raw_like(t16((5, 9), 14), mem_stride=[12, 0])), Status.NOT_ENGH_MEM,
     "weights"),
]


@pytest.mark.parametrize("name,change,status,argument", FC_CASES, ids=[c[0] for c in FC_CASES])
def test_fc_status_paths(name, change, status, argument):
    a = dict(inp=t16(9, 12), weights=t16((5, 9), 14), bias=t16(5, 14), out=Tensor(np.zeros(5, np.int16)))
    a.update(change)
    assert Status(_core.fully_connected(1, a["inp"], a["weights"], a["bias"], a["out"])) == status
    assert _core.last_error()[2] == argument


def test_eltwise_and_activation_status_paths():
    a, b = t16(6), t16(6)
    out = Tensor(np.zeros(6, np.int16))
    assert _core.eltwise("add", 1, a, t16(6, 11), out) == Status.INCOMPATEBLE_TENSORS
    assert _core.eltwise("mul", 1, a, t16(5), out) == Status.SHAPE_MISMATCH
    assert _core.eltwise("add", 1, Tensor(np.int16(3), 10), Tensor(np.int16(4), 10), out) == Status.NOT_SUPPORTED
    assert _core.eltwise("add", 0, a, b, out) == Status.TYPE_MISMATCH
    assert _core.eltwise("add", 1, t16(7), t16(7), out) == Status.NOT_ENGH_MEM
    assert _core.tanh(0, a, out) == Status.TYPE_MISMATCH
    assert _core.tanh(1, a, Tensor(np.zeros(5, np.int16))) == Status.NOT_ENGH_MEM
    assert _core.relu(1, raw_like(a, rank=7), 1, out) == Status.BAD_TENSOR
    with pytest.raises(mli.MliNotSupportedError):
        mli.eltwise_add_fx16(Tensor(np.int16(3), 10), Tensor(np.int16(4), 10))


def test_bridge_refuses_memory_hazards():
    x = t16(6)
    with pytest.raises(mli._core.BridgeError, match="read-only"):
        ro = np.zeros(6, np.int16)
        ro.flags.writeable = False
        _core.tanh(1, x, Tensor(ro))
    with pytest.raises(mli._core.BridgeError, match="overlaps"):
        buf = np.zeros(20, np.int16)
        _core.fully_connected(1, Tensor(buf[:9], 12), t16((2, 9), 14), t16(2, 14), Tensor(buf[8:10], 12))
    with pytest.raises(mli._core.BridgeError, match="rank-0"):
        _core.tanh(1, Tensor(np.int16(5), 3), Tensor(np.zeros(1, np.int16)))
    with pytest.raises(ValueError, match="exceeds"):
        x.capacity = 13
    with pytest.raises(ValueError, match="frac_bits"):
        Tensor(np.zeros(3, np.int16), 256)
    with pytest.raises(TypeError, match="from_float"):
        Tensor(np.zeros(3, np.float32), 4)
    with pytest.raises(TypeError, match="byte order"):
        Tensor(np.zeros(3, ">i2"), 4)
    with pytest.raises(ValueError, match="NaN"):
        Tensor.from_float([1.0, np.nan], "fx16", 4)


def test_in_place_activation_is_allowed():
    x = Tensor(np.arange(-5, 5, dtype=np.int16) * 1000, 12)
    want = mli.tanh_fx16(x).numpy().copy()
    mli.tanh_fx16(x, out=x)
    np.testing.assert_array_equal(x.numpy(), want)


@pytest.mark.parametrize("mode,act", [(7, 1), (1, 9), (-3, 0), (2, 5)])
def test_rnn_cfg_enums_are_not_checked(mode, act):
    """MLI 1.1 never compares cfg.mode / cfg.act with their enums (SPEC 12.3):
    such calls compute (tests/test_oracle_mli11.py compares the values with MLI's)."""
    a = rnn_args()
    a.update(mode=mode, act=act)
    assert Status(call_rnn(a)) == Status.OK
    cfg = mli.RnnCellConfig(mode=mode, act=act)
    assert int(cfg.mode) == mode and int(cfg.act) == act

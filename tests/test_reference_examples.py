"""The worked examples of SPEC.md, checked against mli.reference."""

import numpy as np
import pytest

from mli import reference as ref
from mli.reference import fxmath


def i16(*v):
    return np.array(v, dtype=np.int16)


def i8(*v):
    return np.array(v, dtype=np.int8)


# -- SPEC 2.2: rounding right shift -------------------------------------------------

@pytest.mark.parametrize("x, n, conv, up", [
    (5, 1, 2, 3), (-5, 1, -2, -2), (7, 1, 4, 4), (-7, 1, -4, -3),
    (-300, 7, -2, -2), (-328, 7, -3, -3), (12, 0, 12, 12), (3, -2, 12, 12),
])
def test_rnd_shift(x, n, conv, up):
    assert fxmath.rnd_shift(x, n, "convergent") == conv
    assert fxmath.rnd_shift(x, n, "up") == up


def test_saturating_shifts():
    assert fxmath.asr32(1, -40) == 2**31 - 1
    assert fxmath.asr16(-40000, 0) == -32768
    assert fxmath.read16(-2**39, 8) == -32768
    assert fxmath.floor_shift(-3, 1) == -2


def test_bad_rounding_mode():
    with pytest.raises(ValueError, match="rounding"):
        fxmath.rnd_shift(1, 1, "down")


# -- SPEC 4: dense core ---------------------------------------------------------------

def test_dense_fx16_example():
    y = ref.fully_connected("fx16", i16(12000, -3000, 700, -32768, 5), 12,
                            i16(16000, -20000, 300, 1000, 32767).reshape(1, 5), 15,
                            i16(-1234), 14, 10)
    np.testing.assert_array_equal(y, i16(1598))


def test_dense_fx8_example():
    w = i8(64, -32, 127, -128, 100, 5).reshape(2, 3)
    y = ref.fully_connected("fx8", i8(100, -50, 25), 6, w, 7, i8(10, -3), 4, 5)
    np.testing.assert_array_equal(y, i8(64, -75))


def test_in_to_state_floor_fx16_round_fx8w16d():
    """SPEC 4 asymmetry: acc 3 >> 1 is floor 1 (fx16) but rounds to 2 (fx8w16d)."""
    for kind, wdt, want in (("fx16", np.int16, 1), ("fx8w16d", np.int8, 2)):
        y = ref.dense(kind, i16(3), 1, np.array([[1, 0]], wdt), 0, np.array([0], wdt), 1, 0,
                      state=i16(0), f_state=0)
        assert y.tolist() == [want], kind


def test_fc_row_stride():
    w = i8(1, 2, 99, 3, 4)                      # rows [1, 2] and [3, 4], stride 3
    y = ref.fully_connected("fx8", i8(10, 20), 0, w, 0, i8(0, 0), 0, 0, row_stride=3)
    np.testing.assert_array_equal(y, i8(50, 110))


# -- SPEC 6: LUT activations ----------------------------------------------------------

def test_lut_tables():
    t, s = ref.lut_tanh(), ref.lut_sigm()
    assert t.dtype == s.dtype == np.int16 and len(t) == 178 and len(s) == 180
    assert t[:4].tolist() == [-32767] * 4 and t[177] == 32767 and t[89] == 0
    assert t[105] == 24956 and t[106] == 25776
    assert s[0] == s[1] == 0 and s[90] == 16384 and s[179] == 32767
    assert s[92] == 18421 and s[93] == 19420


def test_tanh_fx16_example():
    y, f = ref.tanh("fx16", i16(4224, -4224), 12)
    assert f == 15
    np.testing.assert_array_equal(y, i16(25366, -25366))


@pytest.mark.parametrize("rounding", ["convergent", "up"])
def test_sigm_fx8_example(rounding):
    # -499.5 is a tie in the interpolation (-500 convergent, -499 up); both give 74
    y, f = ref.sigm("fx8", i8(5), 4, rounding)
    assert f == 7 and y.dtype == np.int8 and y.tolist() == [74]


def test_lut_saturated_ends():
    y, _ = ref.tanh("fx16", i16(-32768, 32767), 0)
    np.testing.assert_array_equal(y, i16(-32767, 32767))
    y, _ = ref.sigm("fx8", i8(-128, 127), 7)
    assert y.shape == (2,) and y.dtype == np.int8


# -- SPEC 7: ReLU ---------------------------------------------------------------------

def test_relu_limits():
    x = i8(-128, -20, -4, 0, 4, 30, 127)
    np.testing.assert_array_equal(ref.relu(x, 2, 0), x)
    np.testing.assert_array_equal(ref.relu(x, 2, 1), i8(0, 0, 0, 0, 4, 30, 127))
    np.testing.assert_array_equal(ref.relu(x, 2, 2), i8(-4, -4, -4, 0, 4, 4, 4))
    np.testing.assert_array_equal(ref.relu(x, 2, 3), i8(0, 0, 0, 0, 4, 24, 24))
    np.testing.assert_array_equal(ref.relu(x, 7, 3), i8(0, 0, 0, 0, 4, 30, 127))


# -- SPEC 8: element-wise -------------------------------------------------------------

def test_eltwise_mul_fx16_example():
    y, f = ref.eltwise("mul", "fx16", i16(20000), 15, i16(12288), 12, 11)
    assert f == 11 and y.tolist() == [3750]


def test_eltwise_mul_fx8_ties():
    y, _ = ref.eltwise("mul", "fx8", i8(100, -100), 7, np.array(96, np.int8), 5, 4)
    assert y.tolist() == [38, -38]
    y, _ = ref.eltwise("mul", "fx8", i8(100, -100), 7, np.array(96, np.int8), 5, 4, "up")
    assert y.tolist() == [38, -37]


def test_eltwise_broadcast_and_frac():
    y, f = ref.eltwise("sub", "fx8", np.array(5, np.int8), 3, i8(1, 2, 3), 3, 0)
    assert f == 3 and y.tolist() == [4, 3, 2]
    y, _ = ref.eltwise("sub", "fx8", i8(1, 2, 3), 3, i8(5), 3, 0)
    assert y.tolist() == [-4, -3, -2]
    y, _ = ref.eltwise("add", "fx16", i16(30000, -30000), 4, i16(10000, -10000), 4, 0)
    assert y.tolist() == [32767, -32768]
    y, _ = ref.eltwise("max", "fx16", i16(1, 5).reshape(2, 1), 0, i16(3, 3).reshape(1, 2), 0, 0)
    assert y.shape == (1, 2)                    # equal counts: shape of in2
    with pytest.raises(ValueError, match="frac"):
        ref.eltwise("add", "fx8", i8(1), 3, i8(1), 4, 0)


# -- SPEC 9: basic RNN ----------------------------------------------------------------

def test_rnn_batch_to_last_ir():
    x = i16(1000, 2000, -3000).reshape(3, 1)
    w = i16(16384, 8192).reshape(1, 2)          # K = M = 1, N = 1
    args = ("fx16", x, 12, i16(0), 12, w, 15, i16(100), 12)
    seq, _ = ref.basic_rnn_cell(*args, 1, 0, 12)
    last, f, ir = ref.basic_rnn_cell(*args, 2, 0, 12, return_ir=True)
    assert f == 12 and seq.shape == (3, 1)
    np.testing.assert_array_equal(last, seq[-1])
    np.testing.assert_array_equal(ir, seq[-2])  # act NONE: IR holds step batch-2


# -- SPEC 10: LSTM --------------------------------------------------------------------

LSTM_W = i16(16384, 8192, -8192, 16384, 4096, 4096, 32767, -16384).reshape(4, 1, 2)
LSTM_B = i16(512, -256, 8192, 0).reshape(4, 1)


def test_lstm_example_steps():
    d = ref.dense("fx16", i16(8192), 14, LSTM_W.reshape(4, 2), 15, LSTM_B, 14, 12,
                  state=i16(-16384), f_state=15)
    np.testing.assert_array_equal(d, i16(640, -1600, 2048, 3072))
    i, g, f, o = ref.lstm_gates(d, "fx16", 12)
    assert (i[0], g[0], f[0], o[0]) == (17661, -12179, 20397, 22255)
    c = ref.lstm_cell_update(i, g, f, i16(1000), 11, "fx16")
    assert c.tolist() == [212]
    h, f_h = ref.lstm_hidden(c, 11, o, 1, 15, "fx16")
    assert h.tolist() == [2294] and f_h == 15


def test_lstm_example_whole_cell():
    c0 = i16(1000)
    y, f, c, ir = ref.lstm_cell("fx16", i16(8192), 14, i16(-16384), 15, LSTM_W, 15, LSTM_B, 14,
                                c0, 11, 0, 1)
    assert y.tolist() == [2294] and f == 15 and c.tolist() == [212]
    np.testing.assert_array_equal(ir, i16(17661, -12179, 20397, 22255).reshape(4, 1))
    assert c0.tolist() == [1000]                # inputs are never modified


# -- SPEC 11: helpers -----------------------------------------------------------------

def test_convert_tensor_examples():
    y = ref.convert_tensor(i16(300, -300, -328, 32767), 10, 8, 3)
    assert y.dtype == np.int8 and y.tolist() == [2, -2, -3, 127]
    y = ref.convert_tensor(i8(100, -100), 2, 16, 12)
    assert y.dtype == np.int16 and y.tolist() == [32767, -32768]


def test_float_conversions():
    x = np.array([0.0, 0.25, -0.25, 1e9, -1e9, 0.0009765625], np.float32)
    y = ref.float_to_fx(x, 16, 10)
    assert y.dtype == np.int16 and y.tolist() == [0, 256, -256, 32767, -32768, 1]
    # float32 arithmetic: 0.49999997f + 0.5f rounds to 1.0f (exact math would give 0)
    assert ref.float_to_fx(np.float32(0.49999997), 16, 0).tolist() == 1
    back = ref.fx_to_float(i8(-128, 64, 1), 7)
    assert back.dtype == np.float32 and back.tolist() == [-1.0, 0.5, 0.0078125]

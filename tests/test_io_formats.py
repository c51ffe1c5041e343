"""Raw dumps, C arrays, .npy/.npz and load_array: round trips, the real HAR
files, malformed input with clear messages."""

import os
from pathlib import Path

import numpy as np
import pytest

from mli.io import write_idx
from mli.io.c_array import (CParseError, format_c_array, list_c_arrays, qmn, read_c_array, read_c_array_info,
                            read_c_arrays)
from mli.io.load import load_array, parse_spec
from mli.io.npz import npz_frac_bits, npz_keys, read_npy, read_npz, write_npy, write_npz
from mli.io.raw import parse_shape, read_raw, write_raw

SHARED = Path(os.environ.get("MLI_SHARED") or Path(__file__).resolve().parents[1].parent / "shared")
HAR = SHARED / "data" / "har"
needs_har = pytest.mark.skipif(not HAR.is_dir(), reason=f"HAR data not found at {HAR} (set MLI_SHARED)")


# ------------------------------------------------------------------ raw
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "float32"])
@pytest.mark.parametrize("endian", ["little", "big", "native"])
def test_raw_round_trip(tmp_path, dtype, endian):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 5)) * 100).astype(dtype)
    p = tmp_path / "d.bin"
    assert write_raw(p, a, endian=endian) == a.nbytes
    got = read_raw(p, dtype, (3, 5), endian=endian)
    assert got.dtype == np.dtype(dtype) and got.dtype.isnative
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(read_raw(p.read_bytes(), dtype, "3x-1", endian=endian), a)


def test_raw_byte_order_and_offset():
    data = b"HDR!" + bytes([0x01, 0x02, 0xFF, 0xFE])
    assert read_raw(data, "int16", offset=4).tolist() == [0x0201, -257]
    assert read_raw(data, "int16", offset=4, endian="big").tolist() == [0x0102, -2]
    assert read_raw(data, "int8", offset=4, count=2).tolist() == [1, 2]


@pytest.mark.parametrize("kwargs, match", [
    (dict(dtype="int16"), "not a whole number of 2-byte int16 elements"),
    (dict(dtype="int8", shape=(2, 2)), r"shape \(2, 2\) needs 4 elements, the dump holds 5"),
    (dict(dtype="int8", offset=9), "offset 9 is past the end"),
    (dict(dtype="int8", offset=-1), "offset"),
    (dict(dtype="int8", count=6), "6 int8 elements need 6 bytes"),
    (dict(dtype="float64"), "unknown raw dtype"),
    (dict(dtype="int8", endian="middle"), "endian"),
    (dict(dtype="int8", shape="2x-1"), "5 elements do not fill shape"),
])
def test_raw_strict_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        read_raw(bytes(5), **kwargs)


def test_raw_write_refuses_overflow_and_floats(tmp_path):
    with pytest.raises(ValueError, match="do not fit int8"):
        write_raw(tmp_path / "x", np.array([300], np.int16), "int8")
    with pytest.raises(TypeError, match="quantize"):
        write_raw(tmp_path / "x", np.array([0.5]), "int16")


def test_parse_shape():
    assert parse_shape("128x32") == (128, 32)
    assert parse_shape("[4, 32, 64]") == (4, 32, 64)
    assert parse_shape(7) == (7,)
    with pytest.raises(ValueError):
        parse_shape("a,b")
    with pytest.raises(ValueError):
        parse_shape((-1, -1))


# ------------------------------------------------------------- npy / npz
def test_npz_round_trip_with_frac_bits(tmp_path):
    a, b = np.arange(6, dtype=np.int16).reshape(2, 3), np.array([1.5], np.float32)
    p = tmp_path / "w.npz"
    write_npz(p, {"a": a, "b": b}, frac_bits={"a": 12})
    assert npz_keys(p) == ["a", "b"]
    assert npz_frac_bits(p) == {"a": 12}
    np.testing.assert_array_equal(read_npz(p, "a"), a)
    assert set(read_npz(p)) == {"a", "b"}
    with pytest.raises(KeyError, match="no array 'c'; the file holds a, b"):
        read_npz(p, "c")
    q = tmp_path / "x.npy"
    write_npy(q, a.astype(">i2"))
    got = read_npy(q)
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, a)


def test_npz_never_loads_pickles(tmp_path):
    p = tmp_path / "obj.npy"
    np.save(p, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        read_npy(p)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable .npz"):
        read_npz(bad)


# -------------------------------------------------------------- C arrays
SRC = r"""
#define N 3          /* a constant */
#define FR 14
// leading comment with a fake array: int16_t fake[] = {1};
const int16_t a[2][N] = { {0x10, -2, (int16_t)7}, {1, 2, 3} };  /* trailing */
const w_type _W L1_fc_wt_buf[] = {
    L1_WQ(-0.2528931797), L1_WQ(0.5 + 1.), L1_WQ(-0.5),   // halves go away from zero
    L1_WQ(5.0)                                            /* saturates */
};
static const float IN_SEQ[] = { 1.5f, -2e-3, 3 };
int8_t q[] = { QMN(int8_t, 6, 0.25), QMN(int8_t, FR - 8, -3.0) };
int8_t q2[4] = { Q(0.25, 6), 1 };
uint8_t hexes[] = { 0xFF, 0x0a, 010, 0b11 };
"""


def test_c_list_and_ints():
    assert list_c_arrays(SRC) == ["a", "L1_fc_wt_buf", "IN_SEQ", "q", "q2", "hexes"]
    a = read_c_array(SRC, "a")
    assert a.dtype == np.int16 and a.tolist() == [[16, -2, 7], [1, 2, 3]]
    assert read_c_array(SRC, "hexes").tolist() == [255, 10, 8, 3]


def test_c_quantization_macro():
    v = read_c_array(SRC, "L1_fc_wt_buf", macro="L1_WQ", frac_bits=14, dtype="int16")
    assert v.tolist() == [-4143, 24576, -8192, 32767]     # README example, + 1., half away, saturation
    assert read_c_array(SRC, "q", macro="QMN").tolist() == [16, -128]   # MLI's QMN(type, frac, value)
    assert read_c_array(SRC, "q2", macro="Q").tolist() == [16, 1, 0, 0]  # Q(value, frac); zero fill


def test_c_floats_keep_declared_type():
    f = read_c_array(SRC, "IN_SEQ")
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, np.array([1.5, -2e-3, 3], np.float32))
    info = read_c_array_info(SRC, "IN_SEQ")
    assert info.c_type == "static const float" and info.line == 10


@pytest.mark.parametrize("name, kw, match", [
    ("L1_fc_wt_buf", {}, r"element 0 .*unknown macro L1_WQ\(\.\.\.\)"),
    ("L1_fc_wt_buf", dict(macro="L1_WQ", dtype="int16"), "carries no frac bits"),
    ("L1_fc_wt_buf", dict(macro="L1_WQ", frac_bits=14), "container type is unknown"),
    ("IN_SEQ", dict(dtype="int16"), "is the float 1.5 but the array is int16"),
    ("a", dict(dtype="int8"), None),
])
def test_c_errors_name_array_and_element(name, kw, match):
    if match is None:
        assert read_c_array(SRC, name, **kw).dtype == np.int8
        return
    with pytest.raises(CParseError, match=match):
        read_c_array(SRC, name, **kw)


def test_c_missing_duplicate_and_overflow():
    with pytest.raises(KeyError, match="no array 'zz'; defined: a, L1_fc_wt_buf"):
        read_c_array(SRC, "zz")
    with pytest.raises(KeyError, match="defines 6 arrays"):
        read_c_array(SRC)
    dup = "#if A\nint8_t x[] = {1};\n#else\nint8_t x[] = {2};\n#endif\n"
    with pytest.raises(CParseError, match="defined 2 times"):
        read_c_array(dup, "x")
    with pytest.raises(CParseError, match="= 300 does not fit int8"):
        read_c_array("int8_t x[] = {300};", "x")
    with pytest.raises(CParseError, match="more than its 2 elements"):
        read_c_array("int8_t x[2] = {1, 2, 3};", "x")
    with pytest.raises(CParseError, match="unterminated"):
        read_c_array("int8_t x[] = {1, /* oops", "x")


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.float32, np.float64])
def test_c_emit_parse_round_trip(dtype):
    rng = np.random.default_rng(2)
    if np.dtype(dtype).kind == "f":
        a = (rng.standard_normal((3, 4)) * 10.0 ** rng.integers(-8, 8, (3, 4))).astype(dtype)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (3, 4), endpoint=True).astype(dtype)
        a[0, 0] = info.min
    for keep in (False, True):
        text = format_c_array("arr", a, keep_shape=keep, comment="test")
        got = read_c_array(text, "arr")
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got.reshape(a.shape), a)


def test_c_emit_rejects_bad_input():
    with pytest.raises(ValueError, match="not a C identifier"):
        format_c_array("1x", [1])
    with pytest.raises(ValueError, match="NaN or infinity"):
        format_c_array("x", np.array([np.nan], np.float32))


def test_qmn_rule():
    # README: -0.2528931797 at 14 frac bits -> -4143; halves away from zero; saturation; NaN refused
    assert qmn([-0.2528931797, 0.5 / 2 ** 14, -0.5 / 2 ** 14, 0.0, 9.0, -9.0], 14, np.int16).tolist() == \
        [-4143, 1, -1, 0, 32767, -32768]
    with pytest.raises(ValueError, match="cannot be quantized"):
        qmn([1.0, np.inf], 14, np.int16)


@needs_har
def test_c_read_all_arrays_matches_quantized_npz(tmp_path):
    """QMN macros over the float coefficients give the integers the example compiles in."""
    coef = np.load(HAR / "coefficients.npz")
    q16 = np.load(HAR / "quantized_16.npz")
    lines = ["#define FRQ 15"]
    for v in coef["L2_lstm_wt"].reshape(-1)[:64]:
        lines.append(f"  WQ({float(v)!r}),")
    text = "const w_type _W L2_lstm_wt_buf[] = {\n" + "\n".join(lines[1:]) + "\n};\n"
    src = tmp_path / "coef.c"
    src.write_text(lines[0] + "\n" + text)
    got = read_c_arrays(src, macro="WQ", frac_bits=15, dtype="int16")["L2_lstm_wt_buf"]
    np.testing.assert_array_equal(got, q16["L2_lstm_wt"].reshape(-1)[:64])


# ------------------------------------------------------------ load_array
def test_load_array_every_format(tmp_path):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    write_idx(tmp_path / "a.idx", a)
    np.save(tmp_path / "a.npy", a)
    write_npz(tmp_path / "w.npz", {"a": a, "b": a + 1})
    write_raw(tmp_path / "a.bin", a, endian="big")
    (tmp_path / "a.c").write_text(format_c_array("arr", a) + format_c_array("other", a[0]))
    (tmp_path / "noext").write_bytes(a.astype("<i2").tobytes())
    specs = ["a.idx", "a.npy", "w.npz:a", "a.bin,dtype=int16,shape=3x4,endian=big", "a.c:arr,shape=3x4",
             "raw:noext,dtype=int16,shape=3x-1", "c:a.c:arr,shape=3x4", {"path": "w.npz", "key": "a"}]
    for s in specs:
        got = load_array(s, base_dir=tmp_path)
        np.testing.assert_array_equal(got.reshape(3, 4), a, err_msg=str(s))
    np.testing.assert_array_equal(load_array(tmp_path / "w.npz", key="b"), a + 1)
    np.testing.assert_array_equal(load_array(str(tmp_path / "a.idx"), shape=(12,)), a.reshape(-1))


def test_parse_spec_grammar():
    s = parse_spec("dump.bin,dtype=int8,shape=2x3,endian=big,offset=0x10")
    assert (s.path, s.dtype, s.shape, s.endian, s.offset) == ("dump.bin", "int8", (2, 3), "big", 16)
    s = parse_spec("coef.c:L1_fc_wt_buf,macro=L1_WQ,frac=14,dtype=int16")
    assert (s.path, s.selector, s.macro, s.frac_bits, s.resolved_format()) == ("coef.c", "L1_fc_wt_buf", "L1_WQ",
                                                                               14, "c")
    assert parse_spec("npz:weights:L1").resolved_format() == "npz"


@pytest.mark.parametrize("spec, exc, match", [
    ("nope.idx", OSError, "no such file"),
    ("w.npz", KeyError, "holds 2 arrays"),
    ("w.npz:zz", KeyError, "no array 'zz'"),
    ("a.bin", ValueError, "needs dtype"),
    ("a.bin,dtype=int16,colour=red", ValueError, "unknown option 'colour'"),
    ("a.bin,dtype=int16,offset=x", ValueError, "offset='x' is not an integer"),
    ("a.weird", ValueError, "cannot tell the format"),
    ("a.idx,endian=big", ValueError, "raw dumps only"),
    ("a.idx,dtype=int8", ValueError, "do not fit int8"),
    ("a.idx,shape=5x5", ValueError, "needs 25 elements"),
    ("", ValueError, "empty"),
])
def test_load_array_errors(tmp_path, spec, exc, match):
    a = np.array([1000, 2], np.int16)
    write_idx(tmp_path / "a.idx", a)
    write_npz(tmp_path / "w.npz", {"a": a, "b": a})
    write_raw(tmp_path / "a.bin", a)
    (tmp_path / "a.weird").write_bytes(b"")
    with pytest.raises(exc, match=match):
        load_array(spec, base_dir=tmp_path)


@needs_har
def test_load_array_real_har_files():
    x = load_array(HAR / "ref_inout.npz", key="input_seq_300")
    assert x.shape == (128, 9) and x.dtype == np.float32
    ir = load_array(str(HAR / "ir_idx_300" / "ir_lstm2.idx"))
    assert ir.shape == (128, 32) and ir.dtype == np.float32

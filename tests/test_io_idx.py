"""IDX reader / writer: round trips, the real MLI HAR files, malformed input."""

import os
from pathlib import Path

import numpy as np
import pytest

from mli.io import encode_idx, read_idx, write_idx

SHARED = Path(os.environ.get("MLI_SHARED")
              or Path(__file__).resolve().parents[1].parent / "shared")
HAR = SHARED / "data" / "har"
needs_har = pytest.mark.skipif(not HAR.is_dir(), reason=f"HAR data not found at {HAR}")

DTYPES = ["u1", "i1", "i2", "i4", "f4", "f8"]


def header(code, *dims, magic=b"\0\0"):
    return magic + bytes([code, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (2, 3), (2, 1, 4), (0, 5), ()])
def test_round_trip(tmp_path, dt, shape):
    rng = np.random.default_rng(0)
    info = np.iinfo(dt) if dt[0] in "ui" else None
    a = (rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dt) if info
         else rng.standard_normal(shape).astype(dt))
    path = tmp_path / "a.idx"
    write_idx(path, a)
    for got in (read_idx(path), read_idx(str(path)), read_idx(path.read_bytes())):
        assert got.dtype == np.dtype(dt) and got.dtype.isnative and got.shape == shape
        assert got.flags.writeable
        np.testing.assert_array_equal(got, a)


def test_exact_bytes_and_byte_order():
    a = np.array([[1, -2], [3, 256]], dtype=">i2")
    data = encode_idx(a)
    assert data == header(0x0B, 2, 2) + bytes.fromhex("0001 fffe 0003 0100".replace(" ", ""))
    assert encode_idx(a.astype("<i2")) == data
    got = read_idx(data)
    assert got.dtype == np.dtype("=i2") and got.tolist() == [[1, -2], [3, 256]]
    assert encode_idx(np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2]) == \
        encode_idx(np.array([[0, 2], [3, 5]], np.float32))   # non-contiguous input


@pytest.mark.parametrize("dtype", [np.int64, np.uint16, np.float16, np.bool_, np.complex64])
def test_write_unsupported_dtype(tmp_path, dtype):
    with pytest.raises(TypeError, match="cannot store dtype"):
        write_idx(tmp_path / "x.idx", np.zeros(3, dtype))
    assert not (tmp_path / "x.idx").exists()


@needs_har
@pytest.mark.parametrize("name, dtype, shape", [
    ("ir_idx_300/ir_fc1.idx", np.float32, (128, 32)),
    ("ir_idx_300/ir_relu1.idx", np.float32, (128, 32)),
    ("ir_idx_300/ir_lstm2.idx", np.float32, (128, 32)),
    ("ir_idx_300/ir_lstm3.idx", np.float32, (32,)),
    ("ir_idx_300/ir_fc4.idx", np.float32, (6,)),
    ("small_test_base/tests.idx", np.float32, (30, 128, 9)),
    ("small_test_base/labels.idx", np.uint8, (30,)),
])
def test_har_files(name, dtype, shape):
    path = HAR / name
    a = read_idx(path)
    assert a.dtype == dtype and a.shape == shape and np.isfinite(a).all()
    assert encode_idx(a) == path.read_bytes()            # byte-for-byte round trip


@needs_har
def test_har_contents():
    labels = read_idx(HAR / "small_test_base" / "labels.idx")
    assert set(labels.tolist()) <= set(range(6))
    relu = read_idx(HAR / "ir_idx_300" / "ir_relu1.idx")
    np.testing.assert_array_equal(relu, np.maximum(read_idx(HAR / "ir_idx_300" / "ir_fc1.idx"), 0))
    scores = np.load(HAR / "ref_inout.npz")["out_scores_300"]
    np.testing.assert_allclose(read_idx(HAR / "ir_idx_300" / "ir_fc4.idx"), scores, atol=1e-5)


MALFORMED = {
    "empty": (b"", "truncated IDX header"),
    "short_magic": (b"\0\0\x08", "truncated IDX header"),
    "bad_magic_0": (b"\x01\0\x08\x01" + bytes(5), "bad IDX magic"),
    "bad_magic_1": (b"\0\x08\x08\x01" + bytes(5), "bad IDX magic"),
    "unknown_type": (header(0x0A, 1) + b"\0", "unknown IDX type code 0x0A"),
    "short_dims": (header(0x08, 2, 2)[:9], "truncated IDX header"),
    "short_data": (header(0x0B, 3) + bytes(5), "IDX data truncated"),
    "trailing_data": (header(0x0B, 3) + bytes(7), "1 bytes of trailing data"),
    "trailing_after_empty": (header(0x08, 0) + b"\0", "trailing data"),
    "dims_overflow": (header(0x0E, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF) + bytes(8),
                      "more than this platform"),
    "huge_dims_small_file": (header(0x0D, 0xFFFFFFFF, 0xFFFF) + bytes(8), "IDX data truncated"),
}


@pytest.mark.parametrize("data, message", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        read_idx(data)
    path = tmp_path / "bad.idx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as err:
        read_idx(path)
    assert str(path) in str(err.value)                   # the message names the file

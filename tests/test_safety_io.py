"""Issue 10, sections 5.1-5.3: the readers of mli.io never allocate or read
more than the size limit (mli.io.limits; MLI_MAX_ARRAY_BYTES): deflate
bombs in .npz, zero-fill bombs in C, devices and endless pipes.

Tests whose unfixed behaviour is to exhaust the memory or read forever run
in a subprocess with an address-space cap and a timeout."""

import io
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy_format

import mli
from mli.io import limits, load_array, read_c_array, read_c_arrays, read_idx, read_npz, read_raw, write_idx
from mli.io.npz import read_npy, write_npz

MLI_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mli.__file__)))
GIB = 1 << 30
MIB = 1 << 20


@pytest.fixture(autouse=True)
def default_limit(monkeypatch):
    """Every test starts from the default limit, whatever the environment says."""
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", None)
    monkeypatch.delenv("MLI_MAX_ARRAY_BYTES", raising=False)


def run_py(code, *, limit=None, timeout=60, cap=2 * GIB):
    """(returncode, stdout, stderr) of `code` in a fresh Python whose address
    space is capped at `cap` (an unbounded read ends in MemoryError there,
    not in the machine's memory), with MLI_MAX_ARRAY_BYTES=`limit`."""
    env = dict(os.environ, PYTHONPATH=MLI_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("MLI_MAX_ARRAY_BYTES", None)
    if limit is not None:
        env["MLI_MAX_ARRAY_BYTES"] = str(limit)

    def cap_memory():
        if "asan" not in os.environ.get("LD_PRELOAD", ""):  # ASan reserves terabytes of address space
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    # cwd outside the source tree: `python -c` puts the cwd first on sys.path
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, preexec_fn=cap_memory,
                       capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir())
    return r.returncode, r.stdout, r.stderr


def error_of(code, **kw):
    """The `ValueError` text `code` (which must raise one) gives in a subprocess."""
    rc, out, err = run_py("try:\n" + textwrap.indent(textwrap.dedent(code), "    ") +
                          "\nexcept ValueError as e:\n    print(type(e).__name__ + ': ' + str(e))\n", **kw)
    assert rc == 0, err[-2000:]
    return out.strip()


# ---------------------------------------------------------------- the setting
def test_limit_default_environment_and_module_setting(monkeypatch):
    assert limits.DEFAULT_MAX_ARRAY_BYTES == GIB
    assert limits.max_array_bytes() == GIB
    monkeypatch.setenv("MLI_MAX_ARRAY_BYTES", "4096")
    assert limits.max_array_bytes() == 4096
    monkeypatch.setenv("MLI_MAX_ARRAY_BYTES", "0x10000")
    assert limits.max_array_bytes() == 65536
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", 123)       # the module setting wins
    assert limits.max_array_bytes() == 123


@pytest.mark.parametrize("value", ["lots", "0", "-5", "1.5"])
def test_bad_environment_value_is_named(monkeypatch, value):
    monkeypatch.setenv("MLI_MAX_ARRAY_BYTES", value)
    with pytest.raises(ValueError) as e:
        limits.max_array_bytes()
    assert str(e.value) == f"MLI_MAX_ARRAY_BYTES: expected a byte count > 0, got {value!r}"


# ------------------------------------------------------------------- 5.1 npz
def zeros_bomb(path, n):
    """An honest .npz whose entry 'a' is n int8 zeros, deflated (about n/1000
    bytes on disk), written in 1 MiB pieces so the test never holds n bytes."""
    head = io.BytesIO()
    npy_format.write_array_header_1_0(head, {"descr": "|i1", "fortran_order": False, "shape": (n,)})
    piece = bytes(MIB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z, z.open("a.npy", "w") as f:
        f.write(head.getvalue())
        for _ in range(n // MIB):
            f.write(piece)
    return path


def test_npz_deflate_bomb_refused_before_allocating(tmp_path, monkeypatch):
    p = zeros_bomb(tmp_path / "bomb.npz", 64 * MIB)
    assert os.path.getsize(p) < 100_000
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", MIB)
    tracemalloc.start()
    try:
        with pytest.raises(limits.SizeLimitError) as e:
            read_npz(p, "a")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(e.value) == (f"{p}:a: the array is 67108864 bytes (shape (67108864,) of int8), more than the "
                            "limit of 1048576 bytes (MLI_MAX_ARRAY_BYTES)")
    assert peak < 4 * MIB          # numpy reports its allocations to tracemalloc: none of 64 MiB happened


def test_npz_bomb_through_load_array_and_environment(tmp_path, monkeypatch):
    p = zeros_bomb(tmp_path / "bomb.npz", 4 * MIB)
    monkeypatch.setenv("MLI_MAX_ARRAY_BYTES", str(MIB))
    with pytest.raises(ValueError) as e:
        load_array(f"{p}:a")
    assert str(e.value) == (f"{p}:a: the array is 4194304 bytes (shape (4194304,) of int8), more than the "
                            "limit of 1048576 bytes (MLI_MAX_ARRAY_BYTES)")
    monkeypatch.setenv("MLI_MAX_ARRAY_BYTES", str(4 * MIB))
    assert load_array(f"{p}:a").shape == (4 * MIB,)


def test_npz_header_claiming_gigabytes_refused_at_default_limit(tmp_path):
    """2.4 MB of deflated bytes whose zip directory and .npy header claim
    2.4 GB: plausible for deflate, refused by the 1 GiB default limit."""
    head = io.BytesIO()
    npy_format.write_array_header_1_0(head, {"descr": "|i1", "fortran_order": False, "shape": (2_400_000_000,)})
    body = np.random.default_rng(0).bytes(2_400_000)
    p = tmp_path / "claim.npz"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", head.getvalue() + body)
    raw = bytearray(p.read_bytes())
    size = (2_400_000_000 + len(head.getvalue())).to_bytes(4, "little")
    local, central = raw.index(b"PK\x03\x04"), raw.index(b"PK\x01\x02")
    raw[local + 22:local + 26] = size           # uncompressed size in the local header
    raw[central + 24:central + 28] = size       # ... and in the central directory
    p.write_bytes(bytes(raw))
    with pytest.raises(limits.SizeLimitError) as e:
        read_npz(p, "a")
    assert str(e.value) == (f"{p}:a: the array is 2400000000 bytes (shape (2400000000,) of int8), more than "
                            "the limit of 1073741824 bytes (MLI_MAX_ARRAY_BYTES)")


def test_npz_arrays_read_together_share_the_limit(tmp_path, monkeypatch):
    p = tmp_path / "three.npz"
    write_npz(p, {k: np.zeros(400, np.int8) for k in "abc"})
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", 1000)
    with pytest.raises(limits.SizeLimitError) as e:
        read_npz(p)
    assert str(e.value) == (f"{p}:c: the array is 400 bytes (shape (400,) of int8), more than the 200 bytes "
                            "left of the limit of 1000 bytes (MLI_MAX_ARRAY_BYTES) after the arrays before it")
    assert read_npz(p, "c").shape == (400,)          # one at a time each fits


def test_npy_above_limit(tmp_path, monkeypatch):
    p = tmp_path / "big.npy"
    np.save(p, np.zeros(2000, np.int8))
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", 1000)
    with pytest.raises(limits.SizeLimitError) as e:
        read_npy(p)
    assert str(e.value) == (f"{p}: the array is 2000 bytes (shape (2000,) of int8), more than the limit of "
                            "1000 bytes (MLI_MAX_ARRAY_BYTES)")


# -------------------------------------------------------------- 5.2 C arrays
def test_c_zero_fill_bomb_refused_before_allocating(tmp_path):
    """40 x 2**26 int16 zeros = 5 GiB of zero fill from a 1.7 kB file; the
    cap of 2 GiB in the subprocess makes any zero fill of it fail."""
    p = tmp_path / "z.c"
    p.write_text("".join(f"const int16_t a{i}[67108864] = {{0}};\n" for i in range(40)))
    out = error_of(f"""
        from mli.io import read_c_arrays
        read_c_arrays({str(p)!r})
        """)
    assert out == (f"SizeLimitError: {p}:9: array a8: the arrays up to this one declare 1207959552 bytes "
                   "together, more than the limit of 1073741824 bytes (MLI_MAX_ARRAY_BYTES)")


def test_c_array_above_limit_is_named(monkeypatch):
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", MIB)
    with pytest.raises(limits.SizeLimitError) as e:
        read_c_array("const int16_t big[1048576] = {0};\n")
    assert str(e.value) == ("<C text>:1: array big: declares 1048576 elements (2097152 bytes), more than the "
                            "limit of 1048576 bytes (MLI_MAX_ARRAY_BYTES)")
    # a typedef's values decide the type: counted as 8-byte elements
    with pytest.raises(limits.SizeLimitError) as e:
        read_c_arrays("const int8_t small[4] = {1};\nw_type w[200000] = {0};\n")
    assert str(e.value) == ("<C text>:2: array w: declares 200000 elements (1600000 bytes), more than the "
                            "limit of 1048576 bytes (MLI_MAX_ARRAY_BYTES)")
    assert read_c_arrays("const int16_t a[4] = {1};\n")["a"].tolist() == [1, 0, 0, 0]


def test_c_source_from_a_device_is_bounded():
    out = error_of("""
        from mli.io import read_c_arrays
        read_c_arrays("/dev/zero")
        """, limit=MIB)
    assert out == "SizeLimitError: /dev/zero: the stream holds more than the limit of 1048576 bytes (MLI_MAX_ARRAY_BYTES)"


# ---------------------------------------------------- 5.3 devices and pipes
def test_raw_from_dev_zero_is_bounded():
    out = error_of("""
        from mli.io import load_array
        load_array("raw:/dev/zero,dtype=int8")
        """, limit=MIB)
    assert out == "SizeLimitError: /dev/zero: the stream holds more than the limit of 1048576 bytes (MLI_MAX_ARRAY_BYTES)"


def test_raw_from_dev_zero_with_count_reads_only_that():
    rc, out, err = run_py("""
        from mli.io import load_array
        a = load_array("raw:/dev/zero,dtype=int16,count=3,offset=2")
        print(a.dtype, a.tolist())
        try:
            load_array("raw:/dev/zero,dtype=int16,count=600000")
        except ValueError as e:
            print(e)
        """, limit=MIB)
    assert rc == 0, err[-2000:]
    assert out.splitlines() == [
        "int16 [0, 0, 0]",
        "/dev/zero: offset 0 and 600000 int16 elements are 1200000 bytes of the stream, more than the limit "
        "of 1048576 bytes (MLI_MAX_ARRAY_BYTES)"]


def test_raw_file_above_limit(tmp_path, monkeypatch):
    p = tmp_path / "dump.bin"
    p.write_bytes(bytes(2000))
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", 1000)
    with pytest.raises(limits.SizeLimitError) as e:
        read_raw(p, "int16")
    assert str(e.value) == f"{p}: 2000 bytes of int16 data, more than the limit of 1000 bytes (MLI_MAX_ARRAY_BYTES)"
    assert read_raw(p, "int16", count=500).shape == (500,)       # a count within the limit reads


FIFO_WRITER = """
import os, sys, threading
fifo = sys.argv[1]
os.mkfifo(fifo)
def write(data, endless):
    try:
        with open(fifo, "wb") as f:
            f.write(data)
            while endless:
                f.write(bytes(65536))
    except BrokenPipeError:      # the reader stopped reading: what a bounded reader does
        pass
"""


@pytest.mark.parametrize("case", ["endless", "exact", "truncated", "too_big"])
def test_idx_from_a_fifo(tmp_path, case):
    fifo = str(tmp_path / "stream.idx")
    data, endless, limit = {
        "endless": (bytes([0, 0, 9, 1, 0, 0, 0, 4, 1, 2, 3, 4]), True, None),
        "exact": (bytes([0, 0, 9, 1, 0, 0, 0, 4, 1, 2, 3, 0xFC]), False, None),
        "truncated": (bytes([0, 0, 9, 1, 0, 0, 0, 4, 1, 2]), False, None),
        "too_big": (bytes([0, 0, 9, 1, 0, 0, 7, 208]) + bytes(100), True, 1000),
    }[case]
    code = FIFO_WRITER.replace("sys.argv[1]", repr(fifo)) + textwrap.dedent(f"""
        threading.Thread(target=write, args=({data!r}, {endless}), daemon=True).start()
        from mli.io import read_idx
        try:
            a = read_idx(fifo)
            print(a.dtype, a.tolist())
        except ValueError as e:
            print(type(e).__name__ + ": " + str(e))
        """)
    rc, out, err = run_py(code, limit=limit, timeout=60)
    assert rc == 0, err[-2000:]
    assert out.strip() == {
        "endless": f"ValueError: {fifo}: trailing data after the 4 bytes that dims (4,) of int8 describe",
        "exact": "int8 [1, 2, 3, -4]",
        "truncated": f"ValueError: {fifo}: IDX data truncated: dims (4,) of int8 need 4 bytes, only 2 present",
        "too_big": (f"SizeLimitError: {fifo}: 2000 bytes (IDX dims (2000,) of int8), more than the limit of "
                    "1000 bytes (MLI_MAX_ARRAY_BYTES)"),
    }[case]


def test_idx_file_above_limit(tmp_path, monkeypatch):
    p = tmp_path / "big.idx"
    write_idx(p, np.zeros(2000, np.int8))
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", 1000)
    with pytest.raises(limits.SizeLimitError) as e:
        read_idx(p)
    assert str(e.value) == f"{p}: 2000 bytes (IDX dims (2000,) of int8), more than the limit of 1000 bytes (MLI_MAX_ARRAY_BYTES)"
    monkeypatch.setattr(limits, "MAX_ARRAY_BYTES", 2000)
    assert read_idx(p).shape == (2000,)


def test_limit_reaches_every_format_of_load_array(tmp_path, monkeypatch):
    a = np.arange(600, dtype=np.int16)
    write_idx(tmp_path / "a.idx", a)
    np.save(tmp_path / "a.npy", a)
    write_npz(tmp_path / "a.npz", {"a": a})
    (tmp_path / "a.bin").write_bytes(a.tobytes())
    (tmp_path / "a.c").write_text("const int16_t a[600] = {0};\n")
    specs = ["a.idx", "a.npy", "a.npz:a", "a.bin,dtype=int16", "a.c:a"]
    for s in specs:
        assert load_array(s, base_dir=tmp_path).shape == (600,), s
    monkeypatch.setenv("MLI_MAX_ARRAY_BYTES", "1199")
    errors = []
    for s in specs:
        with pytest.raises(limits.SizeLimitError) as e:
            load_array(s, base_dir=tmp_path)
        errors.append(str(e.value).replace(str(tmp_path) + os.sep, ""))
    assert errors == [
        "a.idx: 1200 bytes (IDX dims (600,) of int16), more than the limit of 1199 bytes (MLI_MAX_ARRAY_BYTES)",
        "a.npy: the array is 1200 bytes (shape (600,) of int16), more than the limit of 1199 bytes "
        "(MLI_MAX_ARRAY_BYTES)",
        "a.npz:a: the array is 1200 bytes (shape (600,) of int16), more than the limit of 1199 bytes "
        "(MLI_MAX_ARRAY_BYTES)",
        "a.bin: 1200 bytes of int16 data, more than the limit of 1199 bytes (MLI_MAX_ARRAY_BYTES)",
        "a.c:1: array a: declares 600 elements (1200 bytes), more than the limit of 1199 bytes "
        "(MLI_MAX_ARRAY_BYTES)",
    ]

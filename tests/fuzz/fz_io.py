"""Fuzz target `io`: mli.io.read_idx, read_raw, read_c_array, read_npz /
read_npy and load_array on mutated bytes.

A spec: {"fmt", "dtype", "shape", "seed", "ops", "via", "opts"}.  The
executor encodes a random array of `dtype`/`shape` in the format, applies
the byte mutations `ops`, hands the result to the reader as bytes, a
bytearray (which must not change), a path or C text (`via`), with reading
options `opts`.

KeyError is accepted only where mli.io documents it (a named npz key or C
array that the file does not hold, or no name given for a file holding
several): raised by a ``raise KeyError(...)`` line of mli/io.
"""
import io
import os
import tempfile
import traceback

import numpy as np
from hypothesis import strategies as st

from mli.io import encode_idx, format_c_array, load_array, read_c_array, read_c_arrays, read_idx, read_raw
from mli.io.npz import read_npy, read_npz

from common import Finding


class DocumentedKeyError(Exception):
    """Marker: a KeyError raised by a documented `raise KeyError` of mli.io."""


EXTRA_OK = (DocumentedKeyError,)

DTYPES = ("int8", "int16", "int32", "uint8", "float32", "float64", ">i2", "<i4", "bool", "int64", "uint16",
          "complex64")
FMTS = ("idx", "raw", "c", "npz", "npz_c", "npy", "spec")
SNIPPETS = (b"", b"0", b"-", b",", b"{", b"}", b"}}", b"{{", b"(", b")", b"[", b"]", b"[]", b"[0]", b"[-1]",
            b"[99999999999999]", b"[1<<62]", b"[1e999]", b"[N]", b"1<<62", b"1<<99999", b"1 << -1", b"1/0", b"5%0",
            b"1e999", b"-1e999", b"nan", b"0x", b"0b2", b"09", b"'a'", b'"s"', b"/*", b"*/", b"//", b"\\\n",
            b"#define N 3\n", b"#define N N\n", b"#define A B\n#define B A\n", b"#define N (1<<62)\n",
            b"#if 0\n", b"#endif\n", b"QMN(int16_t, 14, 0.25)", b"QMN(0.5)", b"QMN(0.5, 99999)", b"QMN(1,2,3,4)",
            b"(int8_t)", b"(float)", b"(w_type)", b"~1.5", b"((((((((((((((((((((", b"(" * 3000 + b"1" + b")" * 3000,
            b"-" * 3000 + b"1", b"~" * 3000 + b"1", b"\x00", b"\xff\xfe", b"\xe9", b"int8_t b[] = {1};",
            b"const int16_t wt[2][3] = { {0x10, -2, (int16_t)7}, {1, 2, 3} };")


def mutation():
    return st.one_of(
        st.tuples(st.just("truncate"), st.integers(0, 999)),
        st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 255)),
        st.tuples(st.just("insert"), st.integers(0, 10**6), st.integers(0, len(SNIPPETS) - 1)),
        st.tuples(st.just("append"), st.integers(0, len(SNIPPETS) - 1)),
        st.tuples(st.just("header"), st.integers(0, 15), st.integers(0, 255)),
        st.tuples(st.just("dup"), st.integers(0, 10**6), st.integers(1, 64)),
        st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 64)),
    )


def io_spec():
    return st.fixed_dictionaries({
        "fmt": st.sampled_from(FMTS),
        "dtype": st.sampled_from(DTYPES),
        "shape": st.lists(st.integers(0, 5), max_size=4).map(tuple),
        "seed": st.integers(0, 2**16),
        "ops": st.lists(mutation(), max_size=3).map(tuple),
        "via": st.sampled_from(("bytes", "bytearray", "path", "memoryview", "text")),
        "opts": st.fixed_dictionaries({}, optional={
            "dtype": st.sampled_from(("int8", "int16", "int32", "uint8", "float32", "fx8", "i16", "float64",
                                      "bogus", "", ">i2")),
            "shape": st.one_of(st.sampled_from(("128x32", "-1", "2,-1", "-1,-1", "x", "0", "3 4", "(2,2)", "-2")),
                               st.lists(st.integers(-2, 6), max_size=4).map(tuple)),
            "offset": st.sampled_from((0, 1, 2, 3, 4, 8, 16, 1000, -1, 2**40, True, 1.5)),
            "endian": st.sampled_from(("little", "big", "native", "le", "middle", 3)),
            "count": st.sampled_from((None, 0, 1, 2, 7, 2**40, -1, True)),
            "name": st.sampled_from((None, "a", "b", "wt", "zz", "")),
            "macro": st.sampled_from((None, "QMN", "L1_WQ", ["QMN", "X"])),
            "frac_bits": st.sampled_from((None, 0, 7, 14, 255, 256, -1, -129, 1.5)),
            "cdtype": st.sampled_from((None, "int8", "int16", "float32", "uint8", "complex64")),
            "roles": st.sampled_from((None, ("value",), ("value", "frac"), ("type", "frac", "value"), ("frac",),
                                      ("x", "y"))),
            "key": st.sampled_from((None, "a", "b", "a.frac_bits", "")),
            "compressed": st.booleans(),
        }),
    })


def _array(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) if shape else 1
    if dt.kind == "f":
        v = rng.uniform(-3, 3, n)
    elif dt.kind == "c":
        v = rng.uniform(-3, 3, n) + 1j
    elif dt.kind == "b":
        v = rng.integers(0, 2, n)
    else:
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, n)
    return v.astype(dt).reshape(shape)


def _mutate(data, op):
    kind = op[0]
    if kind == "truncate":
        return data[: len(data) * op[1] // 1000]
    if kind == "flip":
        if not data:
            return data
        i = op[1] % len(data)
        return data[:i] + bytes([op[2]]) + data[i + 1:]
    if kind == "insert":
        i = op[1] % (len(data) + 1)
        return data[:i] + SNIPPETS[op[2]] + data[i:]
    if kind == "append":
        return data + SNIPPETS[op[1]]
    if kind == "header":
        if len(data) <= op[1]:
            return data
        return data[:op[1]] + bytes([op[2]]) + data[op[1] + 1:]
    if kind == "dup":
        if not data:
            return data
        i = op[1] % len(data)
        return data[:i] + data[i:i + op[2]] + data[i:]
    if kind == "delete":
        if not data:
            return data
        i = op[1] % len(data)
        return data[:i] + data[i + op[2]:]
    raise AssertionError(op)


def _encode(spec, a):
    fmt, o = spec["fmt"], spec["opts"]
    if fmt == "idx":
        try:
            return encode_idx(a)
        except (TypeError, ValueError):
            return bytes([0, 0, 0x0B, a.ndim]) + a.real.astype(np.int16).tobytes()
    if fmt in ("raw", "spec"):
        return np.ascontiguousarray(a).tobytes()
    if fmt == "c":
        try:
            text = format_c_array("a", a if a.size else np.zeros(1, a.dtype))
        except (TypeError, ValueError):
            text = "const int16_t a[] = { 1, 2, 3 };"
        extra = "\n#define N 3\nconst w_type b[N] = { QMN(int16_t, 14, 0.25), L1_WQ(-0.5), 1<<3, (int16_t)0x7f };\n"
        return (text + extra).encode()
    if fmt in ("npz", "npz_c"):
        buf = io.BytesIO()
        arrays = {"a": a, "b": np.arange(5, dtype=np.int16), "a.frac_bits": np.array(3, np.int32)}
        (np.savez_compressed if fmt == "npz_c" or o.get("compressed") else np.savez)(buf, **arrays)
        return buf.getvalue()
    if fmt == "npy":
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        return buf.getvalue()
    raise AssertionError(fmt)


def _documented_keyerror(e):
    tb = traceback.extract_tb(e.__traceback__)
    return bool(tb) and "mli/io/" in tb[-1].filename.replace(os.sep, "/") and "raise KeyError" in (tb[-1].line or "")


def run_io_spec(spec):
    try:
        _run(spec)
    except KeyError as e:
        if _documented_keyerror(e):
            raise DocumentedKeyError(str(e)) from e
        raise


def _run(spec):
    a = _array(spec["dtype"], spec["shape"], spec["seed"])
    data = _encode(spec, a)
    for op in spec["ops"]:
        data = _mutate(data, op)
    o = spec["opts"]
    fmt, via = spec["fmt"], spec["via"]
    with tempfile.TemporaryDirectory() as d:
        ext = {"idx": ".idx", "raw": ".bin", "c": ".h", "npz": ".npz", "npz_c": ".npz", "npy": ".npy",
               "spec": ".bin"}[fmt]
        path = os.path.join(d, "f" + ext)
        with open(path, "wb") as f:
            f.write(data)
        src = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(bytearray(data)),
               "path": path, "text": data}[via]
        before = bytes(src) if isinstance(src, (bytearray, memoryview)) else None
        try:
            if fmt == "idx":
                r = read_idx(src if via != "text" else path)
            elif fmt == "raw":
                kw = {k: o[k] for k in ("offset", "endian", "count") if k in o}
                r = read_raw(src if via != "text" else path, o.get("dtype", "int16"), o.get("shape"), **kw)
            elif fmt == "c":
                if via == "text":
                    src = data.decode("utf-8", "replace")
                elif via in ("bytearray", "memoryview"):
                    src = bytes(src)
                kw = dict(macro=o.get("macro"), frac_bits=o.get("frac_bits"), dtype=o.get("cdtype"),
                          arg_roles=o.get("roles"))
                if o.get("compressed"):
                    r = read_c_arrays(src, **kw)
                else:
                    r = read_c_array(src, o.get("name"), **kw)
            elif fmt in ("npz", "npz_c"):
                r = read_npz(path, o.get("key"))
            elif fmt == "npy":
                r = read_npy(path)
            else:  # a load_array spec string built from the options
                parts = [path]
                for k in ("dtype", "shape", "offset", "endian", "count"):
                    if k in o and o[k] is not None:
                        v = o[k]
                        v = "x".join(str(x) for x in v) if isinstance(v, tuple) else v
                        parts.append(f"{k}={v}")
                r = load_array(",".join(parts))
        finally:
            if before is not None and bytes(src) != before:
                raise Finding(f"{fmt} reader modified the caller's {via}")
        vals = r.values() if isinstance(r, dict) else [r]
        for v in vals:
            if not isinstance(v, np.ndarray):
                raise Finding(f"{fmt} reader returned {type(v).__name__}, not an ndarray")
            if v.dtype.byteorder not in "=|" and v.dtype.itemsize > 1:
                raise Finding(f"{fmt} reader returned non-native byte order {v.dtype}")

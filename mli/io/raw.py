"""Raw binary dumps: bare element bytes with no header, as firmware writes
them from memory (``fwrite(buf, 1, sizeof buf, f)``, a debugger's memory
save, a UART hex dump turned into bytes).

Nothing in the file says what it holds, so the reader is told: the dtype
(``int8``, ``int16``, ``int32``, ``uint8`` or ``float32``), the byte order
(``little``, ``big`` or ``native``; ARC cores are little-endian), an
optional byte offset of the first element and an optional shape (one entry
may be -1).  The size is checked exactly: a dump that is not a whole number
of elements, or whose element count does not fit the shape, is an error,
never silently truncated or padded.
"""

import math
import os

import numpy as np

from .limits import SizeLimitError, check_size, limit_text, max_array_bytes, read_bounded, read_exactly

#: dtype names a raw dump may hold.
DTYPES = {
    "int8": np.dtype(np.int8), "int16": np.dtype(np.int16), "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8), "float32": np.dtype(np.float32),
}
_ALIASES = {"i8": "int8", "i16": "int16", "i32": "int32", "u8": "uint8", "f32": "float32",
            "fx8": "int8", "fx16": "int16", "float": "float32", "int8_t": "int8",
            "int16_t": "int16", "int32_t": "int32", "uint8_t": "uint8"}
_ENDIAN = {"little": "<", "le": "<", "<": "<", "big": ">", "be": ">", ">": ">",
           "native": "=", "=": "="}

__all__ = ["read_raw", "write_raw", "parse_shape", "raw_dtype", "DTYPES"]


def raw_dtype(dtype, endian="little", argument="dtype"):
    """The numpy dtype of a raw dump: `dtype` one of :data:`DTYPES` (a name,
    or a numpy dtype of one of those kinds) in byte order `endian`."""
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        key = _ALIASES.get(key, key)
        if key not in DTYPES:
            raise ValueError(f"{argument}: unknown raw dtype {dtype!r} "
                             f"(use one of {', '.join(DTYPES)})")
        base = DTYPES[key]
    else:
        try:
            base = np.dtype(dtype).newbyteorder("=")
        except TypeError:
            raise TypeError(f"{argument}: expected a dtype name, got {dtype!r}") from None
        if base not in DTYPES.values():
            raise ValueError(f"{argument}: raw dumps hold {', '.join(DTYPES)}, not {base}")
    if not isinstance(endian, str) or endian.strip().lower() not in _ENDIAN:
        raise ValueError(f"endian: expected 'little', 'big' or 'native', got {endian!r}")
    return base.newbyteorder(_ENDIAN[endian.strip().lower()])


def parse_shape(shape, argument="shape"):
    """A shape tuple from ``(128, 32)``, ``[128, 32]``, ``128`` or the
    strings ``"128x32"`` / ``"128,32"`` / ``"128 32"``; one entry may be -1."""
    if shape is None:
        return None
    if isinstance(shape, str):
        text = shape.strip().strip("()[]")
        parts = [p for p in text.replace("x", ",").replace("X", ",").replace(" ", ",").split(",") if p]
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(f"{argument}: expected dims like 128x32, got {shape!r}") from None
    elif isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        dims = (int(shape),)
    else:
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValueError(f"{argument}: expected a sequence of integers, got {shape!r}") from None
        if any(isinstance(d, bool) or float(d) != int(d) for d in shape):
            raise ValueError(f"{argument}: expected integers, got {shape!r}")
    if sum(d == -1 for d in dims) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"{argument}: dims must be >= 0 with at most one -1, got {dims}")
    return dims


def _resolve_shape(shape, count, what):
    if shape is None:
        return (count,)
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if known == 0 or count % known:
            raise ValueError(f"{what}: {count} elements do not fill shape {shape}")
        return tuple(count // known if d == -1 else d for d in shape)
    if known != count:
        raise ValueError(f"{what}: shape {shape} needs {known} elements, the dump holds {count}")
    return shape


def _count(count):
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ValueError(f"count: expected an element count >= 0, got {count!r}")
    return int(count)


def read_raw(source, dtype, shape=None, *, offset=0, endian="little", count=None):
    """Read a raw dump into a native-byte-order array.

    Parameters
    ----------
    source : str, os.PathLike or bytes-like
        The file, or its content.
    dtype : str or numpy dtype
        ``int8``, ``int16``, ``int32``, ``uint8`` or ``float32``.
    shape : tuple or str, optional
        The array shape (one entry may be -1); default 1-D.
    offset : int
        Bytes to skip before the first element (a header, another tensor).
    endian : str
        ``little`` (default, ARC / x86), ``big`` or ``native``.
    count : int, optional
        Read only this many elements after `offset` (the rest of the file
        is then allowed); default: all bytes after `offset`, which must be
        a whole number of elements.

    Raises
    ------
    ValueError
        Unknown dtype or byte order, negative or too large offset, a size
        that is not a whole number of elements, fewer bytes than `count`
        needs, or a shape that does not match the element count.
    OSError
        The file cannot be read.
    """
    dt = raw_dtype(dtype, endian)
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"offset: expected a byte count >= 0, got {offset!r}")
    shp = parse_shape(shape)
    if isinstance(source, (bytes, bytearray, memoryview)):
        what, buf = "raw bytes", memoryview(source).cast("B")
        size = len(buf)
    else:
        what = os.fspath(source)
        size = os.path.getsize(source) if os.path.isfile(source) else None
        buf = None
    if size is None:            # a pipe or device: read it, but never more than the limit
        limit = max_array_bytes()
        with open(source, "rb") as f:
            if count is None:
                buf = read_bounded(f, what, limit)
            else:               # a count bounds what is needed: read only that
                need = offset + _count(count) * dt.itemsize
                if need > limit:
                    raise SizeLimitError(f"{what}: offset {offset} and {count} {dt.name} elements are {need} "
                                         f"bytes of the stream, more than {limit_text(limit)}")
                buf = read_exactly(f, need)
        buf = memoryview(buf)
        size = len(buf)
    if offset > size:
        raise ValueError(f"{what}: offset {offset} is past the end of the {size}-byte dump")
    avail = size - offset
    if count is not None:
        _count(count)
        nbytes = int(count) * dt.itemsize
        if nbytes > avail:
            raise ValueError(f"{what}: {count} {dt.name} elements need {nbytes} bytes after offset "
                             f"{offset}, only {avail} present")
    else:
        if avail % dt.itemsize:
            raise ValueError(f"{what}: {avail} bytes after offset {offset} are not a whole number of "
                             f"{dt.itemsize}-byte {dt.name} elements ({avail % dt.itemsize} bytes left over)")
        nbytes = avail
    n = nbytes // dt.itemsize
    final = _resolve_shape(shp, n, what)
    if buf is None:
        check_size(nbytes, what, f" of {dt.name} data")
        with open(source, "rb") as f:
            f.seek(offset)
            payload = f.read(nbytes)
        if len(payload) != nbytes:
            raise ValueError(f"{what}: dump shrank while reading")
    else:
        payload = buf[offset:offset + nbytes]
    return np.frombuffer(payload, dtype=dt).reshape(final).astype(dt.newbyteorder("="))


def write_raw(path, array, dtype=None, *, endian="little"):
    """Write `array` as a raw dump (elements only, row-major) in `dtype`
    (default: the array's, which must be one of :data:`DTYPES`) and byte
    order `endian`.  Values that do not fit `dtype` are an error, not
    wrapped.  Returns the number of bytes written."""
    a = np.asarray(array)
    dt = raw_dtype(a.dtype if dtype is None else dtype, endian)
    if a.dtype.kind in "iub" and dt.kind in "iu" and a.size:
        info = np.iinfo(dt)
        if a.min() < info.min or a.max() > info.max:
            raise ValueError(f"array: values {a.min()}..{a.max()} do not fit {dt.name}")
    elif a.dtype.kind == "f" and dt.kind in "iu":
        raise TypeError(f"array: float values cannot be written as {dt.name}; quantize them first")
    data = np.ascontiguousarray(a, dtype=dt).tobytes()
    with open(path, "wb") as f:
        f.write(data)
    return len(data)

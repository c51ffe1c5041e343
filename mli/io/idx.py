"""IDX files (the MNIST container, also used by the MLI examples).

Layout: two zero bytes, a type-code byte, a rank byte, ``rank`` big-endian
uint32 dimensions, then the elements in big-endian row-major order.

=========  =========
type code  dtype
=========  =========
0x08       uint8
0x09       int8
0x0B       int16
0x0C       int32
0x0D       float32
0x0E       float64
=========  =========

The data size the header announces is checked against the size limit of
:mod:`mli.io.limits` (1 GiB unless ``MLI_MAX_ARRAY_BYTES`` says otherwise)
before anything is read.  A pipe or device is parsed from its header:
exactly the announced bytes are read, and data after them is reported as
trailing data (at most one more chunk is read to see it), so an endless
stream is never read to its end.
"""

import os
import stat
import sys

import numpy as np

from .limits import CHUNK, check_size, read_exactly

#: IDX type code -> big-endian numpy dtype.
TYPE_CODES: "dict[int, np.dtype]" = {
    0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8"),
}
_CODE_OF_KIND = {(dt.kind, dt.itemsize): code for code, dt in TYPE_CODES.items()}
_MAX_DIM = 0xFFFFFFFF


def _parse_header(head, what):
    """(dtype, shape, header length) from the first bytes of an IDX file.

    `head` must hold at least the whole header if the file has one; `what`
    names the source in error messages.
    """
    if len(head) < 4:
        raise ValueError(f"{what}: truncated IDX header: {len(head)} bytes, need at least 4")
    if head[0] != 0 or head[1] != 0:
        raise ValueError(f"{what}: bad IDX magic: first two bytes are "
                         f"0x{head[0]:02x} 0x{head[1]:02x}, expected 0x00 0x00")
    code, rank = head[2], head[3]
    if code not in TYPE_CODES:
        known = ", ".join(f"0x{c:02X}" for c in TYPE_CODES)
        raise ValueError(f"{what}: unknown IDX type code 0x{code:02X} (known: {known})")
    header_len = 4 + 4 * rank
    if len(head) < header_len:
        raise ValueError(f"{what}: truncated IDX header: rank {rank} needs {header_len} "
                         f"bytes, got {len(head)}")
    shape = tuple(int.from_bytes(head[4 + 4 * i:8 + 4 * i], "big") for i in range(rank))
    return TYPE_CODES[code], shape, header_len


def _announced(dtype, shape, what, limit=True):
    """Bytes of element data the header announces (checked against the size limit
    unless `limit` is false: a file too short for them is better called truncated)."""
    count = 1
    for d in shape:                      # exact Python ints: no overflow possible
        count *= d
    nbytes = count * dtype.itemsize
    if count > sys.maxsize // dtype.itemsize:
        raise ValueError(f"{what}: IDX dims {shape} describe {count} elements, "
                         "more than this platform can index")
    if limit:
        check_size(nbytes, what, f" (IDX dims {shape} of {dtype.name})")
    return nbytes


def _data_size(dtype, shape, available, what):
    """Bytes of element data the header announces, checked against `available`."""
    nbytes = _announced(dtype, shape, what, limit=False)
    if nbytes > available:
        raise ValueError(f"{what}: IDX data truncated: dims {shape} of {dtype.name} need "
                         f"{nbytes} bytes, only {available} present")
    if nbytes < available:
        raise ValueError(f"{what}: {available - nbytes} bytes of trailing data after the "
                         f"{nbytes} bytes that dims {shape} of {dtype.name} describe")
    return _announced(dtype, shape, what)


def _decode(dtype, shape, payload):
    return np.frombuffer(payload, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def read_idx(source):
    """Read an IDX file or IDX bytes into a native-byte-order array.

    Parameters
    ----------
    source : str, os.PathLike, bytes, bytearray or memoryview
        A file path, or the complete content of an IDX file.

    Returns
    -------
    numpy.ndarray
        A new writable array (uint8, int8, int16, int32, float32 or
        float64) with the shape the header gives.

    Raises
    ------
    ValueError
        Bad magic, unknown type code, truncated header, data shorter or
        longer than the dims describe, or dims too large to index.  The
        announced size is checked against the real size before any data is
        read or allocated.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        buf = memoryview(source).cast("B")
        dtype, shape, hlen = _parse_header(bytes(buf[:4 + 4 * 255]), "IDX bytes")
        nbytes = _data_size(dtype, shape, len(buf) - hlen, "IDX bytes")
        return _decode(dtype, shape, buf[hlen:hlen + nbytes])
    what = os.fspath(source)
    with open(source, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return _read_stream(f, what)
        size = os.fstat(f.fileno()).st_size
        head = f.read(4)
        if len(head) == 4:
            head += f.read(4 * head[3])
        dtype, shape, hlen = _parse_header(head, what)
        nbytes = _data_size(dtype, shape, size - hlen, what)
        payload = f.read(nbytes)
        if len(payload) != nbytes:           # file shrank while reading
            raise ValueError(f"{what}: IDX data truncated while reading")
    return _decode(dtype, shape, payload)


def _read_stream(f, what):
    """An IDX array from a pipe or device: the header says how much to read
    (never read to the end, which may never come)."""
    head = read_exactly(f, 4)
    if len(head) == 4:
        head += read_exactly(f, 4 * head[3])
    dtype, shape, hlen = _parse_header(head, what)
    nbytes = _announced(dtype, shape, what)
    payload = read_exactly(f, nbytes)
    if len(payload) < nbytes:
        raise ValueError(f"{what}: IDX data truncated: dims {shape} of {dtype.name} need "
                         f"{nbytes} bytes, only {len(payload)} present")
    # one more read (read1: whatever the pipe has, without waiting for a full
    # chunk) tells whether anything follows; the stream is not read further
    # (how much follows is unknown: the message gives no count)
    if f.read1(CHUNK) if hasattr(f, "read1") else f.read(CHUNK):
        raise ValueError(f"{what}: trailing data after the "
                         f"{nbytes} bytes that dims {shape} of {dtype.name} describe")
    return _decode(dtype, shape, payload)


def encode_idx(array):
    """Return the IDX bytes of `array` (see :func:`write_idx`)."""
    a = np.asarray(array)
    code = _CODE_OF_KIND.get((a.dtype.kind, a.dtype.itemsize))
    if code is None:
        raise TypeError(f"IDX cannot store dtype {a.dtype}; use uint8, int8, int16, int32, "
                        "float32 or float64")
    if a.ndim > 255:
        raise ValueError(f"IDX rank is at most 255, array has {a.ndim} dims")
    if any(d > _MAX_DIM for d in a.shape):
        raise ValueError(f"IDX dims must fit in uint32, got shape {a.shape}")
    header = bytes([0, 0, code, a.ndim]) + b"".join(d.to_bytes(4, "big") for d in a.shape)
    return header + np.ascontiguousarray(a, dtype=TYPE_CODES[code]).tobytes()


def write_idx(path, array):
    """Write `array` to `path` as an IDX file (big-endian data).

    Parameters
    ----------
    path : str or os.PathLike
    array : array_like
        dtype uint8, int8, int16, int32, float32 or float64 (any byte
        order), at most 255 dims, each below 2**32.

    Raises
    ------
    TypeError
        Unsupported dtype.
    ValueError
        Too many dims or a dim too large for the header.
    """
    data = encode_idx(array)
    with open(path, "wb") as f:
        f.write(data)

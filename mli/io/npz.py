""".npy and .npz files, always with ``allow_pickle=False`` (a data file must
never run code), plus an optional frac-bits convention for .npz: the frac
bits of array ``KEY`` are stored as the 0-d integer array
``KEY.frac_bits``.

Reading is hardened against damaged or hostile files: whatever numpy,
zipfile or zlib raise on bad bytes (``zipfile.BadZipFile``, ``zlib.error``,
``EOFError``, ``OSError`` from the zip internals, ``UnicodeDecodeError``,
``SyntaxError`` / ``tokenize.TokenError`` / ``RecursionError`` from numpy's
header parser ...) comes out as a ``ValueError`` naming the file (and the
entry) and the problem.  Before any array is allocated, the shape and dtype
of its header are checked against the bytes that can actually follow: the
rest of a .npy file; for an .npz entry its declared size, which must fit the
entry's stored bytes (an entry stored uncompressed) or what deflate can
produce from them (at most 1032 bytes per compressed byte), so a lying
header or zip directory is refused instead of allocating gigabytes.
Entries must be stored or deflated (all numpy writes) and not encrypted.
A missing or unreadable file still raises the ``OSError`` of ``open``.

Size limit: an honest deflate stream still expands about 1000 times (a
2.4 MB .npz can hold 2.5 GB of zeros), so an array of more than
:func:`mli.io.limits.max_array_bytes` bytes (1 GiB unless
``mli.io.limits.MAX_ARRAY_BYTES`` or the environment variable
``MLI_MAX_ARRAY_BYTES`` sets another byte count) is refused with a
:class:`~mli.io.limits.SizeLimitError` (a ``ValueError``) naming the entry,
its size and the limit, checked from the header before anything is
allocated.  Reading all arrays of a file (``read_npz(path)``) counts them
against the limit together.
"""

import math
import os
import struct
import sys
import threading
import tokenize
import warnings
import zipfile
import zlib

import numpy as np
from numpy.lib import format as _npy_format

from .limits import SizeLimitError, limit_text, max_array_bytes

FRAC_SUFFIX = ".frac_bits"

__all__ = ["read_npy", "write_npy", "read_npz", "write_npz", "npz_keys", "npz_frac_bits", "FRAC_SUFFIX"]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
# Deflate emits at least one bit per 258-byte match: it cannot expand data by more
# than ~1032:1 (plus a little per block); a larger declared size is a lie.
_MAX_DEFLATE_RATIO = 1032
_DEFLATE_SLACK = 1 << 16

# What numpy's .npy reader, zipfile and zlib raise on damaged bytes besides
# ValueError (UnicodeDecodeError is one): all become our ValueError.  RuntimeError
# covers RecursionError (numpy's header parser), NotImplementedError (an unknown
# compression method) and zipfile's "encrypted, password required".
_DAMAGE = (ValueError, TypeError, EOFError, OSError, zipfile.BadZipFile, zlib.error, struct.error, SyntaxError,
           tokenize.TokenError, RuntimeError, OverflowError, IndexError, KeyError)


def _problem(e):
    """A short description of a low-level exception for messages."""
    msg = " ".join(str(e).split()) or "no details"
    if len(msg) > 200:
        msg = msg[:200] + "..."
    if type(e) is ValueError:
        return msg
    cls = type(e)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    return f"{name}: {msg}"


def _check_array(a, what):
    if a.dtype.hasobject:
        raise ValueError(f"{what}: object arrays are not supported")
    if a.dtype.names is not None:
        raise ValueError(f"{what}: structured arrays are not supported")
    return a.astype(a.dtype.newbyteorder("=")) if not a.dtype.isnative else a


# numpy parses an .npy header with ast.literal_eval, and CPython 3.11 can
# raise SystemError ("AST constructor recursion depth mismatch") when two
# threads do that at once (seen under `mli vectors --jobs 2`): every header
# the package reads, and every whole case file, takes this lock.
HEADER_LOCK = threading.Lock()


def _npy_header(f):
    """(shape, dtype) of the .npy stream at the cursor of `f`; the cursor
    ends after the header."""
    with HEADER_LOCK:
        version = _npy_format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = _npy_format.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):  # 3.0 only differs in utf-8 field names
            shape, _, dtype = _npy_format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")
    return shape, dtype


def load_npz_arrays(path):
    """``{name: array}`` of every entry of a small .npz file (a path or an
    open binary file) through numpy's loader, pickles refused, under
    :data:`HEADER_LOCK` (so threads may load case files side by side).
    Raises what :func:`numpy.load` raises for a damaged file."""
    with HEADER_LOCK:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}


def _read_npy_stream(f, nbytes, budget=None):
    """The array of the .npy stream at the cursor of `f` (a seekable binary
    file), which holds at most `nbytes` bytes from there on.  Checks the
    header against `nbytes` and the size limit (or `budget`, what is left of
    it) before numpy allocates anything."""
    start = f.tell()
    with warnings.catch_warnings():  # numpy's read_array below warns about Python-2 headers once
        warnings.simplefilter("ignore", UserWarning)
        shape, dtype = _npy_header(f)
    if dtype.hasobject:
        raise ValueError("holds Python objects (pickles are never loaded)")
    if dtype.names is not None:
        raise ValueError("structured arrays are not supported")
    if any(type(d) is not int or d < 0 for d in shape):
        raise ValueError(f"invalid shape {shape}")
    count = math.prod(shape)
    if count > sys.maxsize:
        raise ValueError(f"shape {shape} has too many elements")
    need = count * dtype.itemsize
    have = nbytes - (f.tell() - start)
    if need > have:
        raise ValueError(f"the header declares shape {shape} of {dtype} ({need} bytes of data), "
                         f"but at most {max(have, 0)} bytes follow it")
    limit = max_array_bytes()
    if need > (limit if budget is None else budget):
        left = "" if budget is None else f"the {max(budget, 0)} bytes left of "
        raise SizeLimitError(f"the array is {need} bytes (shape {shape} of {dtype}), more than {left}"
                             f"{limit_text(limit)}" + (" after the arrays before it" if left else ""))
    f.seek(start)
    return _npy_format.read_array(f, allow_pickle=False)


def _head(f, n):
    b = f.read(n)
    f.seek(0)
    return b


def read_npy(path):
    """The array of a .npy file (native byte order, no pickles).

    Raises ValueError for a file that is not a valid .npy, is damaged, or
    holds objects; OSError when the file cannot be opened."""
    what = os.fspath(path)
    with open(path, "rb") as f:
        try:
            head = _head(f, len(_NPY_MAGIC))
            if head.startswith(_ZIP_MAGICS):
                raise ValueError(f"{what}: is an .npz archive; name the array as {what}:KEY")
            if not head:
                raise ValueError(f"{what}: not a readable .npy file (the file is empty)")
            size = os.fstat(f.fileno()).st_size
            a = _read_npy_stream(f, size)
        except SizeLimitError as e:
            raise SizeLimitError(f"{what}: {e}") from None
        except _DAMAGE as e:
            if isinstance(e, ValueError) and str(e).startswith(what):
                raise
            raise ValueError(f"{what}: not a readable .npy file ({_problem(e)})") from None
    return _check_array(a, what)


class _Npz:
    """An open .npz archive: ``files`` as numpy names them (``a.npy`` ->
    ``a``), and :meth:`read` of one entry.  Every failure past ``open``
    is a ValueError naming the file."""

    def __init__(self, path):
        self.what = os.fspath(path)
        self._f = open(path, "rb")
        try:
            head = _head(self._f, len(_NPY_MAGIC))
            if head.startswith(_NPY_MAGIC):
                raise ValueError(f"{self.what}: is a .npy file, not an .npz archive")
            self._size = os.fstat(self._f.fileno()).st_size
            self._zip = zipfile.ZipFile(self._f)
            self._infos = {}
            self.files = []
            for info in self._zip.infolist():
                key = info.filename.removesuffix(".npy")
                if key in self._infos:
                    raise ValueError(f"{self.what}: the archive holds entry {key!r} twice")
                self._infos[key] = info
                self.files.append(key)
        except BaseException as e:
            self._f.close()
            if isinstance(e, ValueError) and str(e).startswith(self.what):
                raise
            if isinstance(e, _DAMAGE):
                raise ValueError(f"{self.what}: not a readable .npz file ({_problem(e)})") from None
            raise

    def close(self):
        try:
            self._zip.close()
        finally:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def read(self, key, budget=None):
        """The checked array of entry `key` (one of ``files``); `budget`:
        bytes left of the size limit (default the whole limit)."""
        info = self._infos[key]
        what = f"{self.what}:{key}"
        try:
            if info.flag_bits & 0x1:
                raise ValueError("the entry is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ValueError(f"compression method {info.compress_type} is not supported "
                                 f"(numpy writes stored or deflated entries)")
            if info.compress_size > self._size:
                raise ValueError(f"the zip directory declares {info.compress_size} compressed bytes, "
                                 f"more than the {self._size}-byte file")
            if info.compress_type == zipfile.ZIP_STORED:
                nbytes = min(info.file_size, info.compress_size)
            else:
                if info.file_size > _MAX_DEFLATE_RATIO * info.compress_size + _DEFLATE_SLACK:
                    raise ValueError(f"the zip directory declares {info.file_size} bytes from "
                                     f"{info.compress_size} deflated ones, which deflate cannot produce")
                nbytes = info.file_size
            with self._zip.open(info) as f:
                if not _head(f, len(_NPY_MAGIC)).startswith(_NPY_MAGIC):
                    raise ValueError("the entry is not a .npy array")
                a = _read_npy_stream(f, nbytes, budget)
        except SizeLimitError as e:
            raise SizeLimitError(f"{what}: {e}") from None
        except _DAMAGE as e:
            raise ValueError(f"{what}: cannot read entry ({_problem(e)})") from None
        return _check_array(a, what)


def _open_npz(path):
    return _Npz(path)


def npz_keys(path):
    """The array names of an .npz file (frac-bits entries excluded)."""
    with _open_npz(path) as z:
        return [k for k in z.files if not k.endswith(FRAC_SUFFIX)]


def read_npz(path, key=None):
    """One array of an .npz file (`key`; may be omitted when the file holds
    exactly one array), or with ``key=None`` on a multi-array file a dict of
    all arrays.

    Raises
    ------
    KeyError
        `key` is not in the file; the message lists the keys that are.
    ValueError
        Not an .npz file, a damaged or inconsistent archive or entry, or an
        entry holds objects (pickles are never loaded).  The message names
        the file (and entry).
    OSError
        The file cannot be opened.
    """
    what = os.fspath(path)
    with _open_npz(path) as z:
        keys = [k for k in z.files if not k.endswith(FRAC_SUFFIX)]
        if key is None:
            if len(keys) == 1:
                return z.read(keys[0])
            # the arrays together count against the size limit: many entries
            # each under it must not add up to gigabytes
            out, limit = {}, max_array_bytes()
            left = limit
            for k in keys:
                out[k] = z.read(k, left if left < limit else None)
                left -= out[k].nbytes
            return out
        if key not in z.files:
            raise KeyError(f"{what}: no array {key!r}; the file holds {', '.join(keys) or 'nothing'}")
        return z.read(key)


def npz_frac_bits(path):
    """``{key: frac_bits}`` for the arrays whose frac bits the file records."""
    out = {}
    with _open_npz(path) as z:
        for k in z.files:
            if k.endswith(FRAC_SUFFIX):
                v = z.read(k)
                if v.shape != () or v.dtype.kind not in "iu":
                    raise ValueError(f"{os.fspath(path)}: {k} must be a 0-d integer array")
                out[k[:-len(FRAC_SUFFIX)]] = int(v)
    return out


def write_npy(path, array):
    """Write one array as .npy (no pickles)."""
    a = np.asarray(array)
    _check_array(a, "array")
    np.save(path, a, allow_pickle=False)


def write_npz(path, arrays, *, frac_bits=None, compressed=False):
    """Write ``{key: array}`` to an .npz file; ``frac_bits`` (``{key: int}``)
    is stored as ``KEY.frac_bits`` entries that :func:`npz_frac_bits` reads
    back and :func:`read_npz` skips."""
    entries = {}
    for k, v in dict(arrays).items():
        if not isinstance(k, str) or not k or k.endswith(FRAC_SUFFIX):
            raise ValueError(f"arrays: bad key {k!r}")
        entries[k] = _check_array(np.asarray(v), f"arrays[{k!r}]")
    for k, f in dict(frac_bits or {}).items():
        if k not in entries:
            raise KeyError(f"frac_bits: {k!r} names no array")
        entries[k + FRAC_SUFFIX] = np.array(int(f), np.int32)
    (np.savez_compressed if compressed else np.savez)(path, **entries)

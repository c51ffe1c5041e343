"""One entry point for every array file format: :func:`load_array`.

A *spec* names a file, optionally the array inside it and reading options::

    x.idx                                  IDX (type from the header)
    y.npy
    coefficients.npz:L1_fc_wt              one array of an .npz (key may be
                                           omitted when the file holds one)
    dump.bin,dtype=int16,shape=128x32      raw dump (.bin .raw .dat)
    raw:fw_out,dtype=int8,endian=big,offset=64
    har_coefficients.c:L1_fc_wt_buf,macro=L1_WQ,frac=14,dtype=int16
    c:weights.inc:wt                       format given explicitly

Grammar: ``[FORMAT:]PATH[:SELECTOR][,KEY=VALUE...]`` with FORMAT one of
idx, npy, npz, raw, c (default: from the file extension).  Options:
``dtype shape offset endian count`` (raw), ``key`` (npz; same as the
selector), ``name macro frac dtype roles`` (c; ``name`` same as the
selector, ``roles`` e.g. ``value/frac``).  A spec may also be a dict with
the same keys plus ``path`` and ``format`` (what case files use).
"""

import os
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from . import c_array, npz, raw
from .idx import read_idx

__all__ = ["ArraySpec", "parse_spec", "load_array", "FORMATS"]

FORMATS = ("idx", "npy", "npz", "raw", "c")
_EXT = {".idx": "idx", ".npy": "npy", ".npz": "npz", ".bin": "raw", ".raw": "raw", ".dat": "raw",
        ".c": "c", ".h": "c", ".inc": "c", ".cc": "c", ".cpp": "c", ".hpp": "c"}
_OPTION_KEYS = {"dtype", "shape", "offset", "endian", "count", "key", "name", "macro", "frac", "roles",
                "format", "path"}


@dataclass
class ArraySpec:
    """A parsed spec: where an array is and how to read it."""

    path: str
    format: Optional[str] = None
    selector: Optional[str] = None          # npz key or C array name
    dtype: Optional[str] = None
    shape: Optional[tuple] = None
    offset: int = 0
    endian: Optional[str] = None
    count: Optional[int] = None
    macro: Optional[str] = None
    frac_bits: Optional[int] = None
    roles: Optional[tuple] = None
    text: str = field(default="", compare=False)

    def resolved_format(self):
        if self.format:
            return self.format
        base = os.path.basename(self.path).lower()
        ext = os.path.splitext(base)[1]
        if ext in _EXT:
            return _EXT[ext]
        if "idx" in base and "ubyte" in base:
            return "idx"
        raise ValueError(f"{self.text or self.path}: cannot tell the format from the file name; "
                         f"write FORMAT:PATH with FORMAT one of {', '.join(FORMATS)}")

    def with_defaults(self, **defaults):
        """A copy where each option left unset takes the value in `defaults`."""
        upd = {k: v for k, v in defaults.items() if v is not None and getattr(self, k) is None}
        return replace(self, **upd)

    def __str__(self):
        return self.text or self.path


def _int_opt(key, value, text):
    try:
        return int(str(value), 0)
    except ValueError:
        raise ValueError(f"{text}: option {key}={value!r} is not an integer") from None


def _apply_options(spec, opts, text):
    for key, value in opts.items():
        if key not in _OPTION_KEYS:
            raise ValueError(f"{text}: unknown option {key!r} (known: {', '.join(sorted(_OPTION_KEYS - {'path'}))})")
        if value is None:
            continue
        if key in ("key", "name"):
            spec.selector = str(value)
        elif key == "shape":
            spec.shape = raw.parse_shape(value, f"{text}: shape")
        elif key in ("offset", "count"):
            setattr(spec, key, _int_opt(key, value, text))
        elif key == "frac":
            spec.frac_bits = _int_opt(key, value, text)
        elif key == "roles":
            spec.roles = tuple(value.replace(",", "/").split("/")) if isinstance(value, str) else tuple(value)
        elif key == "format":
            if value not in FORMATS:
                raise ValueError(f"{text}: unknown format {value!r} (use one of {', '.join(FORMATS)})")
            spec.format = value
        elif key == "path":
            spec.path = os.fspath(value)
        else:
            setattr(spec, key, str(value))
    return spec


def parse_spec(spec, *, base_dir=None):
    """An :class:`ArraySpec` from a spec string, a dict, a path or an
    ArraySpec.  Relative paths are taken relative to `base_dir` when given
    (case files name files relative to themselves)."""
    if isinstance(spec, ArraySpec):
        out = replace(spec)
    elif isinstance(spec, dict):
        if "path" not in spec and "file" not in spec:
            raise ValueError(f"{spec!r}: an array spec table needs 'path'")
        d = dict(spec)
        if "file" in d:
            d["path"] = d.pop("file")
        p = d.pop("path")
        if not isinstance(p, (str, os.PathLike)):
            raise ValueError(f"{spec!r}: path must be a string")
        inner = parse_spec(os.fspath(p), base_dir=base_dir) if isinstance(p, str) else ArraySpec(os.fspath(p))
        out = _apply_options(inner, d, os.fspath(p))
        out.text = str(spec)
        return out
    elif isinstance(spec, os.PathLike):
        out = ArraySpec(os.fspath(spec), text=os.fspath(spec))
    elif isinstance(spec, str):
        text = spec.strip()
        if not text:
            raise ValueError("array spec is empty")
        parts = text.split(",")
        opts = {}
        while len(parts) > 1 and "=" in parts[-1] and "/" not in parts[-1].split("=", 1)[0]:
            k, v = parts.pop().split("=", 1)
            opts[k.strip().lower()] = v.strip()
        body = ",".join(parts)
        fmt = None
        head, sep, rest = body.partition(":")
        if sep and head.lower() in FORMATS and not os.path.exists(body):
            fmt, body = head.lower(), rest
        selector = None
        if not os.path.exists(_join(base_dir, body)) and ":" in body:
            p, _, sel = body.rpartition(":")
            if p and sel and "/" not in sel and "\\" not in sel:
                body, selector = p, sel
        out = ArraySpec(body, format=fmt, selector=selector, text=text)
        _apply_options(out, dict(reversed(list(opts.items()))), text)
    else:
        raise TypeError(f"array spec: expected a string, path or dict, got {type(spec).__name__}")
    if base_dir is not None:
        out.path = _join(base_dir, out.path)
    return out


def _join(base_dir, path):
    if base_dir is None or os.path.isabs(path):
        return path
    return os.path.join(base_dir, path)


def load_array(spec, *, base_dir=None, **options):
    """Read the array a spec names (see the module docstring).

    Parameters
    ----------
    spec : str, os.PathLike, dict or ArraySpec
    base_dir : str, optional
        Directory that relative paths are relative to.
    **options
        Reading options that override the spec's (``dtype``, ``shape``,
        ``offset``, ``endian``, ``count``, ``key``, ``name``, ``macro``,
        ``frac``, ``roles``, ``format``).

    Returns
    -------
    numpy.ndarray
        In native byte order.  A raw dump with a ``shape`` is reshaped;
        for other formats a given ``shape`` must match the stored one
        (or its element count, which then reshapes).

    Raises
    ------
    OSError
        The file is missing or unreadable.
    KeyError
        The npz key or C array name is not in the file.
    ValueError
        Anything malformed; messages start with the spec.  An array (or a
        stream, or a C file's arrays together) of more bytes than the size
        limit of :mod:`mli.io.limits` (1 GiB, or ``MLI_MAX_ARRAY_BYTES``)
        raises its subclass ``SizeLimitError`` before it is allocated.
    """
    s = parse_spec(spec, base_dir=base_dir)
    if options:
        _apply_options(s, options, str(s))
    return read_spec(s)


def read_spec(s):
    """Read the array of a parsed :class:`ArraySpec`."""
    fmt = s.resolved_format()
    if not os.path.exists(s.path):
        raise FileNotFoundError(f"{s}: no such file: {s.path}")
    if os.path.isdir(s.path):
        raise IsADirectoryError(f"{s}: is a directory, not a file: {s.path}")
    if fmt == "raw":
        if s.dtype is None:
            raise ValueError(f"{s}: a raw dump needs dtype=int8|int16|int32|uint8|float32")
        return raw.read_raw(s.path, s.dtype, s.shape, offset=s.offset, endian=s.endian or "little", count=s.count)
    if s.endian is not None or s.offset or s.count is not None:
        raise ValueError(f"{s}: offset/endian/count apply to raw dumps only")
    if fmt == "idx":
        a = read_idx(s.path)
    elif fmt == "npy":
        a = npz.read_npy(s.path)
    elif fmt == "npz":
        a = npz.read_npz(s.path, s.selector)
        if isinstance(a, dict):
            raise KeyError(f"{s}: the file holds {len(a)} arrays ({', '.join(a)}); name one as "
                           f"{s.path}:KEY")
    elif fmt == "c":
        a = c_array.read_c_array(s.path, s.selector, macro=s.macro, frac_bits=s.frac_bits, dtype=s.dtype,
                                 arg_roles=s.roles)
    else:  # pragma: no cover - resolved_format checks
        raise ValueError(f"{s}: unknown format {fmt!r}")
    if fmt not in ("c", "raw") and s.dtype is not None:
        want = raw.raw_dtype(s.dtype, "native", f"{s}: dtype")
        if a.dtype != want:
            if a.dtype.kind == "f" and want.kind in "iu":
                raise TypeError(f"{s}: holds {a.dtype} values, not {want}")
            if a.size and want.kind in "iu" and (a.min() < np.iinfo(want).min or a.max() > np.iinfo(want).max):
                raise ValueError(f"{s}: values {a.min()}..{a.max()} do not fit {want}")
            a = a.astype(want)
    if s.shape is not None and fmt != "raw":
        shape = raw._resolve_shape(s.shape, a.size, str(s))
        a = a.reshape(shape)
    return a

""".npy and .npz files, always with ``allow_pickle=False`` (a data file must
never run code), plus an optional frac-bits convention for .npz: the frac
bits of array ``KEY`` are stored as the 0-d integer array
``KEY.frac_bits``."""

import os
import zipfile

import numpy as np

FRAC_SUFFIX = ".frac_bits"

__all__ = ["read_npy", "write_npy", "read_npz", "write_npz", "npz_keys", "npz_frac_bits", "FRAC_SUFFIX"]


def _check_array(a, what):
    if a.dtype.hasobject:
        raise ValueError(f"{what}: object arrays are not supported")
    if a.dtype.names is not None:
        raise ValueError(f"{what}: structured arrays are not supported")
    return a.astype(a.dtype.newbyteorder("=")) if not a.dtype.isnative else a


def read_npy(path):
    """The array of a .npy file (native byte order, no pickles).

    Raises ValueError for a file that is not a valid .npy or holds objects."""
    what = os.fspath(path)
    try:
        a = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{what}: not a readable .npy file ({e})") from None
    if isinstance(a, np.lib.npyio.NpzFile):
        a.close()
        raise ValueError(f"{what}: is an .npz archive; name the array as {what}:KEY")
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{what}: not a .npy file")
    return _check_array(a, what)


def _open_npz(path):
    what = os.fspath(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{what}: not a readable .npz file ({e})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{what}: is a .npy file, not an .npz archive")
    return z


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
        Not an .npz file, or an entry holds objects (pickles are never loaded).
    """
    what = os.fspath(path)
    with _open_npz(path) as z:
        keys = [k for k in z.files if not k.endswith(FRAC_SUFFIX)]
        try:
            if key is None:
                if len(keys) == 1:
                    return _check_array(z[keys[0]], f"{what}:{keys[0]}")
                return {k: _check_array(z[k], f"{what}:{k}") for k in keys}
            if key not in z.files:
                raise KeyError(f"{what}: no array {key!r}; the file holds {', '.join(keys) or 'nothing'}")
            return _check_array(z[key], f"{what}:{key}")
        except (ValueError, zipfile.BadZipFile, EOFError) as e:
            if isinstance(e, ValueError) and str(e).startswith(what):
                raise
            raise ValueError(f"{what}: cannot read entry ({e})") from None


def npz_frac_bits(path):
    """``{key: frac_bits}`` for the arrays whose frac bits the file records."""
    out = {}
    with _open_npz(path) as z:
        for k in z.files:
            if k.endswith(FRAC_SUFFIX):
                v = z[k]
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

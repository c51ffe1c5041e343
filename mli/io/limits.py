"""The size limit of every reader in :mod:`mli.io`.

A data file can announce far more data than it holds (a deflate bomb in an
.npz, ``a[67108864] = {0}`` in C, a lying IDX header) or never end (a
device such as ``/dev/zero``, a FIFO).  So every reader refuses an array,
or a C file's arrays together, or a stream, of more than
:func:`max_array_bytes` bytes, with a :class:`SizeLimitError` (a
``ValueError``) naming the file, entry or array, its size and the limit.
Announced sizes are checked before anything is allocated; streams are read
in chunks and given up as soon as they pass the limit.

The limit is, first found:

* :data:`MAX_ARRAY_BYTES` of this module, when set to a byte count
  (``mli.io.limits.MAX_ARRAY_BYTES = 4 << 30``; ``None``, the default,
  means "not set");
* the environment variable ``MLI_MAX_ARRAY_BYTES`` (a byte count, read at
  each check, so the command line tools obey it too);
* :data:`DEFAULT_MAX_ARRAY_BYTES`, 1 GiB: far above any microcontroller
  model and well below a workstation's memory.
"""


from .._settings import limit

__all__ = ["MAX_ARRAY_BYTES", "DEFAULT_MAX_ARRAY_BYTES", "ENV_VAR", "SizeLimitError", "max_array_bytes",
           "check_size", "read_bounded", "read_exactly"]

#: the limit when neither MAX_ARRAY_BYTES nor the environment sets one
DEFAULT_MAX_ARRAY_BYTES = 1 << 30
#: the environment variable that sets the limit (a byte count)
ENV_VAR = "MLI_MAX_ARRAY_BYTES"
#: the limit in bytes; None: from the environment, else the default
MAX_ARRAY_BYTES = None

# streams are read in pieces of this size, so a refused stream costs at most
# the limit plus one chunk
CHUNK = 1 << 20


class SizeLimitError(ValueError):
    """More data than :func:`max_array_bytes` allows; the message names the
    file (entry, array), the size and the limit."""


def max_array_bytes():
    """The size limit in bytes now in force (see the module docstring)."""
    return limit(MAX_ARRAY_BYTES, "mli.io.limits.MAX_ARRAY_BYTES", ENV_VAR, DEFAULT_MAX_ARRAY_BYTES, "byte count")


def limit_text(limit=None):
    """``"the limit of N bytes (MLI_MAX_ARRAY_BYTES)"`` for messages."""
    return f"the limit of {max_array_bytes() if limit is None else limit} bytes ({ENV_VAR})"


def check_size(nbytes, what, detail=""):
    """Raise :class:`SizeLimitError` when `nbytes` passes the limit; `what`
    names the data, `detail` (e.g. ``" (shape (4, 8) of int16)"``) follows
    the size in the message."""
    limit = max_array_bytes()
    if nbytes > limit:
        raise SizeLimitError(f"{what}: {nbytes} bytes{detail}, more than {limit_text(limit)}")


def read_bounded(f, what, limit=None):
    """All bytes of the binary stream `f` from its cursor, read in chunks;
    :class:`SizeLimitError` as soon as they pass `limit` (default the
    limit in force), before the rest is read."""
    limit = max_array_bytes() if limit is None else limit
    parts, n = [], 0
    while True:
        chunk = f.read(min(CHUNK, limit + 1 - n))
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        n += len(chunk)
        if n > limit:
            raise SizeLimitError(f"{what}: the stream holds more than {limit_text(limit)}")


def read_exactly(f, nbytes):
    """Up to `nbytes` bytes of `f` (fewer only at the end of the stream):
    a pipe returns short reads, so read until done."""
    parts, n = [], 0
    while n < nbytes:
        chunk = f.read(min(CHUNK, nbytes - n))
        if not chunk:
            break
        parts.append(chunk)
        n += len(chunk)
    return b"".join(parts)

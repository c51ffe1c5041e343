"""What the MLI 1.1 and MLI 2.0.2 C exports (:mod:`mli.tools.export_c`,
:mod:`mli.tools.export_c2`) share: their error, the check of a C identifier and of a buffer's size."""
import re

from ..io.limits import check_size

__all__ = ["ExportError"]

_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_C_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
               "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
               "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
               "unsigned", "void", "volatile", "while", "_Bool"}


class ExportError(ValueError):
    """Bad input or option for the export; the message names it."""


def _check_name(name, what="name"):
    if not isinstance(name, str) or not _IDENT.match(name) or name in _C_KEYWORDS:
        raise ExportError(f"{what}: {name!r} is not a valid C identifier")
    return name


def _buffer_bytes(name, shape, itemsize):
    """A buffer's bytes, refused before anything is allocated when an MLI
    capacity (a uint32) cannot hold them or they pass the size limit of
    :mod:`mli.io.limits` (what a file may hold; a buffer asked for on the
    command line is no larger)."""
    n = itemsize
    for d in shape:
        n *= int(d)
    if n > 0xFFFFFFFF:
        raise ExportError(f"{name}: a buffer of shape {list(shape)} takes {n} bytes, more than an MLI capacity "
                          "(2**32-1) holds")
    try:
        check_size(n, f"{name}: buffer of shape {list(shape)}")
    except ValueError as e:
        raise ExportError(str(e)) from None
    return n

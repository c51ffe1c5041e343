"""What the MLI 1.1 and MLI 2.0.2 C exports (:mod:`mli.tools.export_c`,
:mod:`mli.tools.export_c2`) share: their error and the check of a C identifier."""
import re

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

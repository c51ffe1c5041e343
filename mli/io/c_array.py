"""C initializer arrays in .c / .h / .inc files: read them, write them.

Reading understands what firmware sources hold::

    const int16_t wt[2][3] = { {0x10, -2, (int16_t)7}, {1, 2, 3} };  /* comments */
    const w_type _W L1_fc_wt_buf[] = { L1_WQ(-0.2528931797), L1_WQ(0.5 + 1.), ... };
    static const float IN_SEQ[] = { 1.5f, -2e-3, ... };
    int8_t q[] = { QMN(int8_t, 6, 0.25), ... };   // MLI's QMN(type, frac, value)

* integers in decimal, hex (``0x``), octal and binary, with ``u``/``l``
  suffixes; negative values; casts such as ``(int16_t)``;
* floats, plain (read as doubles, then stored as the declared type) or
  wrapped in a quantization macro **that you name** (``macro="L1_WQ"``):
  the macro's value is quantized with the QMN rule of MLI's examples
  (:func:`qmn`: times 2^frac in double precision, half away from zero,
  saturated to the container).  The frac bits come from ``frac_bits=`` or
  from the macro's own argument (``QMN(0.25, 14)``: value, frac;
  ``QMN(int16_t, 14, 0.25)``: type, frac, value, as MLI's ``QMN``);
* constant expressions (``+ - * / % << >>``, parentheses) and object-like
  ``#define NAME value`` constants of the same file;
* ``//`` and ``/* */`` comments; preprocessor lines are otherwise ignored
  (all branches of an ``#if`` are seen: a name defined twice is an error).

Limits, so that a hostile file gives a :class:`CParseError` (a
``ValueError``) naming the array instead of exhausting the stack or the
memory: expressions (parentheses, unary operators, casts, macro arguments
and ``#define`` expansions together) nest at most :data:`MAX_NESTING` deep;
integer values have at most :data:`MAX_INT_BITS` bits (C's are 64) and
shift counts must not be negative; an array declares at most
:data:`MAX_ELEMENTS` elements (2**26: C zero-fills a declared size beyond the
initializers, so ``a[1000] = {0}`` is legal and allocates; a declared size
is therefore not compared with the initializer count, only capped, far above
any microcontroller's memory).  A declared size must be a non-negative
integer; one that names an identifier this file does not define is not
applied (the values stay flat).

The bytes the arrays declare are also bounded by the size limit of
:mod:`mli.io.limits` (1 GiB unless ``MLI_MAX_ARRAY_BYTES`` says otherwise),
per array and for all arrays read from one file together (forty
``int16_t a[67108864] = {0};`` are 5 GiB of zero fill): the declared sizes
of every array are checked before any array is evaluated or allocated, and
a :class:`~mli.io.limits.SizeLimitError` (a ``ValueError``) names the array
and the limit.  The source text itself is read up to the same limit (a
device or pipe is never read to its end).

Writing (:func:`format_c_array`) gives a plain, compilable definition.
"""

import math
import os
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .limits import SizeLimitError, limit_text, max_array_bytes, read_bounded

__all__ = ["CArray", "qmn", "list_c_arrays", "read_c_array", "read_c_arrays", "format_c_array",
           "c_type_of", "C_TYPES", "MAX_NESTING", "MAX_INT_BITS", "MAX_ELEMENTS"]

#: deepest nesting of one expression (parentheses, unary operators, casts,
#: macro arguments and #define expansions counted together)
MAX_NESTING = 100
#: widest integer value of an expression (C's integer constants have 64 bits)
MAX_INT_BITS = 128
#: most elements an array may declare (the zero fill past the initializers
#: is allocated, so the declared size must be bounded)
MAX_ELEMENTS = 1 << 26

#: C type spellings -> numpy dtype
C_TYPES = {
    "int8_t": np.int8, "q7_t": np.int8, "signed char": np.int8,
    "int16_t": np.int16, "q15_t": np.int16, "short": np.int16, "short int": np.int16,
    "signed short": np.int16, "int32_t": np.int32, "q31_t": np.int32, "int": np.int32,
    "signed int": np.int32, "signed": np.int32, "long": np.int64, "int64_t": np.int64,
    "uint8_t": np.uint8, "unsigned char": np.uint8, "uint16_t": np.uint16,
    "unsigned short": np.uint16, "uint32_t": np.uint32, "unsigned int": np.uint32,
    "unsigned": np.uint32, "float": np.float32, "double": np.float64,
}
_EMIT_TYPES = {np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t", np.dtype(np.int32): "int32_t",
               np.dtype(np.int64): "int64_t", np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
               np.dtype(np.uint32): "uint32_t", np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_QUALIFIERS = {"const", "static", "volatile", "extern", "register", "restrict", "__restrict",
               "_Alignas", "__attribute__", "__align", "__xy", "__unaligned"}


class CParseError(ValueError):
    """A C source the reader cannot understand; the message names the file,
    line and array."""


class _UnknownName(CParseError):
    """An identifier or function-like macro the file does not define."""


class _TooDeep(CParseError):
    """An expression nested more than MAX_NESTING deep."""


@dataclass
class CArray:
    """One array definition: ``name``, its values (numpy, flat or shaped by
    the declared dims), the declared C ``c_type`` (as written) and ``line``."""

    name: str
    values: np.ndarray
    c_type: str
    dims: Optional[tuple]
    line: int


# --------------------------------------------------------------------- QMN
def qmn(values, frac_bits, dtype):
    """Quantize float values with the QMN rule of the MLI examples: in double
    precision ``v * 2**frac``, plus one half for ``v >= 0`` else minus one
    half, clamped to the range of `dtype`, truncated toward zero.

    Raises ValueError for NaN or infinity (which have no fixed-point value)
    and for frac bits outside -128..255."""
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"dtype: QMN needs an integer container type, got {dt}")
    if isinstance(frac_bits, bool) or not isinstance(frac_bits, (int, np.integer)) or not -128 <= frac_bits <= 255:
        raise ValueError(f"frac_bits: expected an integer in 0..255, got {frac_bits!r}")
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        bad = np.flatnonzero(~np.isfinite(v.reshape(-1)))[0]
        raise ValueError(f"values: element {bad} is {v.reshape(-1)[bad]}, which cannot be quantized")
    info = np.iinfo(dt)
    s = v * math.ldexp(1.0, int(frac_bits))
    s = s + np.where(v >= 0, 0.5, -0.5)
    s = np.clip(s, float(info.min), float(info.max))
    return np.trunc(s).astype(dt)


def c_type_of(c_type):
    """The numpy dtype of a C type spelling (``"const int16_t"`` ...), or
    None when the type is not a standard one (a typedef such as ``w_type``)."""
    words = [w for w in c_type.replace("*", " ").split() if w not in _QUALIFIERS and not w.startswith("_")
             or w in ("_Bool",)]
    for n in range(len(words), 0, -1):
        for i in range(len(words) - n + 1):
            key = " ".join(words[i:i + n])
            if key in C_TYPES:
                return np.dtype(C_TYPES[key])
    return None


# ------------------------------------------------------------ lexing
def _strip_comments(text):
    """Comments replaced by spaces (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise CParseError(f"line {text.count(chr(10), 0, i) + 1}: unterminated /* comment")
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j + 2]))
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _split_preprocessor(text):
    """(text with preprocessor lines blanked, {name: value text} of the
    object-like #defines)."""
    lines = text.split("\n")
    defines = {}
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("#"):
            start = i
            parts = [lines[i]]
            while parts[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                parts[-1] = parts[-1][:-1]
                parts.append(lines[i])
            logical = " ".join(parts)
            m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(\(?)(.*)$", logical)
            if m and not m.group(2):
                defines[m.group(1)] = m.group(3).strip()
            for k in range(start, i + 1):
                lines[k] = ""
        i += 1
    return "\n".join(lines), defines


_TOKEN = re.compile(r"""
    (?P<float>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fFlL]?|\d+[eE][+-]?\d+[fFlL]?)
  | (?P<int>0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)(?P<isfx>[uUlL]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<op><<|>>|[-+*/%()~,?:<>=!&|^])
  | (?P<space>\s+)
  | (?P<bad>.)
""", re.VERBOSE)

_INT_CASTS = {"int8_t": 8, "int16_t": 16, "int32_t": 32, "int64_t": 64, "q7_t": 8, "q15_t": 16,
              "q31_t": 32, "short": 16, "int": 32, "long": 64, "char": 8}
_UINT_CASTS = {"uint8_t": 8, "uint16_t": 16, "uint32_t": 32, "uint64_t": 64, "unsigned": 32}


def _check_int(v, what="integer value"):
    if isinstance(v, int) and v.bit_length() > MAX_INT_BITS:
        raise CParseError(f"{what} out of range (more than {MAX_INT_BITS} bits)")
    return v


def _tokens(expr):
    toks = []
    for m in _TOKEN.finditer(expr):
        kind = m.lastgroup if m.lastgroup != "isfx" else "int"
        if m.group("float") is not None:
            toks.append(("num", float(m.group("float").rstrip("fFlL"))))
        elif m.group("int") is not None:
            s = m.group("int")
            if s[:2] in ("0x", "0X"):
                v = int(s, 16)
            elif s[:2] in ("0b", "0B"):
                v = int(s, 2)
            elif len(s) > 1 and s[0] == "0":
                v = int(s, 8)
            else:
                try:
                    v = int(s)
                except ValueError:  # more digits than int() accepts
                    raise CParseError(f"integer literal of {len(s)} digits is out of range") from None
            _check_int(v, "integer literal")
            toks.append(("num", v))
        elif kind == "ident":
            toks.append(("ident", m.group("ident")))
        elif kind == "op":
            toks.append(("op", m.group("op")))
        elif kind == "bad":
            raise CParseError(f"unexpected character {m.group('bad')!r}")
    return toks


def _trunc_div(v, r):
    """C integer division (truncates toward zero), exact for any size."""
    q = abs(v) // abs(r)
    return q if (v >= 0) == (r >= 0) else -q


class _Eval:
    """Recursive-descent evaluator of one C constant expression."""

    def __init__(self, tokens, ctx):
        self.t, self.i, self.ctx = tokens, 0, ctx

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else (None, None)

    def take(self, op=None):
        tok = self.peek()
        if op is not None and tok != ("op", op):
            raise CParseError(f"expected {op!r}, found {self._show(tok)}")
        self.i += 1
        return tok

    @staticmethod
    def _show(tok):
        return "end of expression" if tok[0] is None else repr(tok[1])

    def run(self):
        v = self.expr()
        if self.i != len(self.t):
            raise CParseError(f"unexpected {self._show(self.peek())}")
        return v

    # binary operators by precedence (higher binds tighter); all left-associative
    _BINARY = {"<<": 0, ">>": 0, "+": 1, "-": 1, "*": 2, "/": 2, "%": 2}

    def expr(self, min_prec=0):
        """Precedence climbing (one Python frame per nesting level, not one
        per grammar level)."""
        v = self.unary()
        while True:
            tok = self.peek()
            prec = self._BINARY.get(tok[1]) if tok[0] == "op" else None
            if prec is None or prec < min_prec:
                return v
            self.take()
            v = self._binary(tok[1], v, self.expr(prec + 1))

    @staticmethod
    def _binary(op, v, r):
        if op in ("<<", ">>"):
            if not isinstance(v, int) or not isinstance(r, int):
                raise CParseError("shift of a non-integer")
            if r < 0:
                raise CParseError(f"negative shift count {r}")
            if op == ">>":
                return v >> r
            if v and r > MAX_INT_BITS:
                raise CParseError(f"shift count {r} out of range")
            return _check_int(v << r)
        if op == "+":
            return _check_int(v + r)
        if op == "-":
            return _check_int(v - r)
        if op == "*":
            return _check_int(v * r)
        if r == 0:
            raise CParseError("division by zero")
        if op == "/":
            return _trunc_div(v, r) if isinstance(v, int) and isinstance(r, int) else v / r
        if not isinstance(v, int) or not isinstance(r, int):
            raise CParseError("% of a non-integer")
        return v - r * _trunc_div(v, r)  # C: the sign of the dividend

    def _cast_type(self):
        """The words of a cast ``(type words)`` at the cursor, or None."""
        j = self.i + 1
        words = []
        while self.peek(j - self.i)[0] == "ident":
            words.append(self.peek(j - self.i)[1])
            j += 1
        if not words or self.peek(j - self.i) != ("op", ")"):
            return None
        nxt = self.peek(j - self.i + 1)
        if nxt[0] is None or nxt == ("op", ")") or nxt == ("op", ",") or \
                (nxt[0] == "op" and nxt[1] not in "(-+~"):
            return None
        if len(words) == 1 and words[0] in self.ctx.defines and words[0] not in self.ctx.macros:
            return None  # (CONSTANT) - a parenthesised define, not a cast
        return words, j

    def unary(self):
        # every nesting (parentheses, unary operators, casts, macro arguments,
        # #define expansions) passes here: count it against MAX_NESTING
        ctx = self.ctx
        if ctx.depth >= MAX_NESTING:
            raise _TooDeep(f"expression nested more than {MAX_NESTING} deep")
        ctx.depth += 1
        try:
            tok = self.peek()
            if tok == ("op", "-"):
                self.take()
                return -self.unary()
            if tok == ("op", "+"):
                self.take()
                return +self.unary()
            if tok == ("op", "~"):
                self.take()
                v = self.unary()
                if not isinstance(v, int):
                    raise CParseError("~ of a non-integer")
                return ~v
            if tok == ("op", "("):
                cast = self._cast_type()
                if cast is not None:
                    words, j = cast
                    self.i = j + 1
                    return self._cast(words, self.unary())
                self.take()
                v = self.expr()
                self.take(")")
                return v
            return self.primary()
        finally:
            ctx.depth -= 1

    def _cast(self, words, v):
        name = " ".join(w for w in words if w not in ("const", "volatile", "signed"))
        if not name:
            name = "int"
        if name in ("float", "double"):
            return float(np.float32(v)) if name == "float" else float(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise CParseError(f"({name}) of {v}: it has no integer value")
        bits, signed = None, True
        if name in _INT_CASTS:
            bits = _INT_CASTS[name]
        elif name in _UINT_CASTS or name.startswith("unsigned"):
            bits, signed = _UINT_CASTS.get(name, {"unsigned char": 8, "unsigned short": 16}.get(name, 32)), False
        else:  # an unknown typedef (w_type): keep the value, the array's dtype decides
            return int(v) if isinstance(v, int) else math.trunc(v)
        iv = int(v) if isinstance(v, int) else math.trunc(v)
        iv &= (1 << bits) - 1
        if signed and iv >= 1 << (bits - 1):
            iv -= 1 << bits
        return iv

    def primary(self):
        tok = self.take()
        if tok[0] == "num":
            return tok[1]
        if tok[0] == "ident":
            name = tok[1]
            if self.peek() == ("op", "("):
                if name in self.ctx.macros:
                    return self.ctx.call_macro(name, self._args())
                raise _UnknownName(f"unknown macro {name}(...): name it as the quantization macro "
                                   "(macro=...) if it quantizes a float")
            return self.ctx.constant(name)
        raise CParseError(f"unexpected {self._show(tok)}")

    def _args(self):
        """Token lists of a macro call's arguments (the cursor is on '(')."""
        self.take("(")
        args, cur, depth = [], [], 0
        while True:
            tok = self.take()
            if tok[0] is None:
                raise CParseError("unterminated macro call")
            if tok == ("op", "(") :
                depth += 1
            elif tok == ("op", ")"):
                if depth == 0:
                    args.append(cur)
                    return args
                depth -= 1
            elif tok == ("op", ",") and depth == 0:
                args.append(cur)
                cur = []
                continue
            cur.append(tok)


class _Context:
    def __init__(self, defines, macros, frac_bits, dtype, arg_roles):
        self.defines = defines
        self.macros = set(macros)
        self.frac_bits, self.dtype, self.arg_roles = frac_bits, dtype, arg_roles
        self.quantized = False
        self.depth = 0           # current expression nesting (see MAX_NESTING)
        self._busy = set()
        self._values = {}        # #define values: each is evaluated once

    def constant(self, name):
        if name in self._values:
            return self._values[name]
        if name in self.defines and name not in self._busy:
            self._busy.add(name)
            try:
                v = self._values[name] = _Eval(_tokens(self.defines[name]), self).run()
                return v
            except CParseError as e:
                msg = str(e)  # a chain of defines reads "#define A -> B -> C: problem"
                msg = f"#define {name} -> {msg[8:]}" if msg.startswith("#define ") else f"#define {name}: {msg}"
                raise type(e)(msg) from None
            finally:
                self._busy.discard(name)
        raise _UnknownName(f"unknown identifier {name!r}")

    def eval_tokens(self, toks):
        return _Eval(toks, self).run()

    def call_macro(self, name, args):
        n = len(args)
        roles = self.arg_roles or {1: ("value",), 2: ("value", "frac"), 3: ("type", "frac", "value")}.get(n)
        if roles is None or len(roles) != n:
            raise CParseError(f"{name}(...) has {n} arguments; say which is the value with arg_roles=")
        value = frac = None
        for role, toks in zip(roles, args):
            if role == "value":
                value = self.eval_tokens(toks)
            elif role == "frac" and self.frac_bits is None:
                try:
                    frac = self.eval_tokens(toks)
                except CParseError as e:
                    raise CParseError(f"{name}(...): cannot evaluate its frac-bits argument ({e}); "
                                      "give frac_bits=") from None
        if value is None:
            raise CParseError(f"{name}(...): arg_roles names no 'value' argument")
        if self.frac_bits is not None:
            frac = self.frac_bits
        if frac is None:
            raise CParseError(f"{name}(...) carries no frac bits: give frac_bits=")
        if not isinstance(frac, int):
            raise CParseError(f"{name}(...): frac bits {frac!r} is not an integer")
        if self.dtype is None:
            raise CParseError(f"{name}(...): the container type is unknown; give dtype= (int8 or int16)")
        self.quantized = True
        try:
            return int(qmn(np.float64(value), frac, self.dtype))
        except ValueError as e:  # NaN / infinity, frac bits out of range
            raise CParseError(f"{name}(...): {e}") from None


# --------------------------------------------------------- declarations
# (?<!\w): a match starts at the beginning of an identifier only (without it,
# searching a long identifier is quadratic)
_DECL = re.compile(r"(?<!\w)([A-Za-z_]\w*)\s*((?:\[[^\[\]]*\]\s*)+)(?:__attribute__\s*\(\(.*?\)\)\s*)?=\s*\{")


@dataclass
class _Decl:
    name: str
    c_type: str
    dims: list
    body: str
    line: int


def _find_decls(clean):
    decls = []
    pos = 0
    line, line_pos = 1, 0  # line number at line_pos (counted incrementally)
    while True:
        m = _DECL.search(clean, pos)
        if not m:
            return decls
        start = m.end() - 1
        depth, j = 0, start
        while j < len(clean):
            if clean[j] == "{":
                depth += 1
            elif clean[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        line += clean.count("\n", line_pos, m.start())
        line_pos = m.start()
        if depth:
            raise CParseError(f"line {line}: array {m.group(1)}: unterminated initializer")
        prefix_start = max(clean.rfind(";", 0, m.start()), clean.rfind("}", 0, m.start()),
                           clean.rfind("{", 0, m.start())) + 1
        c_type = " ".join(clean[prefix_start:m.start()].split())
        dims = re.findall(r"\[([^\[\]]*)\]", m.group(2))
        decls.append(_Decl(m.group(1), c_type, dims, clean[start + 1:j], line))
        pos = j + 1


def _elements(body):
    """The top-level comma-separated element texts (nested braces flattened)."""
    flat = body.replace("{", ",").replace("}", ",")
    out, cur, depth = [], [], 0
    for ch in flat:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [e.strip() for e in out if e.strip()]


def _load_text(source):
    """(text, name for messages) of a path or of C text itself."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source).decode("utf-8", "replace"), "<C text>"
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and
                                           ("{" not in source)):
        path = os.fspath(source)
        with open(path, "rb") as f:
            return read_bounded(f, path).decode("utf-8", "replace"), path
    return source, "<C text>"


def _prepare(source):
    text, what = _load_text(source)
    try:
        clean, defines = _split_preprocessor(_strip_comments(text))
        decls = _find_decls(clean)
    except CParseError as e:
        raise CParseError(f"{what}: {e}") from None
    return what, defines, decls


def list_c_arrays(source):
    """Names of the arrays defined with an initializer in `source` (a path or C text)."""
    return [d.name for d in _prepare(source)[2]]


def _eval_text(ctx, text):
    """The value of one expression text.  MAX_NESTING keeps the recursion
    far below Python's limit; a caller already deep in its own stack still
    gets a CParseError, not a RecursionError."""
    ctx.depth = 0
    try:
        return ctx.eval_tokens(_tokens(text))
    except RecursionError:
        raise _TooDeep("expression nested too deeply for the Python stack") from None


def _declared_dims(what, d, ctx):
    """The declared dims (None for ``[]``), or None when one names an
    identifier the file does not define.  A size that is not a non-negative
    integer, or dims of more than MAX_ELEMENTS elements in all, raise."""
    short = [x.strip() if len(x.strip()) <= 40 else x.strip()[:40] + "..." for x in d.dims]
    where = f"{what}:{d.line}: array {d.name}[{']['.join(short)}]"
    dims = []
    for x, sx in zip(d.dims, short):
        if not x.strip():
            dims.append(None)
            continue
        try:
            v = _eval_text(ctx, x)
        except _UnknownName:
            return None  # e.g. a size defined in another header: keep the values flat
        except CParseError as e:
            raise CParseError(f"{where}: size [{sx}]: {e}") from None
        except OverflowError:
            raise CParseError(f"{where}: size [{sx}] is out of range") from None
        if not isinstance(v, int):
            raise CParseError(f"{where}: size [{sx}] = {v!r} is not an integer")
        if v < 0:
            raise CParseError(f"{where}: size [{sx}] = {v} is negative")
        dims.append(v)
    known = math.prod(v for v in dims if v is not None)
    if known > MAX_ELEMENTS:
        raise CParseError(f"{where}: declares {known} elements, more than the {MAX_ELEMENTS} (2**26) "
                          "this reader accepts")
    return tuple(dims)


def _context(defines, d, macro, frac_bits, dtype, arg_roles):
    """(result dtype or None when the values decide, evaluation context) of one declaration."""
    declared = c_type_of(d.c_type)
    target = np.dtype(dtype) if dtype is not None else declared
    macros = [macro] if isinstance(macro, str) else list(macro or [])
    qdtype = target if target is not None and target.kind in "iu" else None
    return target, _Context(defines, macros, frac_bits, qdtype, tuple(arg_roles) if arg_roles else None)


def _check_sizes(what, defines, decls, macro, frac_bits, dtype, arg_roles):
    """The declared bytes of `decls`, each and all together, against the
    size limit, before any array is evaluated (its zero fill allocated).  An
    element of a type the values decide counts 8 bytes (int64 / float64)."""
    limit = max_array_bytes()
    total = 0
    for d in decls:
        target, ctx = _context(defines, d, macro, frac_bits, dtype, arg_roles)
        dims = _declared_dims(what, d, ctx)
        if not dims:
            continue
        count = math.prod(v for v in dims if v is not None)
        nbytes = count * (target.itemsize if target is not None else 8)
        where = f"{what}:{d.line}: array {d.name}"
        if nbytes > limit:
            raise SizeLimitError(f"{where}: declares {count} elements ({nbytes} bytes), more than "
                                 f"{limit_text(limit)}")
        total += nbytes
        if total > limit:
            raise SizeLimitError(f"{where}: the arrays up to this one declare {total} bytes together, more "
                                 f"than {limit_text(limit)}")


def _evaluate(what, defines, d, macro, frac_bits, dtype, arg_roles):
    target, ctx = _context(defines, d, macro, frac_bits, dtype, arg_roles)
    vals = []
    for k, e in enumerate(_elements(d.body)):
        try:
            vals.append(_eval_text(ctx, e))
        except CParseError as err:
            raise CParseError(f"{what}:{d.line}: array {d.name}, element {k} ({e[:60]!r}): {err}") from None
        except OverflowError:
            raise CParseError(f"{what}:{d.line}: array {d.name}, element {k}: value out of range") from None
    is_float = any(isinstance(v, float) for v in vals)
    if target is None:
        target = np.dtype(np.float64) if is_float else np.dtype(np.int64)
    if target.kind in "iu":
        if is_float:
            k = next(i for i, v in enumerate(vals) if isinstance(v, float))
            raise CParseError(f"{what}:{d.line}: array {d.name}, element {k} is the float {vals[k]!r} but the "
                              f"array is {target}: name its quantization macro (macro=...) or read it as float")
        info = np.iinfo(target)
        for k, v in enumerate(vals):
            if not info.min <= v <= info.max:
                raise CParseError(f"{what}:{d.line}: array {d.name}, element {k} = {v} does not fit {target}")
        arr = np.array(vals, dtype=target)
    else:
        arr = np.array([float(v) for v in vals], dtype=np.float64).astype(target)
    dims = _declared_dims(what, d, ctx)
    if dims is not None:
        if None in dims[1:]:
            dims = None
        elif dims[0] is None:
            rest = math.prod(dims[1:])
            dims = (arr.size // rest,) + dims[1:] if rest and arr.size % rest == 0 else None
        total = math.prod(dims) if dims else None
        if dims is not None and total != arr.size:
            if arr.size > total:
                raise CParseError(f"{what}:{d.line}: array {d.name}[{']['.join(d.dims)}] has {arr.size} "
                                  f"initializers, more than its {total} elements")
            arr = np.concatenate([arr, np.zeros(total - arr.size, arr.dtype)])  # C zero-fills the rest
        if dims is not None and len(dims) > 1:
            arr = arr.reshape(dims)
    return CArray(d.name, arr, d.c_type, dims, d.line)


def read_c_array(source, name=None, *, macro=None, frac_bits=None, dtype=None, arg_roles=None):
    """One array of a C source.

    Parameters
    ----------
    source : str or os.PathLike
        A path, or C text.
    name : str, optional
        The array to read; may be omitted when the source defines one array.
    macro : str or list of str, optional
        Name(s) of the quantization macro wrapping float values
        (``"L1_WQ"``, ``"QMN"``).  Values inside it are quantized with
        :func:`qmn`.
    frac_bits : int, optional
        Frac bits for the macro (needed unless the macro carries them).
    dtype : optional
        Element type of the result; default: the declared C type (int8_t,
        int16_t, float ...); for a typedef such as ``w_type``, int64 for
        integer values and float64 for floats.  Needed for a macro array
        whose declared type is a typedef.
    arg_roles : sequence of str, optional
        The role of each macro argument, e.g. ``("value", "frac")``
        (default by count: value; value, frac; type, frac, value).

    Returns
    -------
    numpy.ndarray
        Values shaped by the declared dims when they are constant and more
        than one, else flat.

    Raises
    ------
    KeyError
        No array `name` (the message lists those defined).
    ValueError (CParseError)
        Anything that cannot be read, with file, line, array and element.
    """
    return read_c_array_info(source, name, macro=macro, frac_bits=frac_bits, dtype=dtype,
                             arg_roles=arg_roles).values


def read_c_array_info(source, name=None, *, macro=None, frac_bits=None, dtype=None, arg_roles=None):
    """:func:`read_c_array` returning the :class:`CArray` (with C type and line)."""
    what, defines, decls = _prepare(source)
    names = [d.name for d in decls]
    if name is None:
        if len(decls) != 1:
            raise KeyError(f"{what}: defines {len(decls)} arrays ({', '.join(names) or 'none'}); name one")
        chosen = decls
    else:
        chosen = [d for d in decls if d.name == name]
        if not chosen:
            raise KeyError(f"{what}: no array {name!r}; defined: {', '.join(names) or 'none'}")
        if len(chosen) > 1:
            raise CParseError(f"{what}: array {name} is defined {len(chosen)} times (lines "
                              f"{', '.join(str(d.line) for d in chosen)}), probably in #if branches; "
                              "keep one definition")
    _check_sizes(what, defines, chosen[:1], macro, frac_bits, dtype, arg_roles)
    return _evaluate(what, defines, chosen[0], macro, frac_bits, dtype, arg_roles)


def read_c_arrays(source, *, macro=None, frac_bits=None, dtype=None, arg_roles=None):
    """``{name: values}`` of every array in `source` (same options as :func:`read_c_array`)."""
    what, defines, decls = _prepare(source)
    _check_sizes(what, defines, decls, macro, frac_bits, dtype, arg_roles)
    out = {}
    for d in decls:
        if d.name in out:
            raise CParseError(f"{what}: array {d.name} is defined more than once")
        out[d.name] = _evaluate(what, defines, d, macro, frac_bits, dtype, arg_roles).values
    return out


# ------------------------------------------------------------- writing
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


def _literal(v, dt):
    if dt.kind == "f":
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"value {f} has no C literal")
        if dt == np.float32:
            s = str(np.float32(f))
            return (s if any(c in s for c in ".e") else s + ".0") + "f"
        s = repr(f)
        return s if any(c in s for c in ".e") else s + ".0"
    iv = int(v)
    if dt == np.int32 and iv == -2 ** 31:
        return "(-2147483647 - 1)"
    if dt == np.int64 and iv == -2 ** 63:
        return "(-9223372036854775807LL - 1)"
    suffix = "u" if dt.kind == "u" and iv > 0x7FFF else ""
    return f"{iv}{suffix}" + ("LL" if dt.itemsize == 8 else "")


def format_c_array(name, values, *, c_type=None, const=True, static=False, attributes="",
                   per_line=None, comment=None, keep_shape=False):
    """The C definition of an array, e.g.
    ``const int16_t name[6] = { ... };`` (flat unless `keep_shape`).

    Parameters
    ----------
    name : str
        A C identifier.
    values : array_like
        Integers (any numpy integer type) or finite floats.
    c_type : str, optional
        Element type as written; default from the dtype (``int16_t``,
        ``float`` ...).
    const, static : bool
        Qualifiers.
    attributes : str
        Written between the type and the name (e.g. MLI's ``_W`` memory
        placement macro).
    per_line : int, optional
        Values per line (default 16 for integers, 8 for floats).
    comment : str, optional
        A ``/* */`` line above the definition.
    keep_shape : bool
        Declare all dims (``name[4][32][64]``) instead of one.
    """
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"name: {name!r} is not a C identifier")
    a = np.asarray(values)
    if a.dtype.kind not in "iuf" or a.dtype.itemsize > 8 or a.dtype == np.float16:
        raise TypeError(f"values: cannot write dtype {a.dtype} as a C array")
    dt = a.dtype.newbyteorder("=")
    if c_type is None:
        c_type = _EMIT_TYPES.get(np.dtype(dt))
        if c_type is None:
            raise TypeError(f"values: no C type for {dt}")
    if a.size == 0:
        raise ValueError(f"{name}: a C array needs at least one element")
    flat = a.reshape(-1)
    if dt.kind == "f" and not np.all(np.isfinite(flat)):
        raise ValueError(f"{name}: NaN or infinity has no C literal")
    per_line = per_line or (16 if dt.kind in "iu" else 8)
    lits = [_literal(v, dt) for v in flat]
    width = max(len(s) for s in lits)
    rows = [", ".join(s.rjust(width) for s in lits[i:i + per_line]) for i in range(0, len(lits), per_line)]
    dims = "".join(f"[{d}]" for d in a.shape) if keep_shape and a.ndim > 1 else f"[{a.size}]"
    quals = ("static " if static else "") + ("const " if const else "")
    head = f"{quals}{c_type} {attributes + ' ' if attributes else ''}{name}{dims} = {{"
    lines = [f"/* {comment} */"] if comment else []
    if keep_shape and a.ndim > 1:
        lines.append(head[:-1] + _nested(a, dt, width, per_line, 0).lstrip() + ";")
    else:
        lines.append(head)
        lines += ["    " + r + ("," if k < len(rows) - 1 else "") for k, r in enumerate(rows)]
        lines.append("};")
    return "\n".join(lines) + "\n"


def _nested(a, dt, width, per_line, level):
    pad = "    " * level
    if a.ndim == 1:
        lits = [_literal(v, dt).rjust(width) for v in a]
        rows = [", ".join(lits[i:i + per_line]) for i in range(0, len(lits), per_line)]
        return pad + "{" + (",\n" + pad + " ").join(rows) + "}"
    inner = [_nested(sub, dt, width, per_line, level + 1) for sub in a]
    return pad + "{\n" + ",\n".join(inner) + "\n" + pad + "}"

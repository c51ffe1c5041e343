"""``mli export-c``: quantized weights and MLI 1.1 tensor initialisers as C
source, ready to compile into firmware (``--mli 2``: MLI 2.0.2 tensors, see
:mod:`mli.tools.export_c2`).

From float arrays (npz, idx, npy, raw, C) and frac bits, or from arrays that
are already quantized, it writes a ``.h`` (extern declarations and
``NAME_FRAC_BITS`` / ``NAME_ELEMENTS`` macros) and a ``.c`` with

* one data array per tensor (``const int16_t NAME_data[N] = {...};``),
  quantized with the QMN rule of the MLI examples (times 2^frac in double
  precision, halves away from zero, saturated; NaN and infinity rejected);
* one ``mli_tensor`` per array in MLI 1.1's layout, with designated
  initialisers (``.data``, ``.capacity``, ``.mem_stride``, ``.shape``,
  ``.rank``, ``.el_type``, ``.el_params.fx.frac_bits``);
* optional zero-filled state/output buffers (``--buffer``) and
  ``mli_rnn_cell_cfg`` initialisers with their ``ir_tsr`` scratch tensor
  (``--rnn-cfg``).

The pair is written to temporary files in BASE's folder and renamed into
place only when both are complete (a failed export changes nothing), and
never onto one of the SOURCE files (compared as files, so links count).

Example::

    mli export-c ../shared/data/har/coefficients.npz --type fx16 \\
        --frac L1_fc_wt=14 --frac L1_fc_bias=14 ... -o build/har_coefs
"""

import argparse
import math
import os
import re
import secrets
import shutil
import sys
from dataclasses import dataclass

import numpy as np

from ..enums import RnnActivation, RnnMode, parse_enum
from ..io.c_array import format_c_array, qmn
from ..io.load import parse_spec, read_spec
from ..io.npz import npz_frac_bits, read_npz
from .export_base import ExportError, _buffer_bytes, _check_name
from .export_structs import STRUCT_OPTIONS, ExportStruct, struct_from_spec

__all__ = ["ExportTensor", "ExportCfg", "quantize", "make_tensor", "make_buffer", "make_rnn_cfg", "render",
           "export_c", "main"]

_DT = {"fx8": np.dtype(np.int8), "fx16": np.dtype(np.int16)}
_EL = {"fx8": "MLI_EL_FX_8", "fx16": "MLI_EL_FX_16"}


@dataclass
class ExportTensor:
    """One ``mli_tensor`` to write: integer `values` (int8 for fx8, int16 for
    fx16) in the tensor's shape, its frac bits, and whether it is constant
    (weights: ``const`` data and tensor) or a mutable buffer (state, cell,
    outputs, scratch)."""

    name: str
    values: np.ndarray
    frac_bits: int
    el_type: str = "fx16"
    const: bool = True
    comment: str = ""
    saturated: int = 0      # values the quantization clamped

    @property
    def shape(self):
        return tuple(self.values.shape)


@dataclass
class ExportCfg:
    """An ``mli_rnn_cell_cfg``: mode, activation and its ``ir_tsr`` scratch tensor name."""

    name: str
    mode: RnnMode
    act: RnnActivation
    ir: str


def _el(el_type, what="el_type"):
    key = str(el_type).lower().replace("mli_el_", "").replace("_", "")
    if key in ("fx8", "int8"):
        return "fx8"
    if key in ("fx16", "int16"):
        return "fx16"
    raise ExportError(f"{what}: expected fx8 or fx16, got {el_type!r}")


def _frac(f, what):
    if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or not 0 <= int(f) <= 255:
        raise ExportError(f"{what}: frac bits must be an integer in 0..255, got {f!r}")
    return int(f)


def quantize(values, el_type, frac_bits):
    """(int array, number of saturated values): the QMN rule of the MLI
    examples in int8 (fx8) or int16 (fx16).  NaN/inf raise ExportError."""
    el = _el(el_type)
    v = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(v)
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad)[0]), v.shape) if v.ndim else ()
        raise ExportError(f"value at index {tuple(int(k) for k in i)} is {v[i]}: NaN and infinity cannot be "
                          "quantized")
    f = _frac(frac_bits, "frac_bits")
    q = qmn(v, f, _DT[el])
    info = np.iinfo(_DT[el])
    scaled = v * math.ldexp(1.0, f) + np.where(v >= 0, 0.5, -0.5)
    sat = int(np.sum((scaled >= info.max + 1) | (scaled <= info.min - 1)))
    return q, sat


def make_tensor(name, values, *, el_type="fx16", frac_bits=None, const=True, comment=""):
    """An :class:`ExportTensor` from float values (quantized, `frac_bits`
    required) or integer values (range-checked; `frac_bits` required too,
    it is the tensor's format).  Rank 1..4."""
    _check_name(name)
    el = _el(el_type, f"{name}: el_type")
    a = np.asarray(values)
    if a.ndim == 0 or a.ndim > 4:
        raise ExportError(f"{name}: rank {a.ndim}; MLI tensors here have rank 1 to 4")
    if a.size == 0:
        raise ExportError(f"{name}: has no elements")
    if frac_bits is None:
        raise ExportError(f"{name}: frac bits are required")
    f = _frac(frac_bits, f"{name}: frac_bits")
    sat = 0
    if a.dtype.kind == "f":
        try:
            q, sat = quantize(a, el, f)
        except ExportError as e:
            raise ExportError(f"{name}: {e}") from None
    elif a.dtype.kind in "iub":
        info = np.iinfo(_DT[el])
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            raise ExportError(f"{name}: integer values {lo}..{hi} do not fit {el} ({_DT[el]})")
        q = a.astype(_DT[el])
    else:
        raise ExportError(f"{name}: dtype {a.dtype} is not numeric")
    return ExportTensor(name, np.ascontiguousarray(q), f, el, const, comment, sat)


def make_buffer(name, shape, *, el_type="fx16", frac_bits=0, comment=""):
    """A zero-filled mutable tensor (state, cell, output or scratch)."""
    shp = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    if not 1 <= len(shp) <= 4 or any(d <= 0 for d in shp):
        raise ExportError(f"{name}: buffer shape {shp} must have 1 to 4 positive dims")
    el = _el(el_type, f"{name}: el_type")
    _buffer_bytes(name, shp, _DT[el].itemsize)
    return ExportTensor(_check_name(name), np.zeros(shp, _DT[el]), _frac(frac_bits, f"{name}: frac_bits"), el,
                        False, comment)


def make_rnn_cfg(name, mode, act, ir_elements, *, el_type="fx16"):
    """(:class:`ExportCfg`, its ir scratch buffer ``NAME_ir``): ``mode`` and
    ``act`` as names (``batch_to_batch``, ``tanh``) or enum values;
    `ir_elements` is the scratch size in elements (4*M for an LSTM, M for
    a basic RNN cell)."""
    _check_name(name)
    m = _enum(mode, RnnMode, f"{name}: mode", ("RNN_",))
    a = _enum(act, RnnActivation, f"{name}: act", ("RNN_ACT_",))
    if isinstance(ir_elements, bool) or not isinstance(ir_elements, (int, np.integer)) or ir_elements <= 0:
        raise ExportError(f"{name}: ir size must be a positive element count, got {ir_elements!r}")
    ir = make_buffer(name + "_ir", (int(ir_elements),), el_type=el_type, comment=f"ir_tsr scratch of {name}")
    return ExportCfg(name, m, a, ir.name), ir


def _enum(value, enum, what, prefixes):
    try:
        return parse_enum(value, enum, prefixes)
    except ValueError as e:
        raise ExportError(f"{what}: {e}") from None


def _c_enum(member, prefix):
    return prefix + member.name


def render(tensors, cfgs=(), *, header_name="mli_model.h", guard=None, data_attr="", include="mli_api.h",
           static=False):
    """(c_text, h_text) for `tensors` (:class:`ExportTensor`) and `cfgs`
    (:class:`ExportCfg`, and the structs of :mod:`mli.tools.export_structs`:
    ``mli_conv2d_cfg``, ``mli_pool_cfg``, ``mli_permute_cfg``,
    ``mli_concat_cfg``, ``mli_padding2d_cfg``).

    Parameters
    ----------
    header_name : str
        The header's file name, #included by the .c file.
    guard : str, optional
        Include guard (default from `header_name`).
    data_attr : str
        Text placed before each data array's name, e.g. ``_W`` (MLI's
        XY-memory placement macro; define it in your build).
    include : str
        The MLI header to include (``mli_api.h``; ``mli_types.h`` is enough).
    """
    names = set()
    for t in list(tensors) + list(cfgs):
        if t.name in names:
            raise ExportError(f"{t.name}: defined twice")
        names.add(t.name)
    by_name = {t.name: t for t in tensors}
    structs = [c for c in cfgs if isinstance(c, ExportStruct)]
    cfgs = [c for c in cfgs if not isinstance(c, ExportStruct)]
    for c in cfgs:
        if c.ir not in by_name:
            raise ExportError(f"{c.name}: ir tensor {c.ir!r} is not exported")
        if by_name[c.ir].const:
            raise ExportError(f"{c.name}: ir tensor {c.ir!r} must be a buffer, not constant data")
    for t in tensors:
        if t.name + "_data" in names:
            raise ExportError(f"{t.name}_data: clashes with the data array of {t.name}")
    guard = guard or re.sub(r"\W", "_", os.path.basename(header_name)).upper()
    h = [f"/* {os.path.basename(header_name)}: generated by mli export-c (mli-py); do not edit. */",
         f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", f'#include "{include}"', "",
         "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    c = ["/* generated by mli export-c (mli-py); do not edit.  Coefficients quantized with the QMN rule",
         " * of the MLI examples: round(v * 2^frac), halves away from zero, saturated. */",
         f'#include "{os.path.basename(header_name)}"', ""]
    for t in tensors:
        up = t.name.upper()
        ct = "int8_t" if t.el_type == "fx8" else "int16_t"
        q = "const " if t.const else ""
        n = t.values.size
        shape4 = list(t.shape) + [0] * (4 - len(t.shape))
        h.append(f"/* {t.name}: {t.el_type} {list(t.shape)}, {t.frac_bits} frac bits"
                 + (f"; {t.comment}" if t.comment else "") + " */")
        h.append(f"#define {up}_FRAC_BITS {t.frac_bits}")
        h.append(f"#define {up}_ELEMENTS {n}")
        h.append(f"extern {q}{ct} {t.name}_data[{n}];")
        h.append(f"extern {q}mli_tensor {t.name};")
        h.append("")
        attr = f"{data_attr} " if data_attr else ""
        if t.const:
            c.append(format_c_array(f"{t.name}_data", t.values, c_type=ct, const=True, attributes=data_attr,
                                    comment=f"{t.name}: {list(t.shape)}, Q{t.frac_bits}").rstrip("\n"))
        elif np.any(t.values):
            c.append(format_c_array(f"{t.name}_data", t.values, c_type=ct, const=False, attributes=data_attr,
                                    comment=f"{t.name}: {list(t.shape)}, Q{t.frac_bits}, mutable").rstrip("\n"))
        else:
            c.append(f"/* {t.name}: {list(t.shape)} buffer, Q{t.frac_bits} */")
            c.append(f"{ct} {attr}{t.name}_data[{n}];")
        c += [
            f"{q}mli_tensor {t.name} = {{",
            f"    .data = (void *){t.name}_data,",
            f"    .capacity = sizeof({t.name}_data),",
            "    .mem_stride = {0, 0, 0, 0},",
            f"    .shape = {{{', '.join(str(d) for d in shape4)}}},",
            f"    .rank = {len(t.shape)},",
            f"    .el_type = {_EL[t.el_type]},",
            f"    .el_params.fx.frac_bits = {t.frac_bits},",
            "};", ""]
    for cf in cfgs:
        h.append(f"/* {cf.name}: mode {cf.mode.name.lower()}, act {cf.act.name.lower()}, ir_tsr {cf.ir} */")
        h.append(f"extern mli_rnn_cell_cfg {cf.name};")
        h.append("")
        c += [f"mli_rnn_cell_cfg {cf.name} = {{",
              f"    .mode = {_c_enum(cf.mode, 'RNN_')},",
              f"    .act = {_c_enum(cf.act, 'RNN_ACT_')},",
              f"    .ir_tsr = &{cf.ir},",
              "};", ""]
    for st in structs:
        h += st.h_lines()
        c += st.c_lines()
    h += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {guard} */", ""]
    return "\n".join(c), "\n".join(h)


def export_c(base, tensors, cfgs=(), *, data_attr="", include="mli_api.h", keep=(), mli=1):
    """Write ``BASE.c`` and ``BASE.h`` (see :func:`render`); returns their paths.

    Both files are written to temporary names in BASE's folder and renamed
    only when both are complete, so a failed export leaves the previous pair
    (or nothing) in place and no temporary file behind.  `keep`: paths that
    must not be overwritten, e.g. the files the arrays came from (the same
    file through another name, a symbolic or hard link, counts too).
    `mli` 2: MLI 2.0.2 tensors (:class:`mli.tools.export_c2.ExportTensor2`,
    rendered by :func:`mli.tools.export_c2.render2`)."""
    base = os.fspath(base)
    if base.endswith((".c", ".h")):
        base = base[:-2]
    stem = os.path.basename(base)
    if not stem or stem in (".", "..") or not re.fullmatch(r"[A-Za-z0-9_.+-]+", stem):
        raise ExportError(f"-o: {base!r} is not a usable file name stem (letters, digits, _ . + - only)")
    hname = stem + ".h"
    if mli == 2:
        from .export_c2 import render2
        c_text, h_text = render2(tensors, cfgs, header_name=hname, data_attr=data_attr, include=include)
    else:
        c_text, h_text = render(tensors, cfgs, header_name=hname, data_attr=data_attr, include=include)
    d = os.path.dirname(base)
    if d and not os.path.isdir(d):
        raise ExportError(f"-o: folder {d} does not exist")
    targets = (base + ".c", base + ".h")
    for t in targets:
        for k in keep:
            if _same_file(t, os.fspath(k)):
                raise ExportError(f"-o: writing {t} would overwrite the source {os.fspath(k)}")
        if os.path.isdir(t):
            raise ExportError(f"-o: {t} is a folder")
    tmps = []
    try:
        for t, text in zip(targets, (c_text, h_text)):
            try:
                tmps.append(_write_temp(d, os.path.basename(t), text))
            except OSError as e:
                raise ExportError(f"-o: cannot write {t} in {d or '.'}: {e.strerror or e}; nothing was "
                                  "changed") from None
        _replace_pair(tmps, targets)
    finally:
        for tmp in tmps:
            _remove(tmp)
    return targets


def _same_file(a, b):
    """Whether paths `a` and `b` name one file: compared by device and inode,
    so another spelling, a symbolic or a hard link counts; a missing file is
    nobody's."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _write_temp(folder, name, text):
    """A new file ``.NAME.XXXXXXXX.tmp`` in `folder` holding `text`; its
    mode follows the umask like a plain open() (mkstemp would make it 0600)."""
    data = text.encode("utf-8")
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except BaseException:
            _remove(tmp)
            raise
        return tmp
    raise FileExistsError(f"{folder or '.'}: no free temporary name for {name}")


def _replace_pair(tmps, targets):
    """Rename the temporary files onto `targets`, first to last.  When a
    rename fails, the targets already replaced get their old content back
    (kept as a hard link, which costs no copy), so the pair never mixes an
    old and a new file."""
    done, olds = [], []    # (target, its old content or None: it did not exist); the backups
    t = targets[0]
    try:
        for tmp, t in zip(tmps, targets):
            old = None
            if os.path.lexists(t):
                old = f"{tmp}.old"
                try:
                    os.link(t, old, follow_symlinks=False)
                except OSError:        # a file system without hard links
                    shutil.copy2(t, old, follow_symlinks=False)
                olds.append(old)
            os.replace(tmp, t)
            done.append((t, old))
    except OSError as e:
        for t_done, old in reversed(done):
            _restore(t_done, old)
        raise ExportError(f"-o: cannot write {t}: {e.strerror or e}; nothing was changed") from None
    finally:
        for old in olds:
            _remove(old)


def _restore(target, old):
    try:
        if old is None:
            os.remove(target)
        else:
            os.replace(old, target)
    except OSError:
        pass


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


# =================================================================== CLI
class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ExportError(f"{message} (see mli export-c --help)")


def _pairs(items, what, conv):
    out = {}
    for it in items or ():
        if "=" not in it:
            raise ExportError(f"{what}: expected NAME=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        try:
            out[k.strip()] = conv(v.strip())
        except (ValueError, ExportError) as e:
            raise ExportError(f"{what} {it}: {e}") from None
    return out


def _kv_spec(text, what):
    """``NAME,key=value,...`` (``NAME:key=value,...`` also accepted)."""
    head, _, rest = text.replace(":", ",", 1).partition(",")
    opts = {}
    for part in rest.split(",") if rest else []:
        if "=" not in part:
            raise ExportError(f"{what} {text}: expected key=value, got {part!r}")
        k, v = part.split("=", 1)
        opts[k.strip().lower()] = v.strip()
    return head.strip(), opts


def _selected_sources(args, per_name):
    """The arrays of the sources (one name each), cut to ``--only``; every
    name a per-name option (``{option: names}``) gives must be a source's."""
    arrays = _load_sources(args.sources)
    seen = {}
    for n, _, _ in arrays:
        if n in seen:
            raise ExportError(f"{n}: two sources give an array of this name (use --rename or name one key)")
        seen[n] = True
    if args.only:
        want = [s.strip() for s in args.only.split(",") if s.strip()]
        missing = [w for w in want if w not in seen]
        if missing:
            raise ExportError(f"--only: {', '.join(missing)} not among the sources' arrays ({', '.join(seen)})")
        arrays = [a for a in arrays if a[0] in want]
    for opt, names in per_name.items():
        for k in names:
            if k not in seen:
                raise ExportError(f"{opt} {k}: no such array (arrays: {', '.join(seen)})")
    return arrays


def _sanitize(name):
    s = re.sub(r"\W", "_", name)
    return "_" + s if s[:1].isdigit() else s


def _load_sources(sources):
    """[(name, array, frac from the file or None)] of every SOURCE."""
    out = []
    for src in sources:
        try:
            sp = parse_spec(src)
            fmt = sp.resolved_format()
            if not os.path.exists(sp.path):
                raise ExportError(f"{src}: no such file: {sp.path}")
            if fmt == "npz" and sp.selector is None:
                fr = npz_frac_bits(sp.path)
                arrays = read_npz(sp.path)
                if not isinstance(arrays, dict):
                    from ..io.npz import npz_keys
                    arrays = {npz_keys(sp.path)[0]: arrays}
                out += [(k, v, fr.get(k)) for k, v in arrays.items()]
            elif fmt == "c" and sp.selector is None:
                from ..io.c_array import read_c_arrays
                arrays = read_c_arrays(sp.path, macro=sp.macro, frac_bits=sp.frac_bits, dtype=sp.dtype,
                                       arg_roles=sp.roles)
                out += [(k, v, sp.frac_bits if sp.macro else None) for k, v in arrays.items()]
            else:
                a = read_spec(sp)
                name = sp.selector or os.path.splitext(os.path.basename(sp.path))[0]
                fr = None
                if fmt == "npz":
                    fr = npz_frac_bits(sp.path).get(sp.selector)
                elif fmt == "c" and sp.macro:
                    fr = sp.frac_bits
                out.append((_sanitize(name), a, fr))
        except ExportError:
            raise
        except (ValueError, TypeError, KeyError, OSError) as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            raise ExportError(msg if msg.startswith(src + ":") else f"{src}: {msg}") from None
    return out


def main(argv=None):
    """``mli export-c``: returns 0, or 2 with a one-line message for any
    bad input or option."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except SystemExit as e:
        return int(e.code or 0) if isinstance(e.code, int) else 0
    except BrokenPipeError:  # the reader of stdout left: not an input error (mli.tools.cli exits quietly)
        raise
    except (ExportError, ValueError, TypeError, KeyError, OSError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"mli export-c: error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:  # never a traceback for an input we did not foresee
        if os.environ.get("MLI_DEBUG"):
            raise
        print(f"mli export-c: error: {type(e).__name__}: {e} (set MLI_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2


def _run(argv):
    ap = _Parser(prog="mli export-c", description=(
        "Write quantized arrays as C: a .c with the data arrays, mli_tensor and mli_rnn_cell_cfg initialisers "
        "(MLI 1.1 layout, designated initialisers) and a .h with their declarations."),
        epilog="SOURCE: a file spec (x.idx, w.npy, coefs.npz or coefs.npz:KEY, dump.bin,dtype=int16,shape=4x8, "
               "coefs.c or coefs.c:NAME,macro=QMN,frac=14).  An .npz or .c without a key exports all its arrays.")
    ap.add_argument("sources", nargs="*", metavar="SOURCE", help="arrays to export")
    ap.add_argument("-o", "--output", metavar="BASE", help="writes BASE.c and BASE.h (required)")
    ap.add_argument("--print-include", action="store_true",
                    help="print the folder of mli_api.h (mli.get_include()) for the C compiler's -I, and exit")
    ap.add_argument("--type", default="fx16", help="element type of every tensor: fx16 (default) or fx8")
    ap.add_argument("--type-of", action="append", metavar="NAME=TYPE", help="element type of one tensor")
    ap.add_argument("--frac", action="append", metavar="NAME=N", help="frac bits of one tensor")
    ap.add_argument("--frac-all", type=int, metavar="N", help="frac bits of every tensor not named by --frac")
    ap.add_argument("--auto-frac", action="store_true",
                    help="float arrays without frac bits get the largest frac that does not saturate")
    ap.add_argument("--only", metavar="NAME,...", help="export only these arrays")
    ap.add_argument("--rename", action="append", metavar="OLD=NEW", help="C name of an array")
    ap.add_argument("--prefix", default="", help="prefix of every C name")
    ap.add_argument("--buffer", action="append", metavar="NAME,shape=32,frac=11[,type=fx16]",
                    help="a zero-filled mutable tensor (state, cell, output)")
    ap.add_argument("--rnn-cfg", action="append", metavar="NAME,mode=batch_to_batch,act=tanh,ir=128[,type=fx16]",
                    help="an mli_rnn_cell_cfg with an ir_tsr scratch buffer of ir elements")
    for opt, meta in (("conv2d_cfg", "NAME,stride=1,padding=0,relu=none"),
                      ("pool_cfg", "NAME,kernel=3,stride=1,padding=0"), ("permute_cfg", "NAME,perm_dim=1x2x0"),
                      ("concat_cfg", "NAME,tensors_num=2,axis=0"), ("padding2d_cfg", "NAME,padding=1")):
        ap.add_argument("--" + opt.replace("_", "-"), action="append", metavar=meta,
                        help=f"an mli_{opt} (fields by MLI's names; see mli.tools.export_structs)")
    ap.add_argument("--data-attr", default="", metavar="TEXT",
                    help="placed before each data array name, e.g. _W (MLI's memory placement macro)")
    ap.add_argument("--include", default="mli_api.h", help="MLI header the .h includes (default mli_api.h)")
    ap.add_argument("--allow-saturation", action="store_true",
                    help="do not fail when quantization clamps values (a warning is printed instead)")
    v = ap.add_argument_group("MLI 2.0.2 (--mli 2)")
    v.add_argument("--mli", choices=("1", "2"), default="1",
                   help="tensor layout: MLI 1.1 (default) or MLI 2.0.2 (data containers, strides, sa params)")
    v.add_argument("--sa", action="append", metavar="NAME=ZP,SCALE,FRAC",
                   help="sa8/sa32 parameters of one tensor (per tensor; required for integer sa values)")
    v.add_argument("--sa-dim", action="append", metavar="NAME=DIM",
                   help="quantize a float sa tensor per index of dimension DIM (per axis)")
    v.add_argument("--asymmetric", action="append", metavar="NAME",
                   help="quantize a float sa8 tensor with a zero point (data); default symmetric (weights)")
    args = ap.parse_args(argv)
    if args.print_include:
        if args.mli == "2":
            from ..v2 import get_include
        else:
            from .. import get_include

        print(get_include())
        return 0
    if not args.sources:
        ap.error("the following arguments are required: SOURCE")
    if args.output is None:
        ap.error("the following arguments are required: -o/--output")
    if args.mli == "2":
        for opt in STRUCT_OPTIONS:
            if getattr(args, opt):
                ap.error(f"--{opt.replace('_', '-')}: MLI 1.1's struct; --mli 2 has no such kernel cfg here")
        return _run2(ap, args)
    for flag in ("sa", "sa_dim", "asymmetric"):
        if getattr(args, flag):
            ap.error(f"--{flag.replace('_', '-')} needs --mli 2")
    default_type = _el(args.type, "--type")
    types = _pairs(args.type_of, "--type-of", lambda v: _el(v, "--type-of"))
    fracs = _pairs(args.frac, "--frac", int)
    renames = _pairs(args.rename, "--rename", str)
    arrays = _selected_sources(args, {"--frac": fracs, "--type-of": types, "--rename": renames})
    tensors = []
    for name, a, ffile in arrays:
        el = types.get(name, default_type)
        f = fracs.get(name, ffile if ffile is not None else args.frac_all)
        if f is None and args.auto_frac and a.dtype.kind == "f":
            try:
                from ..tensor import frac_bits_for
                f = frac_bits_for(a, el)
            except ValueError as e:
                raise ExportError(f"{name}: {e}") from None
        if f is None:
            raise ExportError(f"{name}: no frac bits (give --frac {name}=N, --frac-all N or --auto-frac)")
        cname = args.prefix + renames.get(name, name)
        t = make_tensor(_check_name(cname, f"{name}: C name"), a, el_type=el, frac_bits=f)
        if t.saturated:
            msg = f"{name}: {t.saturated} value(s) saturated at {f} frac bits in {el}"
            if not args.allow_saturation:
                raise ExportError(msg + " (lower the frac bits, or --allow-saturation)")
            print(f"mli export-c: warning: {msg}", file=sys.stderr)
        tensors.append(t)
    for spec in args.buffer or ():
        name, o = _kv_spec(spec, "--buffer")
        unknown = set(o) - {"shape", "frac", "type"}
        if unknown or "shape" not in o:
            raise ExportError(f"--buffer {spec}: needs shape=, may have frac= and type= "
                              f"(unknown: {', '.join(sorted(unknown)) or 'none'})")
        from ..io.raw import parse_shape
        try:
            shape = parse_shape(o["shape"], f"--buffer {spec}: shape")
            fr = int(o.get("frac", 0))
        except ValueError as e:
            raise ExportError(str(e)) from None
        tensors.append(make_buffer(_check_name(args.prefix + name, "--buffer"), shape,
                                   el_type=_el(o.get("type", default_type), f"--buffer {spec}: type"), frac_bits=fr))
    cfgs = []
    for spec in args.rnn_cfg or ():
        name, o = _kv_spec(spec, "--rnn-cfg")
        unknown = set(o) - {"mode", "act", "ir", "type"}
        if unknown or "ir" not in o:
            raise ExportError(f"--rnn-cfg {spec}: needs ir= (scratch elements), may have mode=, act=, type= "
                              f"(unknown: {', '.join(sorted(unknown)) or 'none'})")
        try:
            ir = int(o["ir"])
        except ValueError:
            raise ExportError(f"--rnn-cfg {spec}: ir={o['ir']!r} is not an element count") from None
        cfg, irbuf = make_rnn_cfg(_check_name(args.prefix + name, "--rnn-cfg"), o.get("mode", "batch_to_batch"),
                                  o.get("act", "tanh"), ir, el_type=_el(o.get("type", default_type), "--rnn-cfg type"))
        cfgs.append(cfg)
        tensors.append(irbuf)
    n_rnn = len(cfgs)
    for opt in STRUCT_OPTIONS:
        for spec in getattr(args, opt) or ():
            name, o = _kv_spec(spec, "--" + opt.replace("_", "-"))
            cfgs.append(struct_from_spec(opt, _check_name(args.prefix + name, "--" + opt.replace("_", "-")), o))
    if not tensors:
        raise ExportError("nothing to export")
    # the output must never replace a file the arrays came from
    keep = [parse_spec(src).path for src in args.sources]
    c_path, h_path = export_c(args.output, tensors, cfgs, data_attr=args.data_attr, include=args.include,
                              keep=keep)
    print(f"wrote {c_path} and {h_path}: {len(tensors)} tensor(s), {n_rnn} rnn cfg(s)"
          + (f", {len(cfgs) - n_rnn} other cfg(s)" if len(cfgs) > n_rnn else ""))
    for t in tensors:
        print(f"  {t.name:<24} {t.el_type:<5} {str(list(t.shape)):<14} Q{t.frac_bits}"
              + ("" if t.const else "  (buffer)"))
    return 0


def _run2(ap, args):
    """``--mli 2``: the MLI 2.0.2 rendering (:mod:`mli.tools.export_c2`)."""
    from .export_c2 import _el as el2
    from .export_c2 import make_buffer2, make_rnn_cfg2, make_tensor2
    if args.auto_frac:
        ap.error("--auto-frac: MLI 2 float FX tensors take the largest frac that holds them when no frac is given")
    default_type = el2(args.type, "--type")
    types = _pairs(args.type_of, "--type-of", lambda x: el2(x, "--type-of"))
    fracs = _pairs(args.frac, "--frac", int)
    renames = _pairs(args.rename, "--rename", str)
    sas = _pairs(args.sa, "--sa", _sa_triple)
    dims = _pairs(args.sa_dim, "--sa-dim", int)
    asym = set(a.strip() for a in args.asymmetric or ())
    arrays = _selected_sources(args, {"--frac": fracs, "--type-of": types, "--rename": renames, "--sa": sas,
                                      "--sa-dim": dims, "--asymmetric": asym})
    tensors = []
    for name, a, ffile in arrays:
        el = types.get(name, default_type)
        f = fracs.get(name, ffile if ffile is not None else args.frac_all)
        cname = _check_name(args.prefix + renames.get(name, name), f"{name}: C name")
        t = make_tensor2(cname, a, el_type=el, frac_bits=f, dim=dims.get(name, -1), symmetric=name not in asym,
                         sa=sas.get(name))
        if t.saturated:   # as the 1.1 export: refused unless asked for
            at = f"at {f} frac bits" if el.startswith("fx") else \
                "with zero point, scale, scale_frac_bits " + ",".join(str(v) for v in sas[name])
            msg = f"{name}: {t.saturated} value(s) saturated {at} in {el}"
            if not args.allow_saturation:
                raise ExportError(msg + (" (lower the frac bits, or --allow-saturation)" if el.startswith("fx") else
                                         " (give a larger scale, or --allow-saturation)"))
            print(f"mli export-c: warning: {msg}", file=sys.stderr)
        tensors.append(t)
    for spec in args.buffer or ():
        name, o = _kv_spec(spec, "--buffer")
        unknown = set(o) - {"shape", "frac", "type", "sa"}
        if unknown or "shape" not in o:
            raise ExportError(f"--buffer {spec}: needs shape=, may have frac=, type= and sa=ZP/SCALE/FRAC "
                              f"(unknown: {', '.join(sorted(unknown)) or 'none'})")
        from ..io.raw import parse_shape
        try:
            shape = parse_shape(o["shape"], f"--buffer {spec}: shape")
            fr = int(o.get("frac", 0))
            sa = _sa_triple(o.get("sa", "0/1/0").replace("/", ","))
        except ValueError as e:
            raise ExportError(f"--buffer {spec}: {e}") from None
        tensors.append(make_buffer2(_check_name(args.prefix + name, "--buffer"), shape,
                                    el_type=el2(o.get("type", default_type), f"--buffer {spec}: type"),
                                    frac_bits=fr, sa=sa))
    cfgs = []
    for spec in args.rnn_cfg or ():
        name, o = _kv_spec(spec, "--rnn-cfg")
        unknown = set(o) - {"direction", "results", "act", "scratch"}
        if unknown or "scratch" not in o:
            raise ExportError(f"--rnn-cfg {spec}: with --mli 2 needs scratch= (bytes), may have direction=, "
                              f"results=, act= (unknown: {', '.join(sorted(unknown)) or 'none'})")
        try:
            nbytes = int(o["scratch"])
        except ValueError:
            raise ExportError(f"--rnn-cfg {spec}: scratch={o['scratch']!r} is not a byte count") from None
        cfgs.append(make_rnn_cfg2(_check_name(args.prefix + name, "--rnn-cfg"), direction=o.get("direction", "forward"),
                                  results=o.get("results", "all"), act=o.get("act", "tanh"), scratch_bytes=nbytes))
    keep = [parse_spec(src).path for src in args.sources]
    c_path, h_path = export_c(args.output, tensors, cfgs, data_attr=args.data_attr, include=args.include,
                              keep=keep, mli=2)
    print(f"wrote {c_path} and {h_path}: {len(tensors)} MLI 2.x tensor(s), {len(cfgs)} rnn cfg(s)")
    for t in tensors:
        print(f"  {t.name:<24} {t.el_type:<5} {str(list(t.shape)):<14} {t.describe()}"
              + ("" if t.const else "  (buffer)"))
    return 0


def _sa_triple(text):
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3:
        raise ValueError(f"expected ZP,SCALE,FRAC, got {text!r}")
    return tuple(int(p) for p in parts)


if __name__ == "__main__":
    sys.exit(main())

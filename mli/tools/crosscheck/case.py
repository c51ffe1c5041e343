"""Case files and command-line flags of ``mli crosscheck`` turned into a
checked, normalised list of layers (what to run, with which tensors and frac
bits); every fault is a :class:`CaseError` naming the key at fault."""
import json
import os
from dataclasses import dataclass, replace

import numpy as np

from ...enums import parse_enum
from ...io.c_array import qmn
from ...io.limits import read_bounded
from ...io.load import parse_spec, read_spec
from ...tensor import Tensor

ROUNDINGS = ("convergent", "up")


KINDS = ("fx8", "fx16", "fx8w16d")


#: kernel base name -> tensor roles it reads besides its input
KERNELS = {
    "fully_connected": ("weights", "bias"),
    "basic_rnn_cell": ("weights", "bias", "prev_out"),
    "lstm_cell": ("weights", "bias", "prev_out", "cell"),
    "relu": (), "tanh": (), "sigm": (),
    "eltwise_add": ("in2",), "eltwise_sub": ("in2",), "eltwise_mul": ("in2",),
    "eltwise_max": ("in2",), "eltwise_min": ("in2",),
    "conv2d_chw": ("weights", "bias"), "depthwise_conv2d_chw": ("weights", "bias"),
    "avepool_chw": (), "maxpool_chw": (), "leaky_relu": (), "softmax": (), "permute": (),
}

#: kernels with shape-specialised entry points (``variant``: ``generic`` or MLI's suffix)
VARIANT_KERNELS = ("conv2d_chw", "depthwise_conv2d_chw", "avepool_chw", "maxpool_chw")
#: kernels with an fx8w16d form (8-bit weights, 16-bit data)
W16D_KERNELS = ("fully_connected", "basic_rnn_cell", "lstm_cell", "conv2d_chw", "depthwise_conv2d_chw")
#: layer keys of the convolution, pooling, leaky ReLU and permute configurations
_GEOMETRY = ("stride", "stride_width", "stride_height", "padding", "padding_left", "padding_right", "padding_top",
             "padding_bottom")
CFG_KEYS = {"conv2d_chw": _GEOMETRY + ("relu", "variant"), "depthwise_conv2d_chw": _GEOMETRY + ("relu", "variant"),
            "avepool_chw": _GEOMETRY + ("kernel_width", "kernel_height", "variant"),
            "maxpool_chw": _GEOMETRY + ("kernel_width", "kernel_height", "variant"),
            "leaky_relu": ("slope", "slope_frac"), "permute": ("perm_dim",)}


_DATA_ROLES = ("input", "in2", "prev_out", "cell")


_LAYER_KEYS = {"name", "kernel", "kind", "input", "input_frac", "weights", "weights_frac", "bias", "bias_frac",
               "prev_out", "prev_out_frac", "cell", "cell_frac", "in2", "in2_frac", "mode", "act", "relu",
               "out_frac", "per_step", "firmware", "firmware_cell", "float_ref", "time_axis",
               *_GEOMETRY, "kernel_width", "kernel_height", "variant", "slope", "slope_frac", "perm_dim"}


_CASE_KEYS = {"mli", "kind", "rounding", "isolate", "vectors", "layers", "input", "input_frac", "description",
              "comment"}


_CLI_FLAG = {"input": "--in", "input_frac": "--in-frac", "weights": "--weights", "weights_frac": "--weights-frac",
             "bias": "--bias", "bias_frac": "--bias-frac", "prev_out": "--prev-out",
             "prev_out_frac": "--prev-out-frac", "cell": "--cell", "cell_frac": "--cell-frac", "in2": "--in2",
             "in2_frac": "--in2-frac", "mode": "--mode", "act": "--act", "relu": "--relu-type",
             "out_frac": "--out-frac", "per_step": "--per-step", "firmware": "--firmware",
             "firmware_cell": "--firmware-cell", "float_ref": "--float-ref", "kernel": "--kernel",
             "kind": "--kind", "time_axis": "--time-axis",
             **{k: "--" + k.replace("_", "-") for k in _GEOMETRY + ("kernel_width", "kernel_height", "variant",
                                                                    "slope", "slope_frac", "perm_dim")}}


class CaseError(ValueError):
    """A bad case file, option or input file; the message names the argument."""


def load_case(path):
    """The dict of a JSON or TOML case file (TOML needs Python >= 3.11's
    ``tomllib``, or the ``tomli`` package)."""
    p = os.fspath(path)
    try:
        with open(p, "rb") as f:
            data = read_bounded(f, p)     # a device or FIFO named as the case must not be read forever
    except OSError as e:
        raise CaseError(f"{p}: cannot read the case file ({e.strerror or e})") from None
    if p.lower().endswith(".toml"):
        try:
            import tomllib
        except ImportError:
            try:
                import tomli as tomllib
            except ImportError:
                raise CaseError(f"{p}: TOML case files need Python 3.11+ (tomllib) or the tomli package; "
                                "write the case as JSON instead") from None
        try:
            case = tomllib.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise CaseError(f"{p}: not valid TOML: {e}") from None
    else:
        try:
            case = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise CaseError(f"{p}: not valid JSON: {e}") from None
    if not isinstance(case, dict):
        raise CaseError(f"{p}: the case must be an object/table at the top level")
    return case


@dataclass
class _Layer:
    name: str
    kernel: str         # base name (KERNELS)
    kind: str
    cfg: dict
    label: str          # how messages name this layer's keys

    variant: str = ""   # a shape-specialised entry point's suffix ("generic", "k3x3_str1_nopad"), or the dispatcher

    @property
    def full_kernel(self):
        k = self.kind if self.kernel in W16D_KERNELS else ("fx16" if self.kind == "fx8w16d" else self.kind)
        return f"{self.kernel}_{k}" + (f"_{self.variant}" if self.variant else "")

    def where(self, key):
        if self.label == "--":
            return _CLI_FLAG.get(key, "--" + key.replace("_", "-"))
        return f"{self.label}.{key}"


def _data_dtype(kind):
    return np.dtype(np.int8 if kind == "fx8" else np.int16)


def _weight_dtype(kind):
    return np.dtype(np.int16 if kind == "fx16" else np.int8)


def _enum(value, enum, where, prefixes):
    try:
        return parse_enum(value, enum, prefixes)
    except ValueError as e:
        raise CaseError(f"{where}: {e}") from None


def _frac(value, where, required=True):
    if value is None:
        if required:
            raise CaseError(f"{where}: frac bits are required")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= 255:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return _frac(int(value), where, required)
        raise CaseError(f"{where}: expected frac bits 0..255, got {value!r}")
    return int(value)


def _parse_kernel(name, kind, where_kernel, where_kind):
    if not isinstance(name, str) or not name:
        raise CaseError(f"{where_kernel}: a kernel name is required (one of {', '.join(KERNELS)})")
    base = name.strip().lower()
    if base.startswith("mli_krn_"):
        base = base[8:]
    sfx = None
    variant = ""
    for vk in VARIANT_KERNELS:      # conv2d_chw_fx8_k1x1_str1_nopad: base, kind, specialisation
        for k in sorted(KINDS, key=len, reverse=True):
            head = f"{vk}_{k}_"
            if base.startswith(head) and len(base) > len(head):
                base, variant = f"{vk}_{k}", base[len(head):]
                break
        if variant:
            break
    for k in sorted(KINDS, key=len, reverse=True):
        if base.endswith("_" + k):
            base, sfx = base[:-len(k) - 1], k
            break
    if base not in KERNELS:
        raise CaseError(f"{where_kernel}: unknown kernel {name!r} (use one of {', '.join(KERNELS)}, "
                        "optionally with _fx8/_fx16/_fx8w16d)")
    if kind is not None and kind not in KINDS:
        raise CaseError(f"{where_kind}: unknown kind {kind!r} (use fx8, fx16 or fx8w16d)")
    if sfx and kind and sfx != kind and not (sfx == "fx16" and kind == "fx8w16d"):
        raise CaseError(f"{where_kind}: kind {kind} contradicts kernel {name}")
    k = sfx or kind or "fx16"
    if sfx == "fx8w16d" and base not in W16D_KERNELS:
        raise CaseError(f"{where_kernel}: {base} has no fx8w16d variant (use fx16)")
    if kind == "fx8w16d" and sfx == "fx16":
        k = "fx8w16d"
    return base, k, variant


def _normalize(case, label="case"):
    """(layers, options) from a case dict; checks every key."""
    if not isinstance(case, dict):
        raise CaseError(f"{label}: expected an object/table")
    cli = label == "--"
    top_kind = case.get("kind")
    if "layers" in case:
        unknown = set(case) - _CASE_KEYS
        if unknown:
            raise CaseError(f"{label}: unknown key(s) {', '.join(sorted(unknown))} (layer keys go in 'layers')")
        raw_layers = case["layers"]
        if not isinstance(raw_layers, list) or not raw_layers:
            raise CaseError(f"{label}.layers: expected a non-empty list of layers")
    else:
        unknown = set(case) - _CASE_KEYS - _LAYER_KEYS
        if unknown:
            raise CaseError(f"{label}: unknown key(s) {', '.join(sorted(unknown))}")
        raw_layers = [{k: v for k, v in case.items() if k in _LAYER_KEYS and k not in ("input", "input_frac")}]
    layers, names = [], set()
    for i, ld in enumerate(raw_layers):
        if not isinstance(ld, dict):
            raise CaseError(f"{label}.layers[{i}]: expected an object/table")
        unknown = set(ld) - _LAYER_KEYS
        if unknown:
            raise CaseError(f"{label}.layers[{i}]: unknown key(s) {', '.join(sorted(unknown))}")
        llabel = "--" if cli else (f"{label}.layers[{i}]" if "layers" in case else label)
        kernel = ld.get("kernel")
        kind = ld.get("kind", top_kind)
        wk = "--kernel" if cli else f"{llabel}.kernel"
        base, k, variant = _parse_kernel(kernel, kind, wk, "--kind" if cli else f"{llabel}.kind")
        if ld.get("variant") is not None:
            if base not in VARIANT_KERNELS:
                raise CaseError(f"{'--variant' if cli else llabel + '.variant'}: {base} has no specialised "
                                f"entry points ({', '.join(VARIANT_KERNELS)} have)")
            if variant and str(ld["variant"]).strip().lower() != variant:
                raise CaseError(f"{'--variant' if cli else llabel + '.variant'}: {ld['variant']!r} contradicts "
                                f"kernel {kernel}")
            variant = str(ld["variant"]).strip().lower()
        for key in set(ld) & (set().union(*CFG_KEYS.values())):
            if key not in CFG_KEYS.get(base, ()) and not (key == "relu" and base == "relu"):
                raise CaseError(f"{_CLI_FLAG.get(key, key) if cli else llabel + '.' + key}: does not apply to "
                                f"{base} (it configures {', '.join(b for b, ks in CFG_KEYS.items() if key in ks)})")
        name = ld.get("name") or (base if len(raw_layers) == 1 else f"{base}{i}")
        if not isinstance(name, str) or name in names:
            raise CaseError(f"{llabel}.name: {name!r} is not a unique layer name")
        names.add(name)
        layers.append(_Layer(name, base, k, dict(ld), llabel if cli else f"{label} layer '{name}'", variant))
    opts = {
        "rounding": case.get("rounding", "convergent"),
        "isolate": bool(case.get("isolate", False)),
        "vectors": bool(case.get("vectors", False)),
        "input": case.get("input"),
        "input_frac": case.get("input_frac"),
    }
    if opts["rounding"] not in ROUNDINGS:
        raise CaseError(f"{'--rounding' if cli else label + '.rounding'}: expected convergent or up, "
                        f"got {opts['rounding']!r}")
    return layers, opts


def _msg(e):
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    if isinstance(e, OSError) and e.filename and e.strerror:
        return f"{e.filename}: {e.strerror}"
    return str(e)


def _spec(value, where, base_dir):
    try:
        return parse_spec(value, base_dir=base_dir)
    except (ValueError, TypeError) as e:
        raise CaseError(f"{where}: {_msg(e)}") from None


def _read(spec, where, **defaults):
    """Read a spec; `defaults` (dtype, shape) fill gaps of raw and C specs only."""
    try:
        if defaults and spec.resolved_format() in ("raw", "c"):
            spec = spec.with_defaults(**defaults)
        return read_spec(spec)
    except (ValueError, TypeError, KeyError, OSError) as e:
        m = _msg(e)
        raise CaseError(f"{where}: {m}" if m.startswith(str(spec)) or spec.path in m else
                        f"{where} ({spec}): {m}") from None


def _fmt(spec):
    try:
        return spec.resolved_format()
    except ValueError:
        return None


def _list_vector_files(path):
    files = sorted(f for f in os.listdir(path) if not f.startswith("."))
    return [os.path.join(path, f) for f in files]


def _read_many(spec, where, n, **defaults):
    """`n` arrays for a data-set run: the files of a folder, or the first
    axis of one file.  With n None, the count is free (the input decides)."""
    if os.path.isdir(spec.path):
        paths = _list_vector_files(spec.path)
        if not paths:
            raise CaseError(f"{where} ({spec}): the folder is empty")
        arrays = [_read(replace(spec, path=p, text=p), where, **defaults) for p in paths]
        labels = [os.path.basename(p) for p in paths]
    else:
        a = _read(spec, where, **{k: v for k, v in defaults.items() if k != "shape"})
        if a.ndim == 0:
            raise CaseError(f"{where} ({spec}): a data-set run needs vectors along the first axis")
        if n is not None and a.ndim == 1 and a.shape[0] != n and a.size % n == 0:
            a = a.reshape(n, -1)  # a flat raw dump of all vectors
        arrays, labels = list(a), [str(i) for i in range(a.shape[0])]
    if n is not None and len(arrays) != n:
        raise CaseError(f"{where} ({spec}): holds {len(arrays)} vectors, the input has {n}")
    return arrays, labels


def _to_container(a, dtype, frac, where, role):
    """Integer array in `dtype`: float values are quantized (inputs as the
    example's float_to_fx helper, coefficients and states by QMN)."""
    if a.dtype.kind == "f":
        if frac is None:
            raise CaseError(f"{where}: float values need frac bits to quantize")
        if not np.all(np.isfinite(a)):
            raise CaseError(f"{where}: contains NaN or infinity")
        if role == "input" or role == "in2":
            return Tensor.from_float(a, "fx8" if dtype == np.int8 else "fx16", frac).numpy().copy()
        return qmn(a, frac, dtype)
    if a.dtype.kind not in "iub":
        raise CaseError(f"{where}: dtype {a.dtype} is not numeric")
    if a.size:
        info = np.iinfo(dtype)
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            raise CaseError(f"{where}: values {lo}..{hi} do not fit {dtype} (kind needs {dtype})")
    return np.ascontiguousarray(a.astype(dtype))

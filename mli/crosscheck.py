"""``mli crosscheck``: compare a firmware's integer outputs with the
package's, bit for bit, and say where and why they differ.

Three ways to describe what to run:

* a **case file** (JSON, or TOML on Python >= 3.11) naming the kernel or a
  chain of layers (e.g. fc -> relu -> lstm), their configuration, frac bits
  and the files holding inputs, weights and the firmware's outputs;
* **command-line flags** for one kernel (``--kernel lstm_cell_fx16 --in x.idx
  --in-frac 12 ... --firmware out.npy``);
* ``--har DIR``: firmware dumps of the MLI 1.1 HAR example's layer outputs
  (``fc1``, ``relu1``, ``lstm2``, ``lstm3``, ``out``), checked against
  :func:`mli.har.run_har`.

Every output is compared with :func:`mli.metrics.compare`, then the whole
run is repeated in the other DSP rounding mode (``convergent`` / ``up``) to
tell a rounding-mode build difference from a real one.  Data-set runs (an
input folder, or ``--vectors`` with an input whose first axis indexes
vectors) print one summary line per vector, each as soon as its vector is
done, so a run stopped with Ctrl-C (exit 130) keeps the lines it finished.

Case file (JSON; TOML is the same structure)::

    {
      "kind": "fx16",
      "input": "x.idx", "input_frac": 13,
      "layers": [
        {"name": "fc1", "kernel": "fully_connected", "weights": "w.npz:L1_fc_wt",
         "weights_frac": 14, "bias": "w.npz:L1_fc_bias", "bias_frac": 14,
         "out_frac": 12, "firmware": "fw/fc1.idx"},
        {"name": "relu1", "kernel": "relu", "relu": "gen", "firmware": "fw/relu1.idx"},
        {"name": "lstm2", "kernel": "lstm_cell", "mode": "batch_to_batch", "act": "tanh",
         "weights": "w.npz:L2_lstm_wt", "weights_frac": 15,
         "bias": "w.npz:L2_lstm_bias", "bias_frac": 14,
         "prev_out": "zeros", "prev_out_frac": 15, "cell": "zeros", "cell_frac": 11,
         "firmware": "fw/lstm2.bin,dtype=int16"}
      ]
    }

A single-kernel case may put the layer keys at the top level instead of
``layers``.  Paths are relative to the case file.  File specs are those of
:func:`mli.io.load.load_array`.  Float weights are quantized with the QMN
rule (:func:`mli.io.c_array.qmn`), float inputs as the MLI example helper
does (:meth:`mli.Tensor.from_float`).  Layer keys: ``name kernel kind input
input_frac weights weights_frac bias bias_frac prev_out prev_out_frac cell
cell_frac in2 in2_frac mode act relu out_frac per_step firmware
firmware_cell float_ref time_axis``; ``input`` may be ``"@LAYER"`` to take
another layer's output.  Case keys: ``kind rounding isolate vectors
layers input input_frac``.
"""

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from . import kernels as K
from ._status import MliError
from .enums import ReluType, RnnActivation, RnnMode, parse_enum
from .io.c_array import qmn
from .io.limits import read_bounded
from .io.load import parse_spec, read_spec
from .io.npz import npz_frac_bits
from .metrics import Report, compare, snr_db
from .rounding import rounding as rounding_ctx
from .tensor import Tensor

__all__ = ["CaseError", "LayerResult", "CrosscheckResult", "DatasetResult", "load_case", "run_case",
           "crosscheck", "crosscheck_har", "plot_results", "main", "KERNELS", "ROUNDINGS"]

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
}
_DATA_ROLES = ("input", "in2", "prev_out", "cell")
_LAYER_KEYS = {"name", "kernel", "kind", "input", "input_frac", "weights", "weights_frac", "bias", "bias_frac",
               "prev_out", "prev_out_frac", "cell", "cell_frac", "in2", "in2_frac", "mode", "act", "relu",
               "out_frac", "per_step", "firmware", "firmware_cell", "float_ref", "time_axis"}
_CASE_KEYS = {"kind", "rounding", "isolate", "vectors", "layers", "input", "input_frac", "description",
              "comment"}
_CLI_FLAG = {"input": "--in", "input_frac": "--in-frac", "weights": "--weights", "weights_frac": "--weights-frac",
             "bias": "--bias", "bias_frac": "--bias-frac", "prev_out": "--prev-out",
             "prev_out_frac": "--prev-out-frac", "cell": "--cell", "cell_frac": "--cell-frac", "in2": "--in2",
             "in2_frac": "--in2-frac", "mode": "--mode", "act": "--act", "relu": "--relu-type",
             "out_frac": "--out-frac", "per_step": "--per-step", "firmware": "--firmware",
             "firmware_cell": "--firmware-cell", "float_ref": "--float-ref", "kernel": "--kernel",
             "kind": "--kind", "time_axis": "--time-axis"}


class CaseError(ValueError):
    """A bad case file, option or input file; the message names the argument."""


# ===================================================================== case
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

    @property
    def full_kernel(self):
        k = self.kind if self.kernel in ("fully_connected", "basic_rnn_cell", "lstm_cell") else \
            ("fx16" if self.kind == "fx8w16d" else self.kind)
        return f"{self.kernel}_{k}"

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
    if sfx == "fx8w16d" and base not in ("fully_connected", "basic_rnn_cell", "lstm_cell"):
        raise CaseError(f"{where_kernel}: {base} has no fx8w16d variant (use fx16)")
    if kind == "fx8w16d" and sfx == "fx16":
        k = "fx8w16d"
    return base, k


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
        base, k = _parse_kernel(kernel, kind, wk, "--kind" if cli else f"{llabel}.kind")
        name = ld.get("name") or (base if len(raw_layers) == 1 else f"{base}{i}")
        if not isinstance(name, str) or name in names:
            raise CaseError(f"{llabel}.name: {name!r} is not a unique layer name")
        names.add(name)
        layers.append(_Layer(name, base, k, dict(ld), llabel if cli else f"{label} layer '{name}'"))
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


# ============================================================= loading
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


class _Prepared:
    """A case with every static tensor loaded: layers, their tensors,
    and per-vector sources (input, firmware, float refs)."""

    def __init__(self, layers, opts, base_dir, require_firmware=True):
        self.layers, self.opts, self.base_dir = layers, opts, base_dir
        self.static = {}     # (layer, role) -> Tensor
        self.params = {}     # layer -> dict of parsed config
        self.sources = {}    # (layer or "", role) -> ArraySpec for per-vector data
        names = [lay.name for lay in layers]
        first = layers[0]
        for i, lay in enumerate(layers):
            c = lay.cfg
            p = {}
            for role in KERNELS[lay.kernel]:
                val = c.get(role)
                fr = c.get(role + "_frac")
                dt = _data_dtype(lay.kind) if role in _DATA_ROLES else _weight_dtype(lay.kind)
                if lay.kernel in ("relu", "tanh", "sigm") or lay.kernel.startswith("eltwise"):
                    dt = _data_dtype(lay.kind)
                if role in ("prev_out", "cell") and (val is None or val == "zeros"):
                    bias = self.static.get((lay.name, "bias"))
                    m = bias.shape[-1] if bias is not None and bias.rank else 0
                    if role == "prev_out" and fr is None:
                        act = c.get("act", "tanh")
                        if _enum(act, RnnActivation, lay.where("act"), ("RNN_ACT_",)) != RnnActivation.NONE:
                            fr = 15 if lay.kind != "fx8" else 7
                    fr = _frac(fr, lay.where(role + "_frac"))
                    self.static[(lay.name, role)] = Tensor(np.zeros(m, dt), fr)
                    continue
                if val is None:
                    raise CaseError(f"{lay.where(role)}: required by {lay.full_kernel}")
                sp = _spec(val, lay.where(role), base_dir)
                if fr is None and sp.frac_bits is not None:
                    fr = sp.frac_bits
                if fr is None and sp.selector and _fmt(sp) == "npz" and os.path.isfile(sp.path):
                    try:
                        fr = npz_frac_bits(sp.path).get(sp.selector)
                    except (ValueError, OSError):
                        pass
                fr = _frac(fr, lay.where(role + "_frac"))
                if sp.resolved_format() == "c" and sp.macro and sp.frac_bits is None:
                    sp = replace(sp, frac_bits=fr)
                if sp.resolved_format() in ("c", "raw") and sp.dtype is None:
                    sp = replace(sp, dtype=dt.name)
                arr = _read(sp, lay.where(role))
                self.static[(lay.name, role)] = Tensor(_to_container(arr, dt, fr, lay.where(role), role), fr)
            if lay.kernel in ("basic_rnn_cell", "lstm_cell"):
                p["mode"] = _enum(c.get("mode", "batch_to_batch"), RnnMode, lay.where("mode"), ("RNN_",))
                p["act"] = _enum(c.get("act", "tanh"), RnnActivation, lay.where("act"), ("RNN_ACT_",))
            elif "mode" in c or "act" in c:
                raise CaseError(f"{lay.where('mode' if 'mode' in c else 'act')}: applies to basic_rnn_cell "
                                "and lstm_cell only")
            if lay.kernel == "relu":
                p["relu"] = _enum(c.get("relu", "gen"), ReluType, lay.where("relu"), ("MLI_RELU_", "MLI_"))
            p["out_frac"] = _frac(c.get("out_frac"), lay.where("out_frac"), required=False)
            ps = c.get("per_step", "auto")
            if ps not in ("auto", True, False, "yes", "no", "true", "false"):
                raise CaseError(f"{lay.where('per_step')}: expected auto, yes or no, got {ps!r}")
            p["per_step"] = {"yes": True, "true": True, "no": False, "false": False}.get(ps, ps)
            ta = c.get("time_axis", 0)
            if ta in ("none", "None"):
                ta = None
            if ta is not None and (isinstance(ta, bool) or not isinstance(ta, int)):
                raise CaseError(f"{lay.where('time_axis')}: expected an axis number or none, got {ta!r}")
            p["time_axis"] = ta
            # the layer's input
            inp = c.get("input")
            if inp is None and i == 0:
                inp = opts["input"]
                if inp is None:
                    raise CaseError(f"{_CLI_FLAG['input'] if lay.label == '--' else 'input'}: "
                                    "the first layer needs an input file")
                p["input_frac"] = opts["input_frac"] if c.get("input_frac") is None else c.get("input_frac")
            else:
                p["input_frac"] = c.get("input_frac")
            if isinstance(inp, str) and inp.startswith("@"):
                ref = inp[1:]
                if ref not in names[:i]:
                    raise CaseError(f"{lay.where('input')}: {inp!r} names no earlier layer "
                                    f"({', '.join(names[:i]) or 'none'})")
                p["input_ref"] = ref
            elif inp is None:
                p["input_ref"] = names[i - 1]
            else:
                self.sources[(lay.name, "input")] = _spec(inp, lay.where("input"), base_dir)
            for role in ("firmware", "firmware_cell", "float_ref"):
                if c.get(role) is not None:
                    if role == "firmware_cell" and lay.kernel != "lstm_cell":
                        raise CaseError(f"{lay.where(role)}: only lstm_cell has a cell output")
                    self.sources[(lay.name, role)] = _spec(c[role], lay.where(role), base_dir)
            self.params[lay.name] = p
        if require_firmware and not any(k[1] in ("firmware", "firmware_cell") for k in self.sources):
            raise CaseError(f"{_CLI_FLAG['firmware'] if first.label == '--' else 'firmware'}: "
                            "no layer names a firmware output to compare")
        self.first = first

    # ----------------------------------------------------------- vectors
    def vector_data(self, inputs_only=False):
        """[(label, {(layer, role): ndarray})] for each vector."""
        vec = self.opts["vectors"]
        entries = [(k, v) for k, v in self.sources.items() if not inputs_only or k[1] == "input"]
        if not vec:
            data = {}
            for (lname, role), sp in entries:
                lay = self._layer(lname)
                data[(lname, role)] = _read(sp, lay.where(role), **self._defaults(lay, role))
            return [("", data)]
        n, labels = None, None
        per = {}
        # inputs decide the count
        for (lname, role), sp in sorted(entries, key=lambda e: e[0][1] != "input"):
            lay = self._layer(lname)
            arrays, lab = _read_many(sp, lay.where(role), n, **self._defaults(lay, role))
            if n is None:
                n, labels = len(arrays), lab
            per[(lname, role)] = arrays
        return [(labels[v], {k: per[k][v] for k in per}) for v in range(n)]

    def _layer(self, name):
        return next(lay for lay in self.layers if lay.name == name)

    def _defaults(self, lay, role):
        if role == "float_ref":
            return {}
        return {"dtype": _data_dtype(lay.kind).name}


# ============================================================== running
def _per_step(flag, x, w):
    if flag is True:
        return x.rank >= 2
    if flag is False or x.rank < 2:
        return False
    n = w.shape[1] if w.rank >= 2 else 0
    return math.prod(x.shape) != n and x.shape[-1] == n


def _run_layer(lay, p, x, tensors):
    """(output Tensor, cell Tensor or None)."""
    fn = getattr(K, lay.full_kernel)
    kw = {}
    if lay.kernel == "fully_connected":
        w, b = tensors["weights"], tensors["bias"]
        if p["out_frac"] is not None:
            kw["out_frac_bits"] = p["out_frac"]
        if _per_step(p["per_step"], x, w):
            xa = x.numpy()
            rows = [fn(Tensor(np.ascontiguousarray(xa[t]), x.frac_bits), w, b, **kw) for t in range(xa.shape[0])]
            return Tensor(np.stack([r.numpy() for r in rows]), rows[0].frac_bits), None
        return fn(x, w, b, **kw), None
    if lay.kernel == "basic_rnn_cell":
        if p["out_frac"] is not None:
            kw["out_frac_bits"] = p["out_frac"]
        cfg = K.RnnCellConfig(mode=p["mode"], act=p["act"])
        return fn(x, tensors["prev_out"], tensors["weights"], tensors["bias"], cfg, **kw), None
    if lay.kernel == "lstm_cell":
        cfg = K.RnnCellConfig(mode=p["mode"], act=p["act"])
        return fn(x, tensors["prev_out"], tensors["weights"], tensors["bias"], cfg, tensors["cell"])
    if lay.kernel == "relu":
        return fn(x, p["relu"]), None
    if lay.kernel in ("tanh", "sigm"):
        return fn(x), None
    if lay.kernel == "eltwise_mul" and p["out_frac"] is not None:
        kw["out_frac_bits"] = p["out_frac"]
    return fn(x, tensors["in2"], **kw), None


def _input_tensor(lay, p, arr):
    dt = _data_dtype(lay.kind)
    fr = _frac(p["input_frac"], lay.where("input_frac"))
    return Tensor(_to_container(arr, dt, fr, lay.where("input"), "input"), fr)


def _run_chain(prep, data, mode, feed=None):
    """{layer: (out, cell)} of one vector in rounding `mode`; `feed`
    ({layer: firmware output}) makes later layers start from the
    firmware's outputs instead of the package's (isolation)."""
    outs = {}
    with rounding_ctx(mode):
        for lay in prep.layers:
            p = prep.params[lay.name]
            if "input_ref" in p:
                src = p["input_ref"]
                prev = outs[src][0]
                if feed is not None and src in feed:
                    prev = Tensor(np.ascontiguousarray(feed[src].reshape(prev.shape).astype(prev.dtype)),
                                  prev.frac_bits)
                x = prev
                if x.dtype != _data_dtype(lay.kind):
                    raise CaseError(f"{lay.where('input')}: layer {src} gives {x.dtype} data, "
                                    f"{lay.full_kernel} needs {_data_dtype(lay.kind)}")
            else:
                x = _input_tensor(lay, p, data[(lay.name, "input")])
            tensors = {role: prep.static[(lay.name, role)] for role in KERNELS[lay.kernel]}
            try:
                outs[lay.name] = _run_layer(lay, p, x, tensors)
            except MliError as e:
                role = {"in": "input", "in1": "input", "out": "out_frac"}.get(e.argument, e.argument)
                where = lay.where(role) if role in _LAYER_KEYS else f"layer {lay.name}"
                raise CaseError(f"{where}: {e}") from None
    return outs


def run_case(case, *, base_dir=None, rounding="convergent"):
    """The package's outputs of a case (dict or case-file path) for its
    first vector: ``{layer: Tensor}`` (and ``"LAYER.cell"`` for LSTM cells).
    Handy to produce expected dumps."""
    prep = _prepare(case, base_dir, require_firmware=False)
    label, data = prep.vector_data(inputs_only=True)[0]
    outs = _run_chain(prep, data, rounding)
    res = {}
    for name, (o, c) in outs.items():
        res[name] = o
        if c is not None:
            res[name + ".cell"] = c
    return res


def _prepare(case, base_dir, require_firmware=True, **overrides):
    if isinstance(case, (str, os.PathLike)):
        path = os.fspath(case)
        d = load_case(path)
        base = os.path.dirname(os.path.abspath(path)) if base_dir is None else base_dir
        label = os.path.basename(path)
    else:
        d, base, label = case, base_dir, "case"
        if isinstance(case, dict) and case.get("_cli"):
            d = {k: v for k, v in case.items() if k != "_cli"}
            label = "--"
    d = dict(d)
    for k, v in overrides.items():
        if v is not None:
            d[k] = v
    layers, opts = _normalize(d, label)
    return _Prepared(layers, opts, base, require_firmware)


# =============================================================== results
@dataclass
class LayerResult:
    """One compared output: ``name`` (layer, or ``LAYER.cell``), ``kernel``,
    ``report`` in the primary rounding mode and ``alt`` in the other one."""

    name: str
    kernel: str
    report: Report
    alt: Optional[Report] = None
    alt_rounding: Optional[str] = None

    @property
    def bit_exact(self):
        return self.report.bit_exact

    def diagnosis(self):
        if self.bit_exact:
            return "bit-exact"
        if self.alt is not None and self.alt.bit_exact:
            return f"bit-exact with rounding '{self.alt_rounding}'"
        if self.alt is not None:
            return f"differs in both rounding modes ({self.alt.n_diff} elements with '{self.alt_rounding}')"
        return "differs"

    def to_dict(self):
        d = {"name": self.name, "kernel": self.kernel, "bit_exact": self.bit_exact,
             "diagnosis": self.diagnosis(), "report": self.report.to_dict()}
        if self.alt is not None:
            d["alt_rounding"] = self.alt_rounding
            d["alt_bit_exact"] = self.alt.bit_exact
            d["alt_n_diff"] = self.alt.n_diff
            d["alt_where"] = self.alt.where()
        return d


@dataclass
class CrosscheckResult:
    """All compared outputs of one vector.  ``bit_exact`` when every output
    matches in the primary rounding mode; ``alt_bit_exact`` when every
    output matches in the other mode."""

    layers: list
    rounding: str = "convergent"
    alt_rounding: Optional[str] = None
    label: str = ""
    isolate: bool = False
    chained: bool = True      # layers fed from each other in the package run (case files)
    notes: list = field(default_factory=list)

    @property
    def bit_exact(self):
        return all(r.bit_exact for r in self.layers)

    @property
    def alt_bit_exact(self):
        if self.alt_rounding is None:
            return None
        return all(r.alt is not None and r.alt.bit_exact for r in self.layers)

    @property
    def first_mismatch(self):
        return next((r for r in self.layers if not r.bit_exact), None)

    def diagnosis(self):
        if self.bit_exact:
            return f"bit-exact ({len(self.layers)} output{'s' * (len(self.layers) != 1)}, rounding {self.rounding})"
        if self.alt_bit_exact:
            return (f"MISMATCH with rounding '{self.rounding}', but bit-exact with rounding '{self.alt_rounding}': "
                    f"the firmware's DSP rounding mode is '{self.alt_rounding}' (MLI 1.1 is built with "
                    "-Xdsp_ctrl=...,convergent)")
        fm = self.first_mismatch
        text = f"MISMATCH: first in {fm.name} ({fm.kernel}) at {fm.report.where()}"
        if self.alt_rounding is not None:
            text += "; not explained by the rounding mode" if not (fm.alt and fm.alt.bit_exact) else \
                f"; {fm.name} matches with rounding '{self.alt_rounding}'"
        later = [r.name for r in self.layers[self.layers.index(fm) + 1:] if not r.bit_exact]
        if later:
            text += f"; later mismatches ({', '.join(later)}) may follow from it"
            if self.chained and not self.isolate:
                text += " (--isolate feeds each layer the firmware's own input)"
        return text

    def summary_line(self):
        """One line: bit-exact, or where the first mismatch is."""
        head = f"vector {self.label}: " if self.label != "" else ""
        if self.bit_exact:
            n = len(self.layers)
            return head + f"bit-exact ({n} output{'' if n == 1 else 's'})"
        fm = self.first_mismatch
        r = fm.report
        line = (f"{head}MISMATCH {fm.name}: {r.n_diff}/{r.count} differ, first at {r.where()} "
                f"(firmware {r.first_firmware}, package {r.first_package}), max {r.max_abs_diff} LSB")
        if self.alt_bit_exact:
            line += f"; bit-exact with rounding '{self.alt_rounding}'"
        return line

    def format(self):
        lines = []
        if self.label != "":
            lines.append(f"vector {self.label}")
        lines.append(f"rounding {self.rounding}" + (f" (also tried {self.alt_rounding})" if self.alt_rounding else "")
                     + (", isolated layers" if self.isolate else ""))
        for r in self.layers:
            lines.append(f"{r.name} [{r.kernel}, {list(r.report.shape)}]: {r.diagnosis()}")
            lines.append(r.report.format(indent="    "))
            if r.alt is not None and not r.bit_exact and not r.alt.bit_exact:
                lines.append(f"    with rounding '{r.alt_rounding}': {r.alt.summary()}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(self.diagnosis())
        return "\n".join(lines)

    def to_dict(self):
        return {"label": self.label, "bit_exact": self.bit_exact, "rounding": self.rounding,
                "alt_rounding": self.alt_rounding, "alt_bit_exact": self.alt_bit_exact,
                "isolate": self.isolate, "diagnosis": self.diagnosis(),
                "first_mismatch": self.first_mismatch.name if self.first_mismatch else None,
                "layers": [r.to_dict() for r in self.layers], "notes": list(self.notes)}


@dataclass
class DatasetResult:
    """Results of a data-set run, one :class:`CrosscheckResult` per vector."""

    results: list

    @property
    def bit_exact(self):
        return all(r.bit_exact for r in self.results)

    def summary(self):
        n = len(self.results)
        ok = sum(r.bit_exact for r in self.results)
        alt = sum(1 for r in self.results if not r.bit_exact and r.alt_bit_exact)
        s = f"{n} vectors: {ok} bit-exact, {n - ok} mismatch"
        if alt:
            s += f" ({alt} bit-exact with rounding '{self.results[0].alt_rounding}')"
        return s

    def format(self):
        return "\n".join([r.summary_line() for r in self.results] + [self.summary()])

    def to_dict(self):
        return {"bit_exact": self.bit_exact, "summary": self.summary(),
                "vectors": [r.to_dict() for r in self.results]}


def _other(mode):
    return "up" if mode == "convergent" else "convergent"


def _progress(items, total, desc):
    if not sys.stderr.isatty():
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, total=total, desc=desc, file=sys.stderr, leave=False)


def crosscheck(case, *, base_dir=None, rounding=None, check_other_rounding=True, isolate=None, vectors=None,
               progress=False, on_result=None):
    """Cross-check the firmware outputs a case names.

    Parameters
    ----------
    case : dict or path
        A case (see the module docstring) or a JSON/TOML case file.
    base_dir : str, optional
        Directory relative paths are relative to (default: the case file's).
    rounding : {"convergent", "up"}, optional
        The mode to check first (default: the case's, else convergent).
    check_other_rounding : bool
        Also run in the other mode and say whether it would match.
    isolate : bool, optional
        Feed each layer the firmware's output of the layer before (when
        dumped) instead of the package's, so a difference does not spread.
    vectors : bool, optional
        Data-set run: the input's first axis (or the files of an input
        folder) are independent vectors; firmware files likewise.
    progress : bool
        Show a tqdm progress bar on stderr when it is a terminal.
    on_result : callable, optional
        In a data-set run, called with each vector's :class:`CrosscheckResult`
        as soon as it is done (what the CLI prints a data set's lines with, so an interrupted
        run keeps the lines of the vectors finished).

    Returns
    -------
    CrosscheckResult, or DatasetResult for a data-set run.

    Raises
    ------
    CaseError (a ValueError)
        Bad case, option, file or kernel configuration; the message names
        the argument.
    """
    prep = _prepare(case, base_dir, rounding=rounding, isolate=isolate, vectors=vectors)
    mode = prep.opts["rounding"]
    alt_mode = _other(mode) if check_other_rounding else None
    data_list = prep.vector_data()
    vec = prep.opts["vectors"]
    results = []
    items = _progress(data_list, len(data_list), "crosscheck") if progress and vec else data_list
    for label, data in items:
        results.append(_check_vector(prep, data, mode, alt_mode, label if vec else ""))
        if on_result is not None and vec:
            on_result(results[-1])
    return DatasetResult(results) if vec else results[0]


def _check_vector(prep, data, mode, alt_mode, label):
    isolate = prep.opts["isolate"]
    fw = {}
    for lay in prep.layers:
        if (lay.name, "firmware") in data:
            fw[lay.name] = data[(lay.name, "firmware")]
    feed = fw if isolate else None
    outs = _run_chain(prep, data, mode, feed)
    alt_outs = _run_chain(prep, data, alt_mode, feed) if alt_mode else None
    layer_results = []
    for lay in prep.layers:
        p = prep.params[lay.name]
        for role, idx, suffix in (("firmware", 0, ""), ("firmware_cell", 1, ".cell")):
            if (lay.name, role) not in data:
                continue
            pkg = outs[lay.name][idx]
            fref = data.get((lay.name, "float_ref")) if role == "firmware" else None
            where = lay.where(role)
            try:
                rep = compare(data[(lay.name, role)], pkg, time_axis=p["time_axis"], float_ref=fref,
                              frac_bits=pkg.frac_bits)
                alt = compare(data[(lay.name, role)], alt_outs[lay.name][idx], time_axis=p["time_axis"],
                              frac_bits=pkg.frac_bits) if alt_outs else None
            except (ValueError, TypeError) as e:
                m = str(e)
                m = m[len("firmware: "):] if m.startswith("firmware: ") else m
                raise CaseError(f"{where}: {m}") from None
            layer_results.append(LayerResult(lay.name + suffix, lay.full_kernel, rep, alt, alt_mode))
    return CrosscheckResult(layer_results, mode, alt_mode, label, isolate)


# =================================================================== HAR
_HAR_ALIASES = {"fc1": ("fc1", "ir_fc1", "layer1_fc"), "relu1": ("relu1", "ir_relu1", "layer1_relu"),
                "lstm2": ("lstm2", "ir_lstm2", "layer2_lstm"), "lstm3": ("lstm3", "ir_lstm3", "layer3_lstm"),
                "out": ("out", "fc4", "ir_fc4", "layer4_fc", "output")}
_DUMP_EXT = (".idx", ".npy", ".bin", ".raw", ".dat")


def _har_find(folder):
    """{layer: path} of the dumps in a folder (names like the layers)."""
    found = {}
    files = {f.lower(): f for f in os.listdir(folder)}
    for layer, names in _HAR_ALIASES.items():
        for n in names:
            hits = [files[n + e] for e in _DUMP_EXT if n + e in files]
            if hits:
                found[layer] = os.path.join(folder, hits[0])
                break
    return found


def _har_dumps(source, n_vectors, dtype):
    """[{layer: ndarray}] per vector from a folder, an .npz, or a folder of
    per-vector subfolders; stacked files split along axis 0."""
    where = "--har"
    if not os.path.exists(source):
        raise CaseError(f"{where}: no such file or folder: {source}")
    if os.path.isfile(source):
        if not source.lower().endswith(".npz"):
            raise CaseError(f"{where}: expected a folder of layer dumps or an .npz file, got {source}")
        from .io.npz import read_npz
        try:
            allarr = read_npz(source)
        except (ValueError, KeyError, OSError) as e:
            raise CaseError(f"{where}: {_msg(e)}") from None
        if not isinstance(allarr, dict):
            allarr = {"out": allarr}
        one = {}
        for layer, names in _HAR_ALIASES.items():
            for nm in names:
                if nm in allarr:
                    one[layer] = allarr[nm]
                    break
        if not one:
            raise CaseError(f"{where}: {source} holds none of {', '.join(_HAR_ALIASES)}")
        sets = [one]
        stacked = True
    else:
        subdirs = sorted(d for d in os.listdir(source) if os.path.isdir(os.path.join(source, d))
                         and not d.startswith("."))
        if n_vectors is not None and subdirs and not _har_find(source):
            sets = []
            for d in subdirs:
                paths = _har_find(os.path.join(source, d))
                sets.append({k: _read(parse_spec(p), f"{where} {d}/{os.path.basename(p)}", dtype=dtype)
                             for k, p in paths.items()})
            if len(sets) != n_vectors:
                raise CaseError(f"{where}: {len(sets)} vector folders, the input has {n_vectors} vectors")
            return sets, [d for d in subdirs]
        paths = _har_find(source)
        if not paths:
            raise CaseError(f"{where}: {source} holds no dump named like a layer "
                            f"({', '.join(_HAR_ALIASES)}; {', '.join(_DUMP_EXT)})")
        sets = [{k: _read(parse_spec(p), f"{where} {os.path.basename(p)}", dtype=dtype) for k, p in paths.items()}]
        stacked = True
    if n_vectors is None:
        return sets, [""]
    one = sets[0]
    per = [{} for _ in range(n_vectors)]
    for k, a in one.items():
        if a.ndim == 1 and a.shape[0] != n_vectors and a.size % n_vectors == 0:
            a = a.reshape(n_vectors, -1)  # a flat raw dump of all vectors
        if not stacked or a.ndim == 0 or a.shape[0] != n_vectors:
            raise CaseError(f"{where}: dump {k} of shape {list(a.shape)} does not hold {n_vectors} vectors "
                            "along its first axis")
        for v in range(n_vectors):
            per[v][k] = a[v]
    return per, [str(v) for v in range(n_vectors)]


def crosscheck_har(firmware, *, x=None, depth=16, layer3="custom", data_dir=None, float_ref=None,
                   rounding="convergent", check_other_rounding=True, vectors=False, progress=False, on_result=None):
    """Cross-check firmware dumps of the HAR example's layer outputs.

    Parameters
    ----------
    firmware : str
        A folder of dumps named like the layers (``fc1 relu1 lstm2 lstm3
        out``, also ``ir_fc1`` ... ``ir_fc4`` as the example's float dumps
        are named; extension .idx, .npy, or .bin/.raw/.dat for raw dumps in
        the data type of `depth`), or an .npz with those keys.  Layers
        without a dump are not compared.  With `vectors`: stacked dumps
        (first axis = vector) or one subfolder per vector.
    x : array or spec, optional
        The input [T, 9] (float: quantized as the example does; integer:
        already in the input format), or with `vectors` [N, T, 9] / a
        folder.  Default: the example's built-in input #300.
    depth, layer3, data_dir
        As :func:`mli.har.run_har`.
    float_ref : str, optional
        Folder of float per-layer references (``ir_fc1.idx`` ...); default
        the example's ``ir_idx_300`` when `x` is the built-in input.
    rounding, check_other_rounding, progress, on_result
        As :func:`crosscheck`.

    Returns
    -------
    CrosscheckResult, or DatasetResult with `vectors`.
    """
    try:
        from . import har
    except ImportError as e:  # pragma: no cover - har ships with the package
        raise CaseError(f"--har: mli.har is not available ({e})") from None
    if rounding not in ROUNDINGS:
        raise CaseError(f"--rounding: expected convergent or up, got {rounding!r}")
    if layer3 not in ("custom", "library"):
        raise CaseError(f"--layer3: expected custom or library, got {layer3!r}")
    try:
        depth = int(depth)
    except (TypeError, ValueError):
        depth = None
    if depth not in har.DEPTHS:
        raise CaseError(f"--depth: expected 16, 816 or 8, got {depth!r}")
    try:
        model = har.load_har(data_dir, depth)
    except (OSError, ValueError) as e:
        raise CaseError(f"--data: {_msg(e)}") from None
    dt = np.dtype(np.int8 if depth == 8 else np.int16)
    builtin = x is None
    if builtin:
        if vectors:
            raise CaseError("--vectors: needs --in with the vectors (e.g. small_test_base/tests.idx)")
        try:
            xs, _ = har.load_reference(model.data_dir)
        except (OSError, ValueError) as e:
            raise CaseError(f"--data: {_msg(e)}") from None
        inputs, labels = [xs], [""]
    elif isinstance(x, np.ndarray):
        inputs = list(x) if vectors else [x]
        labels = [str(i) for i in range(len(inputs))] if vectors else [""]
    else:
        sp = _spec(x, "--in", None)
        if vectors:
            inputs, labels = _read_many(sp, "--in", None)
        else:
            inputs, labels = [_read(sp, "--in")], [""]
    fref_dir = float_ref
    if fref_dir is None and builtin:
        cand = os.path.join(model.data_dir, "ir_idx_300")
        fref_dir = cand if os.path.isdir(cand) else None
    frefs = {}
    if fref_dir is not None:
        if not os.path.isdir(fref_dir):
            raise CaseError(f"--float-ref: not a folder: {fref_dir}")
        for layer, fname in har.IR_FILES.items():
            p = os.path.join(fref_dir, fname)
            if os.path.isfile(p):
                frefs[layer] = _read(parse_spec(p), f"--float-ref {fname}")
    dumps, dump_labels = _har_dumps(os.fspath(firmware), len(inputs) if vectors else None, dt.name)
    if vectors and labels and all(lb.isdigit() for lb in labels) and not all(lb.isdigit() for lb in dump_labels):
        labels = dump_labels
    alt_mode = _other(rounding) if check_other_rounding else None
    results = []
    pairs = list(zip(inputs, dumps, labels))
    items = _progress(pairs, len(pairs), "crosscheck --har") if progress and vectors else pairs
    f_in = har.input_frac_bits(depth)
    for xin, fw, label in items:
        if xin.dtype.kind == "f":
            try:
                xt = har.quantize_input(xin, depth)
            except ValueError as e:
                raise CaseError(f"--in: {e}") from None
        else:
            xt = Tensor(_to_container(xin, dt, f_in, "--in", "input"), f_in)
        try:
            with rounding_ctx(rounding):
                pkg = har.run_har(xt, depth, layer3, model=model)
            alt = None
            if alt_mode:
                with rounding_ctx(alt_mode):
                    alt = har.run_har(xt, depth, layer3, model=model)
        except (ValueError, MliError) as e:
            raise CaseError(f"--in: {e}") from None
        kind = har.DEPTHS[depth]
        lres = []
        for layer in har.LAYERS:
            if layer not in fw:
                continue
            wk = "fx8w16d" if depth == 816 else kind[0]
            full = {"fc1": f"fully_connected_{wk} per step", "relu1": f"relu_{kind[0]}",
                    "lstm2": f"lstm_cell_{wk} batch-to-batch",
                    "lstm3": (f"lstm_cell_{wk} batch-to-last" if layer3 == "library" else
                              f"custom LSTM: basic_rnn_cell_{wk} + sigm/tanh/eltwise_{kind[0]}"),
                    "out": f"fully_connected_{wk}"}[layer]
            try:
                rep = compare(fw[layer], pkg[layer], float_ref=frefs.get(layer))
                arep = compare(fw[layer], alt[layer]) if alt else None
            except (ValueError, TypeError) as e:
                raise CaseError(f"--har {layer}: {e}") from None
            lres.append(LayerResult(layer, full, rep, arep, alt_mode))
        res = CrosscheckResult(lres, rounding, alt_mode, label, chained=False)
        missing = [lay for lay in har.LAYERS if lay not in fw]
        if missing:
            res.notes.append(f"no dump for {', '.join(missing)}")
        results.append(res)
        if on_result is not None and vectors:
            on_result(res)
    return DatasetResult(results) if vectors else results[0]


# ================================================================== plot
def plot_results(result, path):
    """Draw the differing elements and the firmware-vs-package S/N per time
    step of every compared output with a time axis (pooled over the vectors
    of a data-set run) into a PNG; outputs without a time axis are listed
    with their difference counts.  When no output has a time axis, draws
    differing elements and S/N per output instead.  Needs matplotlib
    (ImportError otherwise)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = result.results if isinstance(result, DatasetResult) else [result]
    timed, untimed = {}, {}
    for r in results:
        for lr in r.layers:
            rep = lr.report
            if rep.per_step_diff is not None:
                acc = timed.setdefault(lr.name, [np.zeros(len(rep.per_step_diff)), np.zeros(len(rep.per_step_diff)),
                                                 np.zeros(len(rep.per_step_diff))])
                if len(acc[0]) == len(rep.per_step_diff):
                    acc[0] += rep.per_step_diff
                    acc[1] += rep.per_step_signal
                    acc[2] += rep.per_step_noise
            else:
                u = untimed.setdefault(lr.name, [0, 0, 0.0, 0.0])
                u[0] += rep.n_diff
                u[1] += rep.count
                fw_pk = rep.snr_db
                if math.isfinite(fw_pk):
                    u[3] += 1.0
                    u[2] += fw_pk
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6))
    title = "firmware vs package" + (f" ({len(results)} vectors)" if len(results) > 1 else "")
    if timed:
        for name, (d, sig, noise) in timed.items():
            x = np.arange(len(d))
            ax1.step(x, d, where="mid", label=name)
            snr = np.array([snr_db(a, b) for a, b in zip(sig, noise)])
            ok = np.isfinite(snr)
            ax2.plot(x[ok], snr[ok], marker=".", linestyle="-" if ok.sum() > 1 else "none", label=name)
        ax1.set_xlabel("time step")
        ax2.set_xlabel("time step (steps without differences have infinite S/N and are not drawn)")
        ax2.set_xlim(ax1.get_xlim())
        if untimed:
            title += "\nno time axis: " + ", ".join(f"{n} {u[0]}/{u[1]} differ" for n, u in untimed.items())
    else:
        names = list(untimed)
        ax1.bar(range(len(names)), [untimed[n][0] for n in names])
        ax2.bar(range(len(names)), [untimed[n][2] / untimed[n][3] if untimed[n][3] else 0 for n in names])
        for ax in (ax1, ax2):
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(names)
        ax2.set_xlabel("output (S/N bar 0: no difference, infinite S/N)")
    ax1.set_ylabel("differing elements")
    ax2.set_ylabel("S/N firmware vs package (dB)")
    ax1.set_title(title, fontsize="medium")
    if timed:
        ax1.legend(fontsize="small")
        if ax2.lines:
            ax2.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# =================================================================== CLI
class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise CaseError(f"{message} (see mli crosscheck --help)")


def _build_parser():
    ap = _Parser(prog="mli crosscheck", description=(
        "Compare a firmware's integer outputs with mli-py's, bit for bit: where the first difference is "
        "(time step, unit), by how much, the S/N, and whether the other DSP rounding mode would match. "
        "Exit 0 bit-exact, 1 mismatch, 2 usage or input error."),
        epilog="File specs: PATH[:KEY][,dtype=int16,shape=128x32,endian=big,offset=N] (idx, npy, npz:KEY, "
               "raw .bin/.raw/.dat, c:NAME with macro=M,frac=F).  See the README.")
    ap.add_argument("case", nargs="?", help="JSON or TOML case file (kernel or layer chain)")
    g = ap.add_argument_group("one kernel without a case file")
    g.add_argument("--kernel", help="e.g. lstm_cell_fx16, fully_connected, relu, eltwise_add_fx8")
    g.add_argument("--kind", choices=KINDS, help="fx8, fx16 (default) or fx8w16d when --kernel has no suffix")
    g.add_argument("--in", "--input", dest="input", metavar="SPEC", help="input file (float: quantized)")
    g.add_argument("--in-frac", dest="input_frac", type=int, metavar="N", help="input frac bits")
    for role in ("weights", "bias", "prev_out", "cell", "in2"):
        flag = "--" + role.replace("_", "-")
        g.add_argument(flag, dest=role, metavar="SPEC",
                       help=f"{role} file" + (" or 'zeros' (default)" if role in ("prev_out", "cell") else ""))
        g.add_argument(flag + "-frac", dest=role + "_frac", type=int, metavar="N", help=f"{role} frac bits")
    g.add_argument("--mode", help="RNN/LSTM mode: one_to_one, batch_to_batch (default), batch_to_last")
    g.add_argument("--act", help="RNN/LSTM output activation: tanh (default), sigm, none")
    g.add_argument("--relu-type", dest="relu", help="relu type: gen (default), relu_1, relu_6, none")
    g.add_argument("--out-frac", dest="out_frac", type=int, metavar="N",
                   help="output frac bits (fully_connected, basic_rnn_cell with act none, eltwise_mul)")
    g.add_argument("--per-step", dest="per_step", choices=("auto", "yes", "no"),
                   help="fully_connected on each row of a [T, N] input (auto: when the row length fits)")
    g.add_argument("--firmware", metavar="SPEC", help="the firmware's output")
    g.add_argument("--firmware-cell", dest="firmware_cell", metavar="SPEC", help="the firmware's LSTM cell after the run")
    g.add_argument("--float-ref", dest="float_ref", metavar="SPEC",
                   help="float reference output (S/N of each side vs float); with --har a folder of ir_*.idx")
    g.add_argument("--time-axis", dest="time_axis", metavar="N", help="time axis of the output (default 0; none)")
    h = ap.add_argument_group("the HAR example")
    h.add_argument("--har", metavar="DIR", help="folder (or .npz) of firmware dumps fc1 relu1 lstm2 lstm3 out")
    h.add_argument("--depth", type=int, default=16, help="MODEL_BIT_DEPTH 16 (default), 816 or 8")
    h.add_argument("--layer3", default="custom", help="custom (default, the example's build) or library")
    h.add_argument("--data", metavar="DIR", help="HAR data folder (default: $MLI_HAR_DATA or ../shared/data/har)")
    o = ap.add_argument_group("run and output")
    o.add_argument("--vectors", action="store_true", default=None,
                   help="data-set run: the input's first axis (or an input folder's files) are vectors")
    o.add_argument("--rounding", choices=ROUNDINGS, help="mode checked first (default convergent)")
    o.add_argument("--no-alt-rounding", dest="alt", action="store_false", help="do not try the other rounding mode")
    o.add_argument("--isolate", action="store_true", default=None,
                   help="feed each layer the firmware's output of the previous layer")
    o.add_argument("--json", action="store_true", help="print the result as JSON")
    o.add_argument("--plot", metavar="FILE.png", help="draw differences and S/N per time step (needs matplotlib)")
    return ap


def _cli_case(args):
    case = {"_cli": True}
    for key in ("kernel", "kind", "input", "input_frac", "weights", "weights_frac", "bias", "bias_frac",
                "prev_out", "prev_out_frac", "cell", "cell_frac", "in2", "in2_frac", "mode", "act", "relu",
                "out_frac", "per_step", "firmware", "firmware_cell", "float_ref"):
        v = getattr(args, key)
        if v is not None:
            case[key] = v
    if args.time_axis is not None:
        ta = args.time_axis.strip().lower()
        if ta == "none":
            case["time_axis"] = None
        else:
            try:
                case["time_axis"] = int(ta)
            except ValueError:
                raise CaseError(f"--time-axis: expected an axis number or none, got {args.time_axis!r}") from None
    return case


_KERNEL_FLAGS = ("kernel", "kind", "weights", "bias", "prev_out", "cell", "in2", "mode", "act", "relu",
                 "out_frac", "per_step", "firmware", "firmware_cell", "weights_frac", "bias_frac",
                 "prev_out_frac", "cell_frac", "in2_frac", "time_axis")


def _print_line(result):
    # line and newline in one write, flushed at once: the lines of the vectors done reach a
    # pipe whole, whenever an interrupt comes
    sys.stdout.write(result.summary_line() + "\n")
    sys.stdout.flush()


def _run(argv):
    args = _build_parser().parse_args(argv)
    # a data set's lines are printed as each vector is done (JSON comes whole at the end); the
    # lines are the progress then, no bar
    stream = None if args.json else _print_line
    show_bar = bool(args.json)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CaseError("--plot: needs matplotlib, which is not installed (pip install matplotlib)") from None
    used = [_CLI_FLAG.get(k, "--" + k) for k in _KERNEL_FLAGS if getattr(args, k) is not None]
    if args.har is not None:
        if args.case:
            raise CaseError("--har: give either a case file or --har, not both")
        if used:
            raise CaseError(f"{used[0]}: does not apply with --har")
        if args.input_frac is not None:
            raise CaseError("--in-frac: does not apply with --har (the depth fixes the input format)")
        res = crosscheck_har(args.har, x=args.input, depth=args.depth, layer3=args.layer3, data_dir=args.data,
                             float_ref=args.float_ref, rounding=args.rounding or "convergent",
                             check_other_rounding=args.alt, vectors=bool(args.vectors), progress=show_bar,
                             on_result=stream)
    elif args.case:
        if used or args.input is not None or args.input_frac is not None or args.float_ref is not None:
            raise CaseError(f"{(used or ['--in'])[0]}: the case file describes the run; drop the kernel flags")
        res = crosscheck(args.case, rounding=args.rounding, check_other_rounding=args.alt, isolate=args.isolate,
                         vectors=args.vectors, progress=show_bar, on_result=stream)
    else:
        if args.kernel is None:
            raise CaseError("give a case file, --kernel with its files, or --har DIR (see mli crosscheck --help)")
        case = _cli_case(args)
        if args.input is not None and os.path.isdir(args.input):
            case["vectors"] = True
        res = crosscheck(case, base_dir=None, rounding=args.rounding, check_other_rounding=args.alt,
                         isolate=args.isolate, vectors=args.vectors, progress=show_bar, on_result=stream)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    elif isinstance(res, DatasetResult):
        print(res.summary())      # the per-vector lines are out already
    else:
        print(res.format())
    if args.plot:
        plot_results(res, args.plot)
        if not args.json:
            print(f"plot written to {args.plot}")
    return 0 if res.bit_exact else 1


def main(argv=None):
    """``mli crosscheck``: returns 0 (bit-exact), 1 (mismatch) or 2 (usage
    or input error, reported on one line of stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except SystemExit as e:  # --help
        return int(e.code or 0) if isinstance(e.code, int) else 0
    except BrokenPipeError:  # the reader of stdout left: not an input error (mli.cli exits quietly)
        raise
    except (CaseError, MliError, ValueError, TypeError, KeyError, OSError) as e:
        print(f"mli crosscheck: error: {_msg(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # an input we did not foresee: still no traceback
        if os.environ.get("MLI_DEBUG"):
            raise
        print(f"mli crosscheck: error: {type(e).__name__}: {e} (set MLI_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

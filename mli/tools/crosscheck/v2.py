"""The MLI 2.0.2 layer runner of ``mli crosscheck`` (``"mli": 2`` cases,
``--mli 2``, or a kernel name only MLI 2.x has).

A 2.x layer names its kernel as :mod:`mli.v2` does (``lstm_cell_fx16``,
``gru_cell_sa8_sa8_sa32``, ``rnn_dense_fx16_fx8_fx8``,
``fully_connected_sa8_sa8_sa32_ext_bias``, ``tanh_sa8``; ``mli_krn_`` prefix
allowed; ``sa8`` stands for ``sa8_sa8_sa32`` in the cells, rnn_dense and
fully_connected), or the base name with ``kind``.  Its tensors:

==================  ==========================================================
kernel              roles
==================  ==========================================================
lstm_cell           input, prev_out, weights_in, weights_out, bias, cell
gru_cell            input, prev_out, weights_in, weights_out, bias
rnn_dense           input, weights (lists of 1..4 specs, in order), bias
fully_connected     input, weights, bias
tanh, sigm          input
==================  ==========================================================

and the output ``out``.  Formats per role: FX ``ROLE_frac`` (signed); SA
``ROLE_zp``, ``ROLE_scale``, ``ROLE_scale_frac`` (numbers for per tensor,
lists with ``ROLE_dim`` for per axis; weights and biases default to zero point
0).  Float files are quantized: FX with the frac given (or the largest that
holds them), SA with the parameters given, or else per tensor / along
``ROLE_dim`` by :meth:`mli.v2.Tensor.from_float` (weights symmetric; an sa32
bias gets scale(input) x scale(weights), what MLI's BIASSCALE check wants).
The output format is an input of these kernels: ``out_frac`` / ``out_zp``,
``out_scale``, ``out_scale_frac`` (tanh and sigm set it themselves).  Cells
take ``direction`` (forward, backward), ``results`` (all, last) and ``act``
(tanh, sigm, none); fully_connected ``relu`` (none, gen, relu_1, relu_6).
``prev_out`` and ``cell`` may be ``"zeros"`` (formats still needed).
"""
import numpy as np

from ... import v2
from ..._status import MliError
from ...metrics import compare
from ...rounding import rounding as rounding_ctx
from .case import CaseError, _msg, _read, _spec
from .results import CrosscheckResult, LayerResult

KINDS2 = ("fx8", "fx16", "fx16_fx8_fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias", "sa8")

#: base kernel -> (kinds, tensor roles besides input)
KERNELS2 = {
    "lstm_cell": (v2.CELL_KINDS, ("prev_out", "weights_in", "weights_out", "bias", "cell")),
    "gru_cell": (v2.CELL_KINDS, ("prev_out", "weights_in", "weights_out", "bias")),
    "rnn_dense": (v2.CELL_KINDS, ("weights", "bias")),
    "fully_connected": (v2.FC_KINDS, ("weights", "bias")),
    "tanh": (v2.ACT_KINDS, ()), "sigm": (v2.ACT_KINDS, ()),
}

#: suffixes only MLI 2.x has (a kernel with one of them is a 2.x kernel without --mli 2)
ONLY_V2_SUFFIXES = ("fx16_fx8_fx8", "sa8_sa8_sa32_ext_bias", "sa8_sa8_sa32", "sa8")
ONLY_V2_BASES = ("gru_cell", "rnn_dense")

_ROLE_KEYS = ("", "_frac", "_zp", "_scale", "_scale_frac", "_dim")
_OTHER_KEYS = {"name", "kernel", "kind", "direction", "results", "act", "relu", "firmware", "firmware_cell",
               "float_ref", "time_axis", "mli", "out_frac", "out_zp", "out_scale", "out_scale_frac"}
_ALL_ROLES = ("input", "prev_out", "weights_in", "weights_out", "weights", "bias", "cell")
LAYER_KEYS2 = _OTHER_KEYS | {r + k for r in _ALL_ROLES for k in _ROLE_KEYS}
CASE_KEYS2 = {"mli", "kind", "rounding", "layers", "input", "input_frac", "input_zp", "input_scale",
              "input_scale_frac", "input_dim", "description", "comment", "isolate", "vectors"}


def is_v2_kernel(name):
    """True when a kernel name is MLI 2.x's only (gru_cell, rnn_dense, a 2.x-only suffix)."""
    if not isinstance(name, str):
        return False
    n = name.strip().lower()
    n = n[8:] if n.startswith("mli_krn_") else n
    return n.startswith(ONLY_V2_BASES) or any(n.endswith("_" + s) for s in ONLY_V2_SUFFIXES)


def wants_v2(case):
    """Whether a case dict is for MLI 2.x: ``mli`` 2, or a 2.x-only kernel name."""
    if not isinstance(case, dict):
        return False
    if "mli" in case:
        return str(case["mli"]).strip() in ("2", "2.0", "2.0.2", "mli2")
    layers = case.get("layers") if isinstance(case.get("layers"), list) else [case]
    return any(isinstance(ld, dict) and (is_v2_kernel(ld.get("kernel")) or
                                         str(ld.get("mli", "")).strip() == "2") for ld in layers)


def _parse_kernel(name, kind, where):
    if not isinstance(name, str) or not name.strip():
        raise CaseError(f"{where}: a kernel name is required (one of {', '.join(KERNELS2)})")
    base = name.strip().lower()
    base = base[8:] if base.startswith("mli_krn_") else base
    sfx = None
    for k in sorted(KINDS2, key=len, reverse=True):
        if base.endswith("_" + k):
            base, sfx = base[:-len(k) - 1], k
            break
    if base not in KERNELS2:
        raise CaseError(f"{where}: unknown MLI 2.x kernel {name!r} (use one of {', '.join(KERNELS2)} with a "
                        f"kind suffix: {', '.join(KINDS2)})")
    if kind is not None and kind not in KINDS2:
        raise CaseError(f"{where}: unknown MLI 2.x kind {kind!r} (use one of {', '.join(KINDS2)})")
    k = sfx or kind or "fx16"
    if sfx and kind and sfx != kind:
        raise CaseError(f"{where}: kind {kind} contradicts kernel {name}")
    if k == "sa8" and base != "tanh" and base != "sigm":
        k = "sa8_sa8_sa32"
    if k == "sa8_sa8_sa32" and base in ("tanh", "sigm"):
        k = "sa8"
    kinds = KERNELS2[base][0]
    if k not in kinds:
        raise CaseError(f"{where}: {base} has no {k} variant in MLI 2.x ({', '.join(kinds)})")
    return base, k


def _types(base, kind):
    """(data el_type, weight el_type, bias el_type) names of a 2.x kernel kind."""
    if kind.startswith("sa8"):
        return "sa8", "sa8", "sa32"
    if kind == "fx8":
        return "fx8", "fx8", "fx8"
    if kind == "fx16_fx8_fx8":
        return "fx16", "fx8", "fx8"
    return "fx16", "fx16", "fx16"


class _Layer2:
    def __init__(self, name, base, kind, cfg, label):
        self.name, self.kernel, self.kind, self.cfg, self.label = name, base, kind, cfg, label
        self.full_kernel = f"{base}_{kind}"

    def where(self, key):
        if self.label == "--":
            return "--" + key.replace("_", "-")
        return f"{self.label}.{key}"


def _per_axis_dim_ok(lay, role, key, dim):
    """The per-axis dimension MLI 2.0.2 accepts for a weight or bias (its
    checks refuse any other with INCOMPATEBLE_TENSORS): a cell's weights and
    bias per gate (dim 0); fully_connected's weights per output (dim 1) and
    its bias along dim 0."""
    if dim < 0 or not (role.startswith("weights") or role == "bias"):
        return
    cell = lay.kernel in ("lstm_cell", "gru_cell")
    want = 0 if cell or role == "bias" else 1 if lay.kernel == "fully_connected" else None
    if want is None or dim == want:
        return
    where = f"--sa-dim {key}={dim}" if lay.label == "--" else f"{lay.where(key + '_dim')} = {dim}"
    if cell:
        what = f"the {lay.kernel.split('_')[0].upper()}'s weights are quantized per gate (dim 0)"
        if role == "bias":
            what = f"the {lay.kernel.split('_')[0].upper()}'s bias is quantized per gate (dim 0)"
    elif role == "bias":
        what = "fully_connected's bias is quantized along dim 0"
    else:
        what = "fully_connected's weights are quantized per output (dim 1)"
    raise CaseError(f"{where}: {what}; MLI 2.0.2 refuses any other dimension")


def _int(v, where, lo=-2 ** 31, hi=2 ** 31 - 1):
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        raise CaseError(f"{where}: expected an integer {lo}..{hi}, got {v!r}")
    return int(v)


def _ints(v, where, lo, hi):
    if isinstance(v, (list, tuple)):
        if not v:
            raise CaseError(f"{where}: an empty list")
        return [_int(x, where, lo, hi) for x in v]
    return _int(v, where, lo, hi)


class _Runner:
    """A normalised 2.x case: its layers with their static tensors built."""

    def __init__(self, case, base_dir, label, require_firmware=True):
        self.base_dir = base_dir
        cli = label == "--"
        if "layers" in case:
            bad = set(case) - CASE_KEYS2
            if bad:
                raise CaseError(f"{label}: unknown key(s) {', '.join(sorted(bad))} (layer keys go in 'layers')")
            raw = case["layers"]
            if not isinstance(raw, list) or not raw:
                raise CaseError(f"{label}.layers: expected a non-empty list of layers")
        else:
            bad = set(case) - CASE_KEYS2 - LAYER_KEYS2
            if bad:
                raise CaseError(f"{label}: unknown key(s) {', '.join(sorted(bad))} for an MLI 2.x case")
            raw = [{k: v for k, v in case.items() if k in LAYER_KEYS2 and k != "mli"}]
        if case.get("vectors"):
            raise CaseError(f"{'--vectors' if cli else label + '.vectors'}: data-set runs are MLI 1.1 only; "
                            "run one 2.x case per vector")
        self.rounding = case.get("rounding", "convergent")
        self.isolate = bool(case.get("isolate", False))
        self.top = {k: v for k, v in case.items() if k.startswith("input")}
        self.layers, names = [], set()
        for i, ld in enumerate(raw):
            if not isinstance(ld, dict):
                raise CaseError(f"{label}.layers[{i}]: expected an object/table")
            bad = set(ld) - LAYER_KEYS2
            if bad:
                raise CaseError(f"{label}.layers[{i}]: unknown key(s) {', '.join(sorted(bad))}")
            ll = "--" if cli else (f"{label}.layers[{i}]" if "layers" in case else label)
            base, kind = _parse_kernel(ld.get("kernel"), ld.get("kind", case.get("kind")),
                                       "--kernel" if cli else f"{ll}.kernel")
            name = ld.get("name") or (base if len(raw) == 1 else f"{base}{i}")
            if not isinstance(name, str) or name in names:
                raise CaseError(f"{ll}.name: {name!r} is not a unique layer name")
            names.add(name)
            cfg = dict(ld)
            if i == 0:
                for k, v in self.top.items():
                    cfg.setdefault(k, v)
            self.layers.append(_Layer2(name, base, kind, cfg, ll))
        if require_firmware and not any("firmware" in lay.cfg or "firmware_cell" in lay.cfg for lay in self.layers):
            raise CaseError(f"{'--firmware' if cli else 'firmware'}: no layer names a firmware output to compare")
        self.static = {lay.name: self._statics(lay) for lay in self.layers}

    # ----------------------------------------------------------------- tensors
    def _load(self, lay, role, spec, dtype):
        where = lay.where(role)
        sp = _spec(spec, where, self.base_dir)
        try:
            if sp.resolved_format() in ("raw", "c") and sp.dtype is None:
                from dataclasses import replace
                sp = replace(sp, dtype=np.dtype(dtype).name)
        except ValueError as e:
            raise CaseError(f"{where}: {_msg(e)}") from None
        return _read(sp, where)

    def tensor(self, lay, role, arr, el, *, key=None, ref=None):
        """A v2.Tensor of `arr` in el_type `el` with the formats the layer gives for `role`."""
        c, key = lay.cfg, key or role
        where = lay.where(key)
        is_w = role.startswith("weights") or role == "bias"
        if el in ("fx8", "fx16"):
            fr = c.get(key + "_frac")
            fr = None if fr is None else _int(fr, lay.where(key + "_frac"), -128, 127)
            if arr.dtype.kind == "f":
                if not np.all(np.isfinite(arr)):
                    raise CaseError(f"{where}: contains NaN or infinity")
                try:
                    return v2.Tensor.from_float(arr, el, fr)
                except ValueError as e:
                    raise CaseError(f"{where}: {e}") from None
            if fr is None:
                raise CaseError(f"{lay.where(key + '_frac')}: integer {el} data needs its frac bits")
            return v2.Tensor.fx(self._ints_of(arr, el, where), fr, el)
        zp, sc, sf, dim = (c.get(key + s) for s in ("_zp", "_scale", "_scale_frac", "_dim"))
        dim = -1 if dim is None else _int(dim, lay.where(key + "_dim"), -1, 3)
        _per_axis_dim_ok(lay, role, key, dim)
        if sc is None and arr.dtype.kind == "f":
            if role == "bias" and ref is not None:
                return self._sa_bias(arr, ref, dim, where)
            if not np.all(np.isfinite(arr)):
                raise CaseError(f"{where}: contains NaN or infinity")
            try:
                return v2.Tensor.from_float(arr, el, dim=dim, symmetric=is_w)
            except ValueError as e:
                raise CaseError(f"{where}: {e}") from None
        if sc is None or sf is None or (zp is None and not is_w):
            raise CaseError(f"{lay.where(key + '_scale')}: {el} {key} needs {key}_scale, {key}_scale_frac"
                            + ("" if is_w else f" and {key}_zp"))
        zp = 0 if zp is None else zp
        zp, sc, sf = (_ints(zp, lay.where(key + "_zp"), -32768, 32767),
                      _ints(sc, lay.where(key + "_scale"), -32768, 32767),
                      _ints(sf, lay.where(key + "_scale_frac"), -128, 127))
        if (dim >= 0) != isinstance(sc, list):
            raise CaseError(f"{lay.where(key + '_dim')}: per-axis parameters are lists with {key}_dim >= 0; "
                            "per tensor numbers")
        if dim >= 0:
            n = len(sc)
            zp = zp if isinstance(zp, list) else [zp] * n
            sf = sf if isinstance(sf, list) else [sf] * n
            if not len(zp) == len(sf) == n:
                raise CaseError(f"{lay.where(key + '_scale')}: {key}_zp, _scale and _scale_frac differ in length")
        if arr.dtype.kind == "f":
            if dim >= 0:
                raise CaseError(f"{where}: float data with given per-axis parameters: give integers")
            step = sc * 2.0 ** -sf
            if step <= 0:
                raise CaseError(f"{lay.where(key + '_scale')}: must be positive to quantize floats")
            info = np.iinfo(v2.tensor.DTYPES[v2.tensor.EL_TYPES[el]])
            arr = np.clip(np.round(arr / step) + zp, info.min, info.max)
        return v2.Tensor.sa(self._ints_of(arr, el, where), zp, sc, sf, dim, el)

    @staticmethod
    def _ints_of(arr, el, where):
        dt = v2.tensor.DTYPES[v2.tensor.EL_TYPES[el]]
        if arr.dtype.kind not in "iubf":
            raise CaseError(f"{where}: dtype {arr.dtype} is not numeric")
        if arr.dtype.kind == "f" and not np.array_equal(arr, np.round(arr)):
            raise CaseError(f"{where}: float values that are not whole numbers")
        if arr.size:
            info = np.iinfo(dt)
            if arr.min() < info.min or arr.max() > info.max:
                raise CaseError(f"{where}: values {arr.min()}..{arr.max()} do not fit {np.dtype(dt).name}")
        return arr.astype(dt)

    def _sa_bias(self, arr, ref, dim, where):
        from ...v2._sa import _sa_bias
        x, w = ref
        if w.sa_dim >= 0 and dim < 0:
            dim = 0
        try:
            return _sa_bias(np.asarray(arr, np.float64), (0, int(x.scale[0]), int(x.scale_frac_bits[0])), w,
                            per_axis=w.sa_dim >= 0)
        except (ValueError, OverflowError, IndexError) as e:
            raise CaseError(f"{where}: {e}") from None

    def _statics(self, lay):
        d_el, w_el, b_el = _types(lay.kernel, lay.kind)
        c, st = lay.cfg, {}
        roles = KERNELS2[lay.kernel][1]
        for role in roles:
            if role == "bias":
                continue
            val = c.get(role)
            el = d_el if role in ("prev_out", "cell") else w_el
            if role in ("prev_out", "cell") and (val is None or val == "zeros"):
                m = self._state_size(lay)
                st[role] = self.tensor(lay, role, np.zeros(m, v2.tensor.DTYPES[v2.tensor.EL_TYPES[el]]), el)
                continue
            if val is None:
                raise CaseError(f"{lay.where(role)}: required by {lay.full_kernel}")
            if lay.kernel == "rnn_dense":
                specs = val if isinstance(val, list) else [val]
                if not 1 <= len(specs) <= 4:
                    raise CaseError(f"{lay.where(role)}: rnn_dense takes 1 to 4 weight tensors")
                st[role] = [self.tensor(lay, role, self._load(lay, role, s, np.int8), el) for s in specs]
            else:
                st[role] = self.tensor(lay, role, self._load(lay, role, val, np.int8 if el == "sa8" else
                                                               np.int16 if el == "fx16" else np.int8), el)
        if "bias" in roles:
            if c.get("bias") is None:
                raise CaseError(f"{lay.where('bias')}: required by {lay.full_kernel}")
            w = st.get("weights_in", st.get("weights"))
            w = w[0] if isinstance(w, list) else w
            arr = self._load(lay, "bias", c["bias"], np.int32 if b_el == "sa32" else np.int16)
            st["bias"] = ("pending", arr, w) if b_el == "sa32" else self.tensor(lay, "bias", arr, b_el)
        st["out"] = self._out_params(lay, d_el)
        return st

    def _state_size(self, lay):
        c = lay.cfg
        for role in ("bias",):
            if c.get(role) is not None:
                a = self._load(lay, role, c[role], np.int32)
                return int(a.shape[-1]) if a.ndim else 1
        raise CaseError(f"{lay.where('prev_out')}: 'zeros' needs the bias to know M")

    def _out_params(self, lay, d_el):
        c = lay.cfg
        if lay.kernel in ("tanh", "sigm"):
            return None
        if d_el in ("fx8", "fx16"):
            if c.get("out_frac") is None:
                raise CaseError(f"{lay.where('out_frac')}: {lay.full_kernel} takes the output format as an input")
            return ("fx", _int(c["out_frac"], lay.where("out_frac"), -128, 127))
        if c.get("out_scale") is None or c.get("out_scale_frac") is None:
            raise CaseError(f"{lay.where('out_scale')}: {lay.full_kernel} needs out_zp, out_scale and "
                            "out_scale_frac (its output format is an input)")
        return ("sa", _int(c.get("out_zp", 0), lay.where("out_zp"), -32768, 32767),
                _int(c["out_scale"], lay.where("out_scale"), -32768, 32767),
                _int(c["out_scale_frac"], lay.where("out_scale_frac"), -128, 127))

    # ----------------------------------------------------------------- running
    def _input(self, lay, arr):
        d_el = _types(lay.kernel, lay.kind)[0]
        return self.tensor(lay, "input", arr, d_el)

    def _run_layer(self, lay, x, rounding):
        st = self.static[lay.name]
        c = lay.cfg
        fn = getattr(v2, lay.full_kernel)
        d_el = _types(lay.kernel, lay.kind)[0]
        xs = x if isinstance(x, list) else [x]
        bias = st.get("bias")
        if isinstance(bias, tuple):          # an sa32 bias from floats: scale(input) x scale(weights)
            bias = self.tensor(lay, "bias", bias[1], "sa32", ref=(xs[0], bias[2]))
        if lay.kernel in ("tanh", "sigm"):
            return fn(xs[0]), None
        o = st["out"]
        if lay.kernel in ("lstm_cell", "gru_cell"):
            T = xs[0].shape[0]
            m = st["prev_out"].shape[0]
            results = _choice(c.get("results", "all"), {"all": 1, "last": 0}, lay.where("results"))
            rows = T if results == 1 else 1
        else:
            m = int(st["weights"][0].shape[1]) if isinstance(st["weights"], list) else int(st["weights"].shape[1])
            rows = None
        shape = (rows, m) if rows is not None else (m,)
        out = v2.Tensor.zeros(shape, d_el, o[1] if o[0] == "fx" else 0)
        if o[0] == "sa":
            out.set_sa(*o[1:])
        if lay.kernel == "fully_connected":
            relu = _choice(c.get("relu", "none"), {"none": 0, "gen": 1, "relu_1": 2, "relu_6": 3,
                                                   "relu_none": 0, "relu_gen": 1}, lay.where("relu"))
            return fn(xs[0], st["weights"], bias, v2.FullyConnectedCfg(relu), out), None
        if lay.kernel == "rnn_dense":
            ws = st["weights"]
            return fn(xs, ws, bias, v2.RnnDenseCfg(len(xs)), out), None
        cfg = v2.RnnCellCfg(_choice(c.get("direction", "forward"), {"forward": 0, "backward": 1},
                                    lay.where("direction")),
                            results, _choice(c.get("act", "tanh"), {"none": 0, "tanh": 1, "sigm": 2},
                                             lay.where("act")))
        if lay.kernel == "lstm_cell":
            cell = _copy(st["cell"])
            fn(xs[0], st["prev_out"], st["weights_in"], st["weights_out"], bias, None, None, cfg, cell, out)
            return out, cell
        fn(xs[0], st["prev_out"], st["weights_in"], st["weights_out"], bias, None, None, cfg, out)
        return out, None

    def inputs(self):
        """{layer: [input arrays]} of the layers fed from files."""
        res = {}
        for i, lay in enumerate(self.layers):
            v = lay.cfg.get("input")
            if v is None and i > 0:
                continue
            if isinstance(v, str) and v.startswith("@"):
                continue
            if v is None:
                raise CaseError(f"{'--in' if lay.label == '--' else 'input'}: the first layer needs an input file")
            specs = v if isinstance(v, list) else [v]
            if len(specs) > 1 and lay.kernel != "rnn_dense":
                raise CaseError(f"{lay.where('input')}: only rnn_dense takes a list of inputs")
            res[lay.name] = [self._load(lay, "input", s, np.int8 if "8" in lay.kind.split("_")[0] else np.int16)
                             for s in specs]
        return res

    def run(self, inputs, rounding, feed=None):
        outs = {}
        with rounding_ctx(rounding):
            for i, lay in enumerate(self.layers):
                if lay.name in inputs:
                    x = [self._input(lay, a) for a in inputs[lay.name]]
                    x = x if lay.kernel == "rnn_dense" else x[0]
                else:
                    v = lay.cfg.get("input")
                    src = v[1:] if isinstance(v, str) else self.layers[i - 1].name
                    if src not in outs:
                        raise CaseError(f"{lay.where('input')}: {v!r} names no earlier layer")
                    x = outs[src][0]
                    if feed is not None and src in feed:
                        x = _with_values(x, feed[src])
                try:
                    outs[lay.name] = self._run_layer(lay, x, rounding)
                except MliError as e:
                    raise CaseError(f"layer {lay.name} ({lay.full_kernel}): {e}") from None
                except v2.BridgeError as e:
                    raise CaseError(f"layer {lay.name} ({lay.full_kernel}): {e}") from None
        return outs


def _choice(v, options, where):
    key = str(v).strip().lower()
    for p in ("rnn_dir_", "rnn_out_", "rnn_act_", "mli_"):
        key = key[len(p):] if key.startswith(p) else key
    if key not in options:
        raise CaseError(f"{where}: expected one of {', '.join(options)}, got {v!r}")
    return options[key]


def _copy(t):
    n = v2.Tensor(t.buffer.copy(), t.el_type, t.shape[:t.rank], t.mem_stride[:t.rank], t.rank,
                  frac_bits=t.frac_bits)
    if t.is_sa:
        n.set_sa(t.zero_point, t.scale, t.scale_frac_bits, t.sa_dim)
    return n


def _with_values(t, arr):
    """t's format holding the firmware's values (isolation)."""
    n = _copy(t)
    vals = np.asarray(arr).reshape(-1)
    if vals.size != int(np.prod(t.shape[:t.rank])):
        raise CaseError(f"firmware dump of {vals.size} values does not match the layer output {t.shape[:t.rank]}")
    n.buffer[:vals.size] = vals.astype(n.buffer.dtype)
    return n


def crosscheck2(case, base_dir, label, *, rounding=None, check_other_rounding=True, isolate=None):
    """Cross-check an MLI 2.x case (dict); returns a :class:`CrosscheckResult`."""
    r = _Runner(case, base_dir, label)
    mode = rounding or r.rounding
    if mode not in ("convergent", "up"):
        raise CaseError(f"{'--rounding' if label == '--' else label + '.rounding'}: expected convergent or up, "
                        f"got {mode!r}")
    iso = r.isolate if isolate is None else bool(isolate)
    alt_mode = ("up" if mode == "convergent" else "convergent") if check_other_rounding else None
    inputs = r.inputs()
    fw = {}
    for lay in r.layers:
        for role in ("firmware", "firmware_cell", "float_ref"):
            if lay.cfg.get(role) is not None:
                if role == "firmware_cell" and lay.kernel != "lstm_cell":
                    raise CaseError(f"{lay.where(role)}: only lstm_cell has a cell output")
                fw[(lay.name, role)] = r._load(lay, role, lay.cfg[role], np.int16)
    feed = {k[0]: v for k, v in fw.items() if k[1] == "firmware"} if iso else None
    outs = r.run(inputs, mode, feed)
    alt = r.run(inputs, alt_mode, feed) if alt_mode else None
    results = []
    for lay in r.layers:
        ta = lay.cfg.get("time_axis", 0)
        ta = None if ta in ("none", "None", None) else _int(ta, lay.where("time_axis"), -4, 3)
        if lay.kernel not in ("lstm_cell", "gru_cell") and "time_axis" not in lay.cfg:
            ta = None
        for role, idx, sfx in (("firmware", 0, ""), ("firmware_cell", 1, ".cell")):
            if (lay.name, role) not in fw:
                continue
            pkg = outs[lay.name][idx]
            fx = not pkg.is_sa
            fref = fw.get((lay.name, "float_ref")) if role == "firmware" else None
            if fref is not None and not fx:
                raise CaseError(f"{lay.where('float_ref')}: the S/N against a float reference needs an FX output")
            try:
                rep = compare(fw[(lay.name, role)], pkg.numpy(), time_axis=ta, float_ref=fref,
                              frac_bits=pkg.frac_bits if fx else None)
                arep = compare(fw[(lay.name, role)], alt[lay.name][idx].numpy(), time_axis=ta,
                               frac_bits=pkg.frac_bits if fx else None) if alt else None
            except (ValueError, TypeError) as e:
                m = str(e)
                raise CaseError(f"{lay.where(role)}: {m[len('firmware: '):] if m.startswith('firmware: ') else m}") \
                    from None
            results.append(LayerResult(lay.name + sfx, "mli2 " + lay.full_kernel, rep, arep, alt_mode))
    res = CrosscheckResult(results, mode, alt_mode, "", iso)
    res.notes.append("MLI 2.0.2 kernels (mli.v2)")
    return res


def run_case2(case, base_dir, label, rounding="convergent"):
    """The package's outputs of a 2.x case: {layer: mli.v2.Tensor} (and ``LAYER.cell``)."""
    r = _Runner(case, base_dir, label, require_firmware=False)
    res = {}
    for name, (o, cell) in r.run(r.inputs(), rounding).items():
        res[name] = o
        if cell is not None:
            res[name + ".cell"] = cell
    return res

"""Running a normalised case: tensors built once per case, the layer chain
run per vector in one rounding mode and the other, each output compared
with the firmware's."""
import functools
import math
import os
import sys
from dataclasses import replace

import numpy as np

from ... import kernels as K
from ... import rows as rows_api
from ..._status import MliError
from ...enums import ReluType, RnnActivation, RnnMode
from ...io.npz import npz_frac_bits
from ...metrics import compare
from ...rounding import rounding as rounding_ctx
from ...tensor import Tensor
from ..jobs import check_abandoned, process_map, row_chunks, use_processes
from .case import (
    CFG_KEYS,
    _CLI_FLAG,
    _DATA_ROLES,
    _LAYER_KEYS,
    KERNELS,
    CaseError,
    _data_dtype,
    _enum,
    _fmt,
    _frac,
    _normalize,
    _read,
    _read_many,
    _spec,
    _to_container,
    _weight_dtype,
    load_case,
)
from .results import CrosscheckResult, DatasetResult, LayerResult


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
            if lay.kernel in CFG_KEYS:
                p["cfg"] = _kernel_cfg(lay, c)
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


def _u8(lay, c, key, default, lo=0):
    v = c.get(key, default)
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= 255:
        raise CaseError(f"{lay.where(key)}: expected an integer in {lo}..255 (a uint8_t of MLI's cfg), got {v!r}")
    return int(v)


def _geometry(lay, c, kernel_size=False):
    """The stride, padding (and pool kernel) fields of a cfg: ``stride`` and
    ``padding`` set both / all four, a field named on its own overrides them."""
    g = {}
    for f in ("stride_width", "stride_height"):
        g[f] = _u8(lay, c, f, _u8(lay, c, "stride", 1, 1), 1)
    for f in ("padding_left", "padding_right", "padding_top", "padding_bottom"):
        g[f] = _u8(lay, c, f, _u8(lay, c, "padding", 0))
    if kernel_size:
        for f in ("kernel_width", "kernel_height"):
            if c.get(f) is None:
                raise CaseError(f"{lay.where(f)}: required by {lay.full_kernel}")
            g[f] = _u8(lay, c, f, None, 1)
    return g


def _kernel_cfg(lay, c):
    """The MLI configuration of a convolution, pooling, leaky ReLU or permute layer."""
    if lay.kernel in ("conv2d_chw", "depthwise_conv2d_chw"):
        relu = _enum(c.get("relu", "none"), ReluType, lay.where("relu"), ("MLI_RELU_", "MLI_"))
        return K.Conv2dConfig(relu=relu, **_geometry(lay, c))
    if lay.kernel in ("avepool_chw", "maxpool_chw"):
        return K.PoolConfig(**_geometry(lay, c, kernel_size=True))
    if lay.kernel == "permute":
        perm = c.get("perm_dim")
        if isinstance(perm, str):
            perm = perm.replace("x", ",").replace("-", ",").split(",")
        try:
            perm = tuple(int(v) for v in perm)
        except (TypeError, ValueError):
            raise CaseError(f"{lay.where('perm_dim')}: expected a permutation such as 1,2,0, got {perm!r}") from None
        if not 1 <= len(perm) <= 4 or sorted(perm) != list(range(len(perm))):
            raise CaseError(f"{lay.where('perm_dim')}: expected a permutation of 0..rank-1, got {list(perm)}")
        return K.PermuteConfig(perm_dim=perm + (0,) * (4 - len(perm)))
    # leaky_relu: the slope, a rank-0 tensor in the data's container
    dt = _data_dtype(lay.kind)
    if c.get("slope") is None:
        raise CaseError(f"{lay.where('slope')}: required by {lay.full_kernel} (the slope's integer value)")
    fr = _frac(c.get("slope_frac"), lay.where("slope_frac"))
    v = c["slope"]
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)
    info = np.iinfo(dt)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not info.min <= int(v) <= info.max:
        raise CaseError(f"{lay.where('slope')}: expected an integer of {dt.name}, got {v!r}")
    return Tensor(np.asarray(int(v), dt), fr)


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
    if lay.kernel in ("tanh", "sigm", "softmax"):
        return fn(x), None
    if lay.kernel in ("conv2d_chw", "depthwise_conv2d_chw"):
        if p["out_frac"] is not None:
            kw["out_frac_bits"] = p["out_frac"]
        return fn(x, tensors["weights"], tensors["bias"], p["cfg"], **kw), None
    if lay.kernel in CFG_KEYS:          # pooling, permute (cfg) and leaky ReLU (slope)
        return fn(x, p["cfg"]), None
    if lay.kernel == "eltwise_mul" and p["out_frac"] is not None:
        kw["out_frac_bits"] = p["out_frac"]
    return fn(x, tensors["in2"], **kw), None


def _input_tensor(lay, p, arr):
    dt = _data_dtype(lay.kind)
    fr = _frac(p["input_frac"], lay.where("input_frac"))
    return Tensor(_to_container(arr, dt, fr, lay.where("input"), "input"), fr)


def _layer_input(prep, lay, p, data, outs, feed):
    """The input Tensor of `lay` for one vector: an earlier layer's output (or,
    isolated, the firmware's dump of it) or the vector's data."""
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
        return x
    return _input_tensor(lay, p, data[(lay.name, "input")])


def _run_chain(prep, data, mode, feed=None):
    """{layer: (out, cell)} of one vector in rounding `mode`; `feed`
    ({layer: firmware output}) makes later layers start from the
    firmware's outputs instead of the package's (isolation)."""
    outs = {}
    with rounding_ctx(mode):
        for lay in prep.layers:
            p = prep.params[lay.name]
            x = _layer_input(prep, lay, p, data, outs, feed)
            tensors = {role: prep.static[(lay.name, role)] for role in KERNELS[lay.kernel]}
            try:
                outs[lay.name] = _run_layer(lay, p, x, tensors)
            except MliError as e:
                role = {"in": "input", "in1": "input", "out": "out_frac"}.get(e.argument, e.argument)
                where = lay.where(role) if role in _LAYER_KEYS else f"layer {lay.name}"
                raise CaseError(f"{where}: {e}") from None
    return outs


def _rows_fit(lay, p, x, tensors):
    """Whether the vectors of input `x`'s shape can run `lay` as batched rows
    with the per-vector call's meaning: a recurrent cell whose state (and cell)
    is one vector shared by every row, its input of the mode's rank."""
    if lay.kernel not in ("basic_rnn_cell", "lstm_cell"):
        return False
    if any(tensors[r].rank != 1 for r in ("prev_out", "cell") if r in tensors):
        return False
    if p["mode"] == RnnMode.ONE_TO_ONE:
        return x.rank == 1
    return p["mode"] in (RnnMode.BATCH_TO_BATCH, RnnMode.BATCH_TO_LAST) and 2 <= x.rank <= 3


def _rows_layer(lay, p, xs, tensors):
    """``[_run_layer(lay, p, x, tensors) for x in xs]`` (inputs of one shape,
    dtype and frac bits) as ONE batched-rows call (mli.rows, bit-identical)."""
    X = Tensor(np.stack([x.numpy() for x in xs]), xs[0].frac_bits)
    fn = getattr(rows_api, lay.full_kernel.replace("_cell_", "_cell_rows_"))
    cfg = K.RnnCellConfig(mode=p["mode"], act=p["act"])
    w, b, h = tensors["weights"], tensors["bias"], tensors["prev_out"]
    b2b = p["mode"] == RnnMode.BATCH_TO_BATCH
    if lay.kernel == "lstm_cell":
        out, cell = fn(X, h, w, b, cfg, tensors["cell"])
        shape, cs = out.shape[1:], cell.shape[1:]
    else:
        kw = {"out_frac_bits": p["out_frac"]} if p["out_frac"] is not None else {}
        out, cell = fn(X, h, w, b, cfg, **kw), None
        shape = out.shape[1:] if b2b else b.shape      # a stacked bias: the per-vector call's shape
    if out.shape[0] != len(xs):
        raise ValueError("rows: unexpected output shape")
    o = out.numpy()
    c = cell.numpy() if cell is not None else None
    return [(Tensor(o[r].reshape(shape), out.frac_bits),
             Tensor(c[r].reshape(cs), cell.frac_bits) if c is not None else None) for r in range(len(xs))]


def _run_chain_rows(prep, datas, mode, feeds):
    """``[_run_chain(prep, data, mode, feed) for data, feed in zip(datas, feeds)]``
    with each recurrent layer run for the vectors whose inputs share shape and
    format as ONE batched-rows call (bit-identical; the weights are shared).
    Raises whatever a vector raises (the caller then runs the vectors one at a
    time, which fails where and as the vector always did)."""
    outs = [{} for _ in datas]
    with rounding_ctx(mode):
        for lay in prep.layers:
            check_abandoned()       # a run left (Ctrl-C) stops here, not after its last layer
            p = prep.params[lay.name]
            tensors = {role: prep.static[(lay.name, role)] for role in KERNELS[lay.kernel]}
            xs = [_layer_input(prep, lay, p, data, o, feed) for data, o, feed in zip(datas, outs, feeds)]
            groups = {}
            for v, x in enumerate(xs):
                groups.setdefault((x.shape, x.dtype.str, x.frac_bits), []).append(v)
            for idx in groups.values():
                if len(idx) > 1 and _rows_fit(lay, p, xs[idx[0]], tensors):
                    res = _rows_layer(lay, p, [xs[v] for v in idx], tensors)
                else:
                    res = [_run_layer(lay, p, xs[v], tensors) for v in idx]
                for v, r in zip(idx, res):
                    outs[v][lay.name] = r
    return outs


def run_case(case, *, base_dir=None, rounding="convergent"):
    """The package's outputs of a case (dict or case-file path) for its
    first vector: ``{layer: Tensor}`` (and ``"LAYER.cell"`` for LSTM cells).
    Handy to produce expected dumps."""
    from .model_case import is_model_case
    if is_model_case(case if isinstance(case, dict) else load_case(case)):
        raise CaseError("run_case: a model case's goldens come from WholeModel.run(trace=True)")
    v2 = _v2_case(case, base_dir)
    if v2 is not None:
        from .v2 import run_case2
        return run_case2(v2[0], v2[1], v2[2], rounding)
    prep = _prepare(case, base_dir, require_firmware=False)
    label, data = prep.vector_data(inputs_only=True)[0]
    outs = _run_chain(prep, data, rounding)
    res = {}
    for name, (o, c) in outs.items():
        res[name] = o
        if c is not None:
            res[name + ".cell"] = c
    return res


def _v2_case(case, base_dir):
    """(case dict, base dir, label) when the case is for MLI 2.x (see .v2), else None."""
    from .v2 import wants_v2
    if isinstance(case, (str, os.PathLike)):
        path = os.fspath(case)
        d = load_case(path)
        if not wants_v2(d):
            return None
        return d, (os.path.dirname(os.path.abspath(path)) if base_dir is None else base_dir), os.path.basename(path)
    if not wants_v2(case):
        return None
    label = "--" if case.get("_cli") else "case"
    return {k: v for k, v in case.items() if k != "_cli"}, base_dir, label


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
               progress=False, on_result=None, jobs=1):
    """Cross-check the firmware outputs a case names.

    Parameters
    ----------
    case : dict or path
        A case (see the module docstring) or a JSON/TOML case file; an
        MLI 2.x case (``"mli": 2`` or a 2.x-only kernel) runs on :mod:`mli.v2`
        (see :mod:`mli.tools.crosscheck.v2`).
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
    jobs : int
        Data-set run: the vectors go in runs of up to 64 (each run's
        recurrent layers as batched rows, :mod:`mli.rows`), at least `jobs`
        runs, `jobs` of them checked at once in worker processes
        (:func:`mli.tools.jobs.process_map`: each worker prepares the case
        and reads the vectors once; one process when the data set is too
        small to pay for them); the results and their order are those of
        ``jobs=1`` (and of one vector at a time).

    Returns
    -------
    CrosscheckResult, or DatasetResult for a data-set run.

    Raises
    ------
    CaseError (a ValueError)
        Bad case, option, file or kernel configuration; the message names
        the argument.
    """
    from .model_case import crosscheck_model, is_model_case
    if not isinstance(case, dict):
        loaded = load_case(case)
        if is_model_case(loaded) and (isolate or vectors):
            raise CaseError("--isolate / --vectors: do not apply to a model case")
        if is_model_case(loaded):
            return crosscheck_model(loaded, base_dir if base_dir is not None
                                    else os.path.dirname(os.path.abspath(os.fspath(case))),
                                    rounding=rounding, check_other_rounding=check_other_rounding)
    elif is_model_case(case):
        return crosscheck_model(case, base_dir, rounding=rounding,
                                check_other_rounding=check_other_rounding)
    v2 = _v2_case(case, base_dir)
    if v2 is not None:
        from .v2 import crosscheck2
        d = dict(v2[0])
        if vectors:
            d["vectors"] = True
        return crosscheck2(d, v2[1], v2[2], rounding=rounding, check_other_rounding=check_other_rounding,
                           isolate=isolate)
    prep = _prepare(case, base_dir, rounding=rounding, isolate=isolate, vectors=vectors)
    mode = prep.opts["rounding"]
    alt_mode = _other(mode) if check_other_rounding else None
    data_list = prep.vector_data()
    vec = prep.opts["vectors"]
    results = []
    n_jobs = jobs if vec else 1

    def checked():
        # runs of vectors as batched rows, `n_jobs` runs at once
        bounds = row_chunks(len(data_list), n_jobs)
        seconds = len(data_list) * _seconds_per_vector(prep)
        if use_processes(n_jobs, len(bounds), seconds):
            # each worker prepares the case and reads the vectors once; a run is shipped as (start, stop)
            token = object.__repr__(prep)
            _worker.update(token=token, prep=prep, data=data_list)   # what forked workers inherit
            parts = _releasing(process_map(
                functools.partial(_check_run, mode, alt_mode, vec), bounds, n_jobs, seconds=seconds,
                init=_prepare_worker,
                init_args=(token, case, base_dir, dict(rounding=rounding, isolate=isolate, vectors=vectors))), _worker)
        else:   # in runs as large as one job's
            parts = (_check_vectors(prep, data_list[a:b], mode, alt_mode, vec) for a, b in row_chunks(len(data_list)))
        for res, err in parts:
            yield from res
            if err is not None:
                raise err

    done = checked()
    for res in (_progress(done, len(data_list), "crosscheck") if progress and vec else done):
        results.append(res)
        if on_result is not None and vec:
            on_result(res)
    return DatasetResult(results) if vec else results[0]


#: single-core seconds per vector and layer of a data set (batched rows), for
#: :func:`mli.tools.jobs.use_processes`; measured with ``mli crosscheck
#: --vectors`` on LSTM fx16 32x32 layers of 16 steps: 0.83 s for 2,048 vectors
SECONDS_PER_VECTOR_LAYER = 0.0004


def _seconds_per_vector(prep):
    return SECONDS_PER_VECTOR_LAYER * max(1, len(prep.layers))


_worker: dict = {}    # a --jobs worker process's prepared case and vectors (_prepare_worker)


def _prepare_worker(token, case, base_dir, overrides):
    if _worker.get("token") == token:   # forked: the parent's, already in memory
        return
    prep = _prepare(case, base_dir, **overrides)
    _worker.update(token=token, prep=prep, data=prep.vector_data())


def _releasing(parts, state):
    """`parts`, then `state` emptied (also when the run is left)."""
    try:
        yield from parts
    finally:
        state.clear()


def _check_run(mode, alt_mode, vec, bounds):
    """:func:`_check_vectors` of the vectors ``bounds`` = (start, stop) of the
    worker's data set (one run of a --jobs run)."""
    a, b = bounds
    return _check_vectors(_worker["prep"], _worker["data"][a:b], mode, alt_mode, vec)


def _firmware_feed(prep, data):
    fw = {}
    for lay in prep.layers:
        if (lay.name, "firmware") in data:
            fw[lay.name] = data[(lay.name, "firmware")]
    return fw if prep.opts["isolate"] else None


def _check_vector(prep, data, mode, alt_mode, label):
    feed = _firmware_feed(prep, data)
    outs = _run_chain(prep, data, mode, feed)
    alt_outs = _run_chain(prep, data, alt_mode, feed) if alt_mode else None
    return _compare_vector(prep, data, outs, alt_outs, mode, alt_mode, label)


def _check_vectors(prep, items, mode, alt_mode, vec):
    """(the results of `items` ((label, data) of consecutive vectors) in order, up
    to the first vector that fails; that vector's error or None).  The chains of
    all the vectors run at once (:func:`_run_chain_rows`); if that fails anywhere,
    the vectors run one at a time, as :func:`_check_vector` always ran them."""
    datas = [data for _, data in items]
    try:
        feeds = [_firmware_feed(prep, data) for data in datas]
        outs = _run_chain_rows(prep, datas, mode, feeds)
        alts = _run_chain_rows(prep, datas, alt_mode, feeds) if alt_mode else [None] * len(datas)
    except Exception:
        outs = None
    results = []
    for v, (label, data) in enumerate(items):
        check_abandoned()           # a run left (Ctrl-C) stops here, not after its last vector
        label = label if vec else ""
        try:
            if outs is None:
                results.append(_check_vector(prep, data, mode, alt_mode, label))
            else:
                results.append(_compare_vector(prep, data, outs[v], alts[v], mode, alt_mode, label))
        except Exception as e:          # raised when its vector's turn comes
            return results, e
    return results, None


def _compare_vector(prep, data, outs, alt_outs, mode, alt_mode, label):
    isolate = prep.opts["isolate"]
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

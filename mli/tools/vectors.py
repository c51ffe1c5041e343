"""Runs reference cases against the package: ``mli vectors DIR [DIR...]``.

A folder with ``index.json`` holds MLI 1.1 cases (one ``.npz`` each, schema in
its README): status, output data and metadata, and the LSTM cell are compared
exactly; with ``"schema": "mli20"`` in it, MLI 2.0.2 cases, run on
:mod:`mli.v2` (subfolders such as ``official/`` included).  A folder with ``manifest.json`` holds OpenVINO TensorIterator/Loop
cases (see :mod:`mli.tools.ovcases`).  Prints one line per failing case and, last,
``N passed, N failed``; the exit code is 0 only when nothing failed."""
import argparse
import fnmatch
import functools
import json
import os
import sys

import numpy as np

from .. import _core
from .._status import Status
from ..enums import VARIANT
from ..io.limits import check_size
from ..io.npz import load_npz_arrays
from ..rounding import rounding as rounding_ctx
from ..tensor import Tensor
from .cases import CaseResult
from .jobs import chunked, jobs_arg, process_map

__all__ = ["CaseResult", "load_case", "build_tensor", "run_case", "run_dir", "iter_dir", "main"]

ROLES = ("in", "in1", "in2", "prev_out", "weights", "bias", "cell", "ir", "slope") + tuple(f"in{i}" for i in range(8)) + (
    "out",)
# the families of the rest of MLI 1.1 (schema mli11_more): run through the public API (mli.kernels)
MORE_KERNELS = ("conv2d_chw", "conv2d_hwc", "conv2d_nhwc", "depthwise_conv2d_chw", "depthwise_conv2d_hwcn",
                "avepool_chw", "avepool_hwc", "maxpool_chw", "maxpool_hwc", "leaky_relu", "softmax", "permute",
                "concat", "padding2d_chw", "padding2d_hwc")
_CONTAINER = {0: np.int8, 1: np.int16, 2: np.int8, 3: np.int32}


def load_case(path):
    """(meta dict, arrays dict) of one MLI case file."""
    arrays = load_npz_arrays(path)
    meta = json.loads(str(arrays.pop("meta_json")))
    return meta, arrays


def build_tensor(meta, arrays, role):
    """The `mli_tensor` a case describes for `role` (None when absent)."""
    if f"{role}_null" not in meta and f"{role}_el_type" not in meta:
        return None
    if meta.get(f"{role}_null"):
        return Tensor.raw(is_null=True)
    data = arrays.get(f"{role}_data")
    cap = _capacity(meta, f"{role}_capacity")
    kw = dict(shape=meta[f"{role}_shape"], rank=meta[f"{role}_rank"], mem_stride=meta[f"{role}_mem_stride"],
              el_type=meta[f"{role}_el_type"], frac_bits=meta[f"{role}_frac"])
    if meta.get(f"{role}_scalar") is not None and int(meta[f"{role}_rank"]) == 0:
        return Tensor.raw(scalar=int(meta[f"{role}_scalar"]), capacity=cap, **kw)
    if meta.get(f"{role}_data_null"):
        return Tensor.raw(data_null=True, capacity=cap, **kw)
    nbytes = 0 if data is None else data.nbytes
    buf = np.zeros(max(cap, nbytes, 1), np.uint8)
    if data is not None:
        buf[:nbytes] = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    t = Tensor.raw(buf, capacity=cap, **kw)
    if meta.get(f"{role}_dim") is not None:   # sa8 / sa32 (schema mli11_more): el_params.asym
        dim = int(meta[f"{role}_dim"])
        zp, sc = meta[f"{role}_zero_point"], meta[f"{role}_scale"]
        if dim < 0:
            zp, sc = int(np.asarray(zp).reshape(-1)[0]), int(np.asarray(sc).reshape(-1)[0])
        t.set_asym(zp, sc, int(meta[f"{role}_scale_frac_bits"]), dim=dim)
    return t


def _capacity(meta, key):
    """A capacity the case states: a uint32, and within the size limit of data
    read from case files (checked before anything is allocated from it)."""
    v = meta[key]
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"{key}: expected an integer in 0..2**32-1, got {v!r}")
    check_size(v, key)
    return v


def _data(t, el_type, count):
    dt = np.dtype(_CONTAINER[int(el_type)])
    return np.frombuffer(t.base, np.uint8, count=count * dt.itemsize, offset=t.offset).view(dt)


def _meta_errors(prefix, t, meta, with_shape=True):
    errs = []
    if f"expected_{prefix}_frac" in meta and t.frac_bits != meta[f"expected_{prefix}_frac"]:
        errs.append(f"{prefix}.frac_bits {t.frac_bits} != {meta[f'expected_{prefix}_frac']}")
    if f"expected_{prefix}_el_type" in meta and t.el_type != meta[f"expected_{prefix}_el_type"]:
        errs.append(f"{prefix}.el_type {t.el_type} != {meta[f'expected_{prefix}_el_type']}")
    if with_shape and f"expected_{prefix}_rank" in meta:
        r = meta[f"expected_{prefix}_rank"]
        if t.rank != r:
            errs.append(f"{prefix}.rank {t.rank} != {r}")
        elif list(t.shape4[:r]) != list(meta[f"expected_{prefix}_shape"][:r]):
            errs.append(f"{prefix}.shape {t.shape4[:r]} != {meta[f'expected_{prefix}_shape'][:r]}")
    return errs


def _first_diff(got, want):
    idx = np.flatnonzero(got != want)
    i = int(idx[0])
    return f"{idx.size} of {want.size} differ, first at [{i}]: got {got[i]}, expected {want[i]}"


def _expected(arrays, key, up):
    if up and f"{key}_if_round_up" in arrays:
        return arrays[f"{key}_if_round_up"]
    return arrays.get(key)


def _more_cfg(meta):
    """The case's cfg as the public API takes it (None: a NULL cfg)."""
    from .. import kernels

    k = meta["kernel"]
    if meta.get("cfg_null"):
        return None
    pads = {f: meta[f"cfg_{f}"] for f in ("padding_left", "padding_right", "padding_top", "padding_bottom")
            if f"cfg_{f}" in meta}
    if "conv" in k:
        return kernels.Conv2dConfig(relu=meta["cfg_relu_type"], stride_width=meta["cfg_stride_width"],
                                    stride_height=meta["cfg_stride_height"], **pads)
    if "pool" in k:
        return kernels.PoolConfig(kernel_width=meta["cfg_kernel_width"], kernel_height=meta["cfg_kernel_height"],
                                  stride_width=meta["cfg_stride_width"], stride_height=meta["cfg_stride_height"],
                                  **pads)
    if k == "permute":
        return kernels.PermuteConfig(perm_dim=tuple(meta["cfg_perm_dim"]))
    if k == "concat":
        return kernels.ConcatConfig(tensors_num=meta["cfg_tensors_num"], axis=meta["cfg_axis"])
    return kernels.Padding2dConfig(**pads)


def _run_more(meta, t):
    """A case of the rest of MLI 1.1, through the public API: (status, extra);
    extra["safety"] when the package refused the call (mlipy_safety)."""
    from .. import kernels
    from .._status import MliError

    k, kind, variant = meta["kernel"], meta["kind"], meta.get("variant", "")
    name = f"{k}_{kind}" + (f"_{variant}" if variant else "")
    fn = getattr(kernels, name, None)
    if fn is None:
        raise NotImplementedError(f"kernel {name!r} is not implemented")
    out = t["out"]
    try:
        if k == "fully_connected":
            fn(t["in"], t["weights"], t["bias"], out=out)
        elif "conv" in k:
            kw = {} if kind.startswith("sa8") else {"out_frac_bits": out.frac_bits}
            fn(t["in"], t["weights"], t["bias"], _more_cfg(meta), out=out, **kw)
        elif k == "leaky_relu":
            fn(t["in"], t["slope"], out=out)
        elif k == "softmax":
            fn(t["in"], out=out)
        elif k == "concat":
            names = meta.get("concat_inputs")
            fn(None if names is None else [t[r] for r in names], _more_cfg(meta), out=out)
        else:
            fn(t["in"], _more_cfg(meta), out=out)
    except MliError as e:
        return int(e.status), {"safety": bool(getattr(e, "mlipy_safety", False)), "error": str(e)}
    return 0, {}


def _run_kernel(meta, arrays, t):
    """Call the case's function; returns (status, extra dict)."""
    k, kind = meta["kernel"], meta.get("kind", "")
    if k in MORE_KERNELS or (k == "fully_connected" and kind == "sa8_sa8_sa32"):
        return _run_more(meta, t)
    if k == "fully_connected":
        return _core.fully_connected(VARIANT[kind], t["in"], t["weights"], t["bias"], t["out"]), {}
    if k == "basic_rnn_cell":
        return _core.basic_rnn_cell(VARIANT[kind], t["in"], t["prev_out"], t["weights"], t["bias"],
                                    meta["cfg_mode"], meta["cfg_act"], None if meta.get("ir_null") else t["ir"],
                                    t["out"]), {}
    if k == "lstm_cell":
        return _core.lstm_cell(VARIANT[kind], t["in"], t["prev_out"], t["weights"], t["bias"],
                               meta.get("cfg_mode", 0), meta.get("cfg_act", 0),
                               None if meta.get("ir_null") else t["ir"], t["cell"], t["out"],
                               cfg_null=bool(meta.get("cfg_null"))), {}
    if k in ("tanh", "sigm"):
        return getattr(_core, k)(VARIANT[kind], t["in"], t["out"]), {}
    if k == "relu":
        return _core.relu(VARIANT[kind], t["in"], meta["relu_type"], t["out"]), {}
    if k.startswith("eltwise_"):
        return _core.eltwise(k[len("eltwise_"):], VARIANT[kind], t["in1"], t["in2"], t["out"]), {}
    if k == "convert_tensor":
        return _core.convert_tensor(t["in"], t["out"]), {}
    if k == "count_elem_num":
        return 0, {"value": _core.count_elem_num(t["in"], meta["start_dim"])}
    if k == "tensor_element_size":
        return 0, {"value": _core.tensor_element_size(t["in"])}
    if k == "point_to_subtensor":
        in_off = t["in"].offset
        st = _core.point_to_subtensor(t["in"], meta["cfg_start_coord"], meta["cfg_coord_num"],
                                      meta["cfg_first_out_dim_size"], t["out"], cfg_null=bool(meta.get("cfg_null")))
        return st, {"offset": t["out"].offset - in_off}
    if k == "float_to_fx_tensor":
        return _core.float_to_fx_tensor(np.ascontiguousarray(arrays["src_float32"], np.float32), t["out"]), {}
    if k == "fx_tensor_to_float":
        dst_size = meta["dst_size"]
        if isinstance(dst_size, bool) or not isinstance(dst_size, int) or not 0 <= dst_size <= 0xFFFFFFFF:
            raise ValueError(f"dst_size: expected an integer in 0..2**32-1, got {dst_size!r}")
        check_size(4 * dst_size, "dst_size (floats)")
        dst = np.zeros(max(dst_size, 1), np.float32)
        return _core.fx_tensor_to_float(t["in"], dst, int(meta["dst_size"])), {"floats": dst}
    raise NotImplementedError(f"kernel {k!r} is not implemented")


def run_case(path, rounding="convergent", har_data=None):
    """Run one MLI case file; returns a CaseResult (a malformed case file, one
    whose meta lacks a field or states a capacity above the size limit, is a
    failed case: "cannot read case: ...")."""
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        return _run_case(path, name, rounding, har_data)
    except Exception as e:  # a malformed case file is a failure, not a crash
        return CaseResult(name, False, f"cannot read case: {_problem(e)}")


def _problem(e):
    if isinstance(e, KeyError) and e.args:
        return f"no {e.args[0]!r} in its meta"
    return str(e) if isinstance(e, (ValueError, OSError)) and str(e) else f"{type(e).__name__}: {e}"


def _run_case(path, name, rounding, har_data):
    try:
        meta, arrays = load_case(path)
    except Exception as e:  # a malformed case file is a failure, not a crash
        return CaseResult(name, False, f"cannot read case: {e}")
    if not isinstance(meta, dict):
        return CaseResult(name, False, "cannot read case: its meta_json is not an object")
    if meta.get("kernel") == "har_model":
        from .har import run_har_case

        return run_har_case(path, meta, arrays, rounding=rounding, har_data=har_data)
    up = rounding == "up"
    with rounding_ctx(rounding):
        tensors = {r: build_tensor(meta, arrays, r) for r in ROLES}
        try:
            st, extra = _run_kernel(meta, arrays, tensors)
        except NotImplementedError as e:
            return CaseResult(name, False, str(e))
        except Exception as e:
            return CaseResult(name, False, f"raised {type(e).__name__}: {e}")
    want = int(meta["expected_status"])
    if st != want and extra.get("safety") and not meta.get("output_defined", True) and \
            meta.get("output_undefined_reason") in ("mli_outside_buffers", "input_smaller_than_kernel",
                                                    "variant_outside_its_domain"):
        return CaseResult(name, True)   # refused where MLI itself leaves its buffers (the schema's rule)
    if st != want:
        why = f" ({extra['error']})" if extra.get("error") else ""
        return CaseResult(name, False, f"status {Status(st).c_name} != {Status(want).c_name}{why}")
    if st != 0 or not meta.get("output_defined", True):
        return CaseResult(name, True)
    errs = []
    k = meta["kernel"]
    if "value" in extra and extra["value"] != meta["expected_value"]:
        errs.append(f"value {extra['value']} != {meta['expected_value']}")
    if k == "point_to_subtensor":
        if extra["offset"] != meta["expected_byte_offset"]:
            errs.append(f"byte offset {extra['offset']} != {meta['expected_byte_offset']}")
        if tensors["out"].capacity != meta["expected_out_capacity"]:
            errs.append(f"out.capacity {tensors['out'].capacity} != {meta['expected_out_capacity']}")
        errs += _meta_errors("out", tensors["out"], meta)
    if k == "fx_tensor_to_float":
        exp = arrays["expected_float32"]
        got = extra["floats"][: exp.size]
        if not np.array_equal(got.view(np.uint32), exp.astype(np.float32).view(np.uint32)):
            errs.append("floats: " + _first_diff(got.view(np.uint32), exp.view(np.uint32)))
    exp = _expected(arrays, "expected_out_data", up)
    if exp is not None and k not in ("fx_tensor_to_float",):
        out = tensors["out"]
        el = meta.get("expected_out_el_type", meta.get("out_el_type"))
        got = _data(out, el, exp.size)
        if not np.array_equal(got, exp):
            errs.append("out: " + _first_diff(got, exp.reshape(-1)))
        if k != "float_to_fx_tensor":
            errs += _meta_errors("out", out, meta)
        if "expected_out_mem_stride" in meta and list(out.mem_stride) != list(meta["expected_out_mem_stride"]):
            errs.append(f"out.mem_stride {list(out.mem_stride)} != {meta['expected_out_mem_stride']}")
        if "expected_out_dim" in meta:
            zp, sc, dim, sfb = _core.asym_params(out)
            want_asym = [meta["expected_out_dim"], meta["expected_out_scale_frac_bits"]]
            if dim < 0:
                want_asym += [meta.get("expected_out_zero_point"), meta.get("expected_out_scale")]
            got_asym = [dim, sfb] + ([zp, sc] if dim < 0 else [])
            if [None if v is None else int(np.asarray(v).reshape(-1)[0]) for v in want_asym] != got_asym:
                errs.append(f"out asym (dim, scale_frac_bits, zero_point, scale) {got_asym} != {want_asym}")
    exp = _expected(arrays, "expected_cell_data", up)
    if exp is not None:
        got = _data(tensors["cell"], meta["expected_cell_el_type"], exp.size)
        if not np.array_equal(got, exp):
            errs.append("cell: " + _first_diff(got, exp.reshape(-1)))
        errs += _meta_errors("cell", tensors["cell"], meta)
    exp = _expected(arrays, "expected_ir_data", up)
    if exp is not None and (k == "lstm_cell" or meta.get("expected_ir_written")) and not up:
        # IR scratch: compared in the default mode (no half-up alternative is stored for it)
        got = _data(tensors["ir"], meta.get("expected_ir_el_type", meta["in_el_type"]), exp.size)
        if not np.array_equal(got, exp.reshape(-1)):
            errs.append("ir: " + _first_diff(got, exp.reshape(-1)))
        if k == "lstm_cell":
            errs += _meta_errors("ir", tensors["ir"], meta)
    return CaseResult(name, not errs, "; ".join(errs))


#: single-core seconds per case file, measured with ``--jobs 1`` (a 2-CPU
#: Zen 4 shared with other work: mli11 633 cases 0.57-0.75 s, mli20 1,635
#: cases 2.6 s), to decide whether a run pays for worker processes
#: (:func:`mli.tools.jobs.use_processes`)
SECONDS_PER_CASE = 0.001
SECONDS_PER_CASE_MLI20 = 0.0016


def iter_dir(path, patterns=None, rounding="convergent", har_data=None, jobs=1):
    """The results of every case of one folder (MLI ``index.json`` or
    OpenVINO ``manifest.json``), in the folder's order, each as soon as it
    and the cases before it are done; `jobs` worker processes run chunks of
    cases at once (:func:`mli.tools.jobs.process_map`; one process when the
    folder is too small to pay for them)."""
    if os.path.exists(os.path.join(path, "manifest.json")):
        from .ovcases import run_manifest_dir

        yield from run_manifest_dir(path, patterns, jobs)
        return
    if _is_mli20(path):
        yield from _iter_mli20(path, patterns, rounding, jobs)
        return
    files = sorted(f for f in os.listdir(path) if f.endswith(".npz"))
    if not files:
        raise FileNotFoundError(f"{path}: no reference cases (.npz with index.json, or manifest.json)")
    chosen = [os.path.join(path, f) for f in files if not patterns or _selected(f[:-4], patterns, path)]
    yield from _run_chunks(functools.partial(_run_mli11_cases, rounding, har_data), chosen, jobs,
                           len(chosen) * SECONDS_PER_CASE)


def _run_chunks(fn, chosen, jobs, seconds):
    for part in process_map(fn, chunked(chosen, jobs), jobs, seconds=seconds):
        yield from part


def _run_mli11_cases(rounding, har_data, files):
    """[CaseResult] of MLI 1.1 case files (one chunk of a --jobs run)."""
    return [run_case(p, rounding=rounding, har_data=har_data) for p in files]


def _is_mli20(path):
    """MLI 2.0.2 cases: ``index.json`` says ``"schema": "mli20"`` (1.1's has no schema)."""
    try:
        with open(os.path.join(path, "index.json"), encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(index, dict) and index.get("schema") == "mli20"


def _iter_mli20(path, patterns, rounding, jobs):
    """The folder's cases and its subfolders' (``official/``), named by their
    path below `path`, on mli.v2's kernels."""
    chosen = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".npz") and (not patterns or _selected(f[:-4], patterns, root)):
                chosen.append(os.path.join(root, f))
    yield from _run_chunks(functools.partial(_run_mli20_cases, path, rounding), chosen, jobs,
                           len(chosen) * SECONDS_PER_CASE_MLI20)


def _run_mli20_cases(path, rounding, files):
    """[CaseResult] of MLI 2.0.2 case files below `path` (one chunk of a --jobs run)."""
    from ..v2 import cases as v2cases

    out = []
    for file in files:
        name = os.path.relpath(file, path)[:-4].replace(os.sep, "/")
        try:
            r = v2cases.run_case(file, rounding)
        except Exception as e:  # a malformed case file is a failed case, not a crash
            out.append(CaseResult(name, False, f"cannot read case: {_problem(e)}"))
            continue
        if r.passed:
            out.append(CaseResult(name, True))
        else:
            out.append(CaseResult(name, False,
                                  f"{r.where}: expected {r.expected!r}, got {r.actual!r} {r.message}".rstrip()))
    return out


def run_dir(path, patterns=None, rounding="convergent", har_data=None, jobs=1):
    """Every case of one folder (see :func:`iter_dir`), as a list."""
    return list(iter_dir(path, patterns, rounding, har_data, jobs))


def _selected(name, patterns, folder):
    """-k GLOB matches the case name with or without its NNNN_ prefix."""
    short = name.split("_", 1)[1] if name[:4].isdigit() and "_" in name else name
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(short, p) for p in patterns)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mli vectors", description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="folders of reference cases")
    ap.add_argument("-k", dest="patterns", action="append", metavar="GLOB",
                    help="run only cases whose name matches (repeatable; the NNNN_ prefix may be left out)")
    ap.add_argument("--rounding", choices=("convergent", "up"), default="convergent",
                    help="DSP rounding mode (cases carry the half-up result where it differs)")
    ap.add_argument("--har-data", help="HAR model data (default: DIR/../../data/har, else $MLI_HAR_DATA, $MLI_SHARED/data/har)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    ap.add_argument("-j", "--jobs", type=jobs_arg, default=1, metavar="N",
                    help="worker processes running cases at once (0: one per core; default 1; one process when the cases are too few to pay for starting them); the output is the same")
    args = ap.parse_args(argv)
    passed = failed = 0
    for d in args.dirs:
        if not os.path.isdir(d):
            print(f"mli vectors: error: {d}: not a folder", file=sys.stderr)
            return 2
        try:
            for r in iter_dir(d, args.patterns, args.rounding, args.har_data, args.jobs):
                if r.passed:
                    passed += 1
                    if args.verbose:
                        print(f"PASS {r.name}", flush=True)
                else:
                    failed += 1
                    print(f"FAIL {r.name}: {r.message}", flush=True)
        except (OSError, ValueError) as e:
            print(f"mli vectors: error: {d}: {e}", file=sys.stderr)
            return 2
        except Exception as e:  # an input we did not foresee: still one line, no traceback
            if os.environ.get("MLI_DEBUG"):
                raise
            print(f"mli vectors: error: {d}: {type(e).__name__}: {e} (set MLI_DEBUG=1 for a traceback)",
                  file=sys.stderr)
            return 2
    if passed + failed == 0:  # a run that checked nothing must not look like a pass
        what = f"no case matched -k {' -k '.join(args.patterns)}" if args.patterns else "no cases"
        print(f"mli vectors: error: {what} in {', '.join(args.dirs)}", file=sys.stderr)
        return 2
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

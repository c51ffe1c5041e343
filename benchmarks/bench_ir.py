#!/usr/bin/env python
"""Speed of OpenVINO IR models in mli-py: the float interpreter against OpenVINO's CPU
plugin (f32, one thread), and the fixed-point conversion against its MLI kernel calls.

Run from the project root (the cases are the real-converter IRs of
``shared/vectors/ov_real``, found at ``../shared`` or through ``--cases DIR``)::

    PYTHONPATH=. python benchmarks/bench_ir.py
    PYTHONPATH=. python benchmarks/bench_ir.py --quick --json ir.json

Rows (issues 13 and 26):
  * float: ``mli.ir.read_model(xml)(inputs)`` vs OpenVINO ``CPU`` with
    ``INFERENCE_NUM_THREADS=1``, ``INFERENCE_PRECISION_HINT=f32``, one stream, on
    eight real-converter IRs (goals: mli <= 1.5x OpenVINO on the 2-layer LSTM, T=128,
    and a median ratio <= 1.5x over the eight).  OpenVINO is optional: without it the
    row says so and gives mli's time alone.
  * fixed point: ``mli.fixed_point.to_fixed_point(model, inputs, "fx16")(inputs)``
    vs the same MLI kernel calls alone (the calls of mli.kernels and mli.rows recorded
    during one model call, replayed with copies of their arguments; goal: <= 2x on
    the 2-layer LSTM; also that model on 64 rows, its inputs repeated).

Times are best-of-many-short-repeats means, interleaved (benchmarks/_harness.py),
plus best-of CPU times (time.process_time_ns) for a loaded machine; the goal verdict
uses the wall figures.  Nothing here asserts on speed.
"""
import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))
try:
    import mli  # noqa: F401
except ImportError:  # running from a checkout without PYTHONPATH=.
    sys.path.insert(1, str(_HERE.parent))

import numpy as np  # noqa: E402

import mli  # noqa: E402,F811
import mli.rows  # noqa: E402
from mli import kernels  # noqa: E402
from mli.fixed_point import to_fixed_point  # noqa: E402
from mli.ir import read_model  # noqa: E402

import _harness as H  # noqa: E402

# (case, what it is, goal applies): eight real-converter IRs, the median ratio of which
# has a goal too (issue 26: <= 1.5x); TensorIterator / Loop bodies in most of them
FLOAT_CASES = [
    ("pt_har_lstm__torch_fp16", "2-layer LSTM 9->32, T=128, LSTMSequence", True),
    ("pt_har_lstm__torch_static_ti_fp16", "the same as TensorIterators over LSTMCell", False),
    ("pt_gru_uni_l2_bf__torch_fp32", "2-layer GRU 10->16, B=2, T=20, GRUSequence", False),
    ("onnx_gru_fwd__onnx_ti_fp16", "GRU 10->16, B=2, T=20, TensorIterator over GRUCell", False),
    ("pt_kws_crnn__torch_static_ti_fp16", "KWS CRNN: conv, LSTMCell TI 320->64, T=25", False),
    ("keras_lstm_seq__keras_direct_fp32", "Keras LSTM 10->16, B=2, T=20: a Loop of MatMuls", False),
    ("tf_blocklstm__tf_function_fp16", "TF LSTMBlockCell 10->16, B=2, T=20: Loop over LSTMCell",
     False),
    ("mo_onnx_loop_rnn__mo_newfe_fp32", "ONNX Loop RNN 10->16, B=2, T=20, early-exit condition",
     False),
]
MEDIAN_FACTOR = 1.5
# (case, what it is, goal applies, batch: the case's inputs repeated to that many rows or None)
FIXED_CASES = [
    ("pt_har_lstm__torch_fp16", "2-layer LSTM, T=128 (LSTMSequence)", True, None),
    ("pt_har_lstm__torch_fp16", "the same, batch 64 (batched-rows calls)", False, 64),
    ("pt_gru_uni_l2_bf__torch_fp32", "2-layer GRU, B=2, T=20 (GRU from MLI kernels)", False, None),
]
OV_FACTOR = 1.5
KERNEL_FACTOR = 2.0
_KERNEL_PREFIXES = ("lstm_cell_", "basic_rnn_cell_", "fully_connected_", "eltwise_", "sigm_",
                    "tanh_")
_KINDS = ("_fx8", "_fx16", "_fx8w16d")   # (the dispatchers without one call these)


def find_cases(path=None):
    """The ov_real folder: ``path``, $MLI_OV_REAL, or ../shared/vectors/ov_real."""
    for p in (path, os.environ.get("MLI_OV_REAL"),
              _HERE.parent.parent / "shared" / "vectors" / "ov_real"):
        if p and (Path(p) / "manifest.json").is_file():
            return Path(p)
    return None


def case_inputs(folder, name):
    with open(folder / "manifest.json", encoding="utf-8") as f:
        case = next(c for c in json.load(f)["cases"] if c["name"] == name)
    with np.load(folder / f"{name}.npz") as z:
        return {i["name"]: z[i["npz_key"]] for i in case["inputs"]}, \
            [z[i["npz_key"]] for i in case["inputs"]]


def openvino_request(xml):
    """A one-thread f32 OpenVINO CPU infer request, or (None, reason)."""
    try:
        import openvino as ov
    except ImportError:
        return None, "openvino is not installed (pip install openvino to compare)"
    core = ov.Core()
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32",
                              "NUM_STREAMS": 1})
    compiled = core.compile_model(core.read_model(str(xml)), "CPU")
    return compiled.create_infer_request(), f"openvino {ov.__version__}"


def _snapshot(v, memo):
    """A copy of a kernel argument as it is at the call: every Tensor (also in a list)
    over its own copy of the data, with its fields; the same object twice stays one
    object (``cell_out=cell``).  The callers may reuse their tensor wrappers, or update
    them in place, after the call."""
    if isinstance(v, (list, tuple)):
        return type(v)(_snapshot(t, memo) for t in v)
    if not isinstance(v, mli.Tensor) or v.data_null or v.scalar_value is not None:
        return v
    if id(v) not in memo:
        t = mli.Tensor(v.numpy().copy(), v.frac_bits, el_type=v.el_type)
        memo[id(v)] = (t, v)            # (v kept alive: its id stays unique meanwhile)
    return memo[id(v)][0]


def record_kernel_calls(fn):
    """The MLI kernel calls (function, args, kwargs) one ``fn()`` makes: the kernels of
    :mod:`mli.kernels` and the batched-rows calls of :mod:`mli.rows` (KernelBody sends
    two rows or more there), each with a snapshot of its arguments (see _snapshot)."""
    calls = []
    saved = []
    for mod in (kernels, mli.rows):
        for name in dir(mod):
            f = getattr(mod, name)
            if name.startswith(_KERNEL_PREFIXES) and name.endswith(_KINDS) and callable(f):
                saved.append((mod, name, f))

                def wrapper(*a, _f=f, **kw):
                    memo = {}
                    calls.append((_f, _snapshot(a, memo),
                                  {k: _snapshot(v, memo) for k, v in kw.items()}))
                    return _f(*a, **kw)
                setattr(mod, name, wrapper)
    try:
        fn()
    finally:
        for mod, name, f in saved:
            setattr(mod, name, f)
    return calls


def cpu_us(fn, budget, inner):
    """Best per-call CPU time (time.process_time_ns, all threads of the process) over
    repeats of ``inner`` calls: on a loaded machine a long call rarely gets a whole
    wall-clock window, so the wall figures favour the shorter call; this one does not
    (OpenVINO's idle worker threads, if any spin, count against it)."""
    import time
    fn()
    best = float("inf")
    for _ in range(max(3, budget.min_repeats)):
        t0 = time.process_time_ns()
        for _ in range(inner):
            fn()
        best = min(best, (time.process_time_ns() - t0) / inner)
    return best / 1e3


def replay(calls):
    for f, a, kw in calls:
        f(*a, **kw)


def run(log, *, quick=False, cases_dir=None) -> dict:
    """Measure every row; return {row: figures}."""
    budget = H.Budget(total_ns=200_000_000 if quick else 1_000_000_000, rounds=5)
    folder = find_cases(cases_dir)
    out = {"float": {}, "fixed_point": {}, "notes": []}
    if folder is None:
        note = "shared/vectors/ov_real not found (use --cases DIR): IR rows skipped"
        log(note)
        out["notes"].append(note)
        return out
    log(f"cases: {folder}")
    log("\n## float IR models: mli.ir vs OpenVINO CPU f32, one thread\n")
    rows = []
    for name, what, goal in FLOAT_CASES:
        xml = folder / f"{name}.xml"
        named, listed = case_inputs(folder, name)
        model = read_model(xml)
        fns = {"mli": (functools.partial(model, named), None)}
        req, ov_note = openvino_request(xml)
        if req is not None:
            fns["openvino"] = (functools.partial(req.infer, listed), None)
        t = H.measure_many(fns, budget, rounds=budget.rounds)
        r = {"case": name, "what": what, "mli_us": t["mli"].us,
             "mli_cpu_us": cpu_us(fns["mli"][0], budget, t["mli"].inner)}
        if req is not None:
            r.update(openvino_us=t["openvino"].us, ratio=t["mli"].us / t["openvino"].us,
                     openvino=ov_note,
                     openvino_cpu_us=cpu_us(fns["openvino"][0], budget, t["openvino"].inner))
            r["cpu_ratio"] = r["mli_cpu_us"] / r["openvino_cpu_us"]
            if goal:
                r["goal"] = f"<= {OV_FACTOR}x OpenVINO"
                r["met"] = r["ratio"] <= OV_FACTOR
        else:
            r["note"] = ov_note
        out["float"][name] = r
        rows.append([what, H.fmt_us(r["mli_us"]),
                     H.fmt_us(r["openvino_us"]) if "openvino_us" in r else "-",
                     H.fmt_x(r["ratio"]) if "ratio" in r else r.get("note", ""),
                     H.fmt_us(r["mli_cpu_us"]),
                     H.fmt_us(r["openvino_cpu_us"]) if "openvino_cpu_us" in r else "-",
                     H.fmt_x(r["cpu_ratio"]) if "cpu_ratio" in r else "-",
                     ("met" if r["met"] else "MISSED") if "met" in r else ""])
    ratios = [r["ratio"] for r in out["float"].values() if "ratio" in r]
    if ratios:
        med = float(np.median(ratios))
        out["float_median"] = {"ratio": med, "cases": len(ratios),
                               "goal": f"<= {MEDIAN_FACTOR}x", "met": med <= MEDIAN_FACTOR}
        rows.append([f"median of {len(ratios)}", "", "", H.fmt_x(med), "", "", "",
                     "met" if med <= MEDIAN_FACTOR else "MISSED"])
    log(H.table(["model", "mli", "OpenVINO", "mli / OV", "mli CPU", "OV CPU", "CPU ratio",
                 f"goal <= {OV_FACTOR}x"], rows))

    log("\n## fixed point (to_fixed_point fx16) vs its MLI kernel calls alone\n")
    rows = []
    for name, what, goal, batch in FIXED_CASES:
        named, _ = case_inputs(folder, name)
        if batch:
            named = {k: np.repeat(v, batch // v.shape[0], axis=0) for k, v in named.items()}
        fpm = to_fixed_point(read_model(folder / f"{name}.xml"), named, "fx16")
        calls = record_kernel_calls(functools.partial(fpm, named))
        t = H.measure_many({"model": (functools.partial(fpm, named), None),
                            "kernels": (functools.partial(replay, calls), None)},
                           budget, rounds=budget.rounds)
        r = {"case": name, "what": what, "model_us": t["model"].us,
             "kernels_us": t["kernels"].us, "kernel_calls": len(calls),
             "ratio": t["model"].us / t["kernels"].us,
             "model_cpu_us": cpu_us(functools.partial(fpm, named), budget, t["model"].inner),
             "kernels_cpu_us": cpu_us(functools.partial(replay, calls), budget,
                                      t["kernels"].inner)}
        r["cpu_ratio"] = r["model_cpu_us"] / r["kernels_cpu_us"]
        if goal:
            r["goal"] = f"<= {KERNEL_FACTOR}x the kernel calls"
            r["met"] = r["ratio"] <= KERNEL_FACTOR
        out["fixed_point"][name + (f"@{batch}" if batch else "")] = r
        rows.append([what, str(len(calls)), H.fmt_us(r["model_us"]), H.fmt_us(r["kernels_us"]),
                     H.fmt_x(r["ratio"]), H.fmt_x(r["cpu_ratio"]),
                     ("met" if r["met"] else "MISSED") if goal else ""])
    log(H.table(["model", "kernel calls", "model", "kernels alone", "ratio", "CPU ratio",
                 f"goal <= {KERNEL_FACTOR}x"], rows))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short measurements")
    ap.add_argument("--cases", help="the ov_real folder (default ../shared/vectors/ov_real)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    log = functools.partial(print, flush=True)
    log(f"mli {mli.__version__}, isa {mli.isa()}, numpy {np.__version__}")
    res = run(log, quick=args.quick, cases_dir=args.cases)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

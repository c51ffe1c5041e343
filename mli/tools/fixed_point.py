"""``mli fixed-point XML [--kind K] [--library mli1|mli2|both]`` (also
``python -m mli.fixed_point``): convert an OpenVINO IR model's LSTM/RNN/GRU
layers to MLI fixed point (the MLI 1.1 kernels, MLI 2.0.2's, or both side by side),
calibrated on the inputs stored beside the case, and print the S/N of every
output against the float model.  The library is :mod:`mli.fixed_point`.

``--scope model`` runs every layer on the MLI 1.1 kernels (``to_fixed_point(...,
scope="model")``) and prints the plan and every layer's S/N, saturated elements and
headroom; ``--plan`` / ``--save-plan`` read / write the formats (only the named file is
written), ``--dataset DATA.npz [--labels ...] [--jobs N]`` reports over a data set with
accuracy and confusion matrix, ``--json`` prints one JSON object
(``{"outputs": {name: {kind: dB}}, "layers": [...]}``).  A model with ops MLI 1.1 has no
kernel for exits 2 with one line naming them all."""
import argparse
from pathlib import Path

import numpy as np

from .._status import MliError
from ..fixed_point import to_fixed_point
from ..io.limits import limit_text, max_array_bytes
from ..io.npz import npz_keys, read_npz
from ..ir import read_model
from .jobs import jobs_arg

__all__ = ["main"]


class _ToolError(ValueError):
    """A bad model, input file or option: one line, exit 2."""


def _case_inputs(xml):
    npz = Path(xml).with_suffix(".npz")
    if not npz.is_file():
        raise _ToolError(f"{xml}: no {npz.name} beside it with the inputs (in__<name> arrays)")
    # mli.io's reader: the size limit, no pickles, a damaged file named
    keys = [k for k in npz_keys(npz) if k.startswith("in__")]
    if not keys:
        raise _ToolError(f"{npz}: no in__<name> arrays")
    inputs, left = {}, max_array_bytes()
    for k in keys:
        a = read_npz(npz, k)
        left -= a.nbytes
        if left < 0:
            raise _ToolError(f"{npz}: its in__ arrays together exceed {limit_text()}")
        inputs[k[4:]] = a
    return inputs


_KINDS = {"mli1": ["fx16", "fx8w16d", "fx8"], "mli2": ["fx16", "fx16_fx8_fx8", "sa8"]}
_LIB_NAME = {"mli1": "MLI 1.1", "mli2": "MLI 2.0.2"}


def main(argv=None) -> int:
    """``mli fixed-point XML [--kind K] [--library mli1|mli2|both]``: frac bits and S/N
    per output; with several runs a table of the S/N side by side.  Returns 0;
    a usage error, an unreadable or malformed model or inputs file, or a model
    the kernels cannot run prints one line ``mli fixed-point: error: ...``
    (naming the file or layer) and returns 2."""
    import os
    import sys
    import zipfile

    try:
        return _run(argv)
    except SystemExit as e:     # argparse: --help (0) or its usage error (2, printed)
        return e.code if isinstance(e.code, int) else 2
    except BrokenPipeError:
        raise
    except (_ToolError, MliError, ValueError, TypeError, KeyError, OSError, zipfile.BadZipFile,
            NotImplementedError) as e:
        print(f"mli fixed-point: error: {_message(e, argv)}", file=sys.stderr)
        return 2
    except Exception as e:      # an input we did not foresee: still no traceback
        if os.environ.get("MLI_DEBUG"):
            raise
        print(f"mli fixed-point: error: {type(e).__name__}: {e} (set MLI_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 2


def _message(e, argv):
    """One line naming the file (and the layer, which the model's errors name)."""
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    xml = next((a for a in (argv or []) if not a.startswith("-")), None)
    if xml and not text.startswith(xml) and xml not in text:
        text = f"{xml}: {text}"
    return text


def _run(argv) -> int:
    ap = argparse.ArgumentParser(
        prog="mli fixed-point",
        description="Convert the LSTM/RNN/GRU layers of an OpenVINO IR model to MLI fixed "
                    "point, calibrating on the case's stored inputs (the .npz beside the "
                    ".xml), and print the S/N of every output against the float model.")
    ap.add_argument("xml", help="OpenVINO IR .xml (weights .bin and inputs .npz beside it)")
    ap.add_argument("--kind", choices=["fx16", "fx8w16d", "fx8", "fx16_fx8_fx8", "sa8", "all"],
                    default="fx16",
                    help="kernel variant (default fx16; MLI 1.1: fx16 fx8w16d fx8; MLI 2.x: fx16 "
                         "fx16_fx8_fx8 sa8; 'all': every variant of the library)")
    ap.add_argument("--library", choices=["mli1", "mli2", "both"], default="mli1",
                    help="MLI 1.1 kernels (mli1, default), MLI 2.0.2's (mli2) or both side by side")
    ap.add_argument("--sa8-per-tensor", action="store_true",
                    help="MLI 2.x sa8: quantize the weights per tensor instead of per gate")
    ap.add_argument("--scope", choices=["recurrent", "model"], default="recurrent",
                    help="recurrent (default): only the LSTM/RNN/GRU layers in fixed point; "
                         "model: every layer on an MLI 1.1 kernel, with S/N per layer")
    ap.add_argument("--plan", metavar="FILE", help="--scope model: the formats to use (a plan "
                    "file written by --save-plan, possibly edited)")
    ap.add_argument("--save-plan", metavar="FILE", help="--scope model: write the plan (formats "
                    "per layer and tensor, JSON) to FILE (one --kind; FILE only)")
    ap.add_argument("--margin", type=int, default=0, metavar="BITS",
                    help="--scope model: frac bits taken off every calibrated format (default 0)")
    ap.add_argument("--float-ops", default="", metavar="OPS",
                    help="--scope model: comma-separated op types or layer names to run in "
                         "float instead of refusing them")
    ap.add_argument("--dataset", metavar="DATA.npz",
                    help="--scope model: a data set (one array per model input, first axis = "
                         "samples) to report on instead of the case's stored inputs")
    ap.add_argument("--labels", metavar="KEY|FILE.npy",
                    help="--dataset: the class of each sample (an array of DATA.npz, default "
                         "'labels' when it has one, or a .npy file): adds accuracy and confusion")
    ap.add_argument("--output", metavar="NAME", help="--labels: the model output holding the "
                    "class scores (default: the first)")
    ap.add_argument("--jobs", type=jobs_arg, default=1, metavar="N",
                    help="--dataset: N worker processes (0: every core)")
    ap.add_argument("--json", action="store_true",
                    help="--scope model: one JSON object on stdout: {\"outputs\": {name: "
                         "{kind: S/N dB}}, \"layers\": [...]}")
    args = ap.parse_args(argv)
    if args.scope == "model":
        return _run_model(ap, args)
    for opt in ("plan", "save_plan", "json", "dataset", "labels", "output", "margin",
                "float_ops"):
        if getattr(args, opt):
            ap.error(f"--{opt.replace('_', '-')} needs --scope model")
    if args.jobs != 1:
        ap.error("--jobs needs --scope model and --dataset")
    libs = ["mli1", "mli2"] if args.library == "both" else [args.library]
    runs = []
    for lib in libs:
        if args.kind == "all":
            runs += [(lib, k) for k in _KINDS[lib]]
        elif args.kind in _KINDS[lib]:
            runs.append((lib, args.kind))
        elif args.library != "both":
            ap.error(f"--kind {args.kind} is not a {_LIB_NAME[lib]} kind ({', '.join(_KINDS[lib])})")
    if not runs:
        ap.error(f"--kind {args.kind}: no library of --library {args.library} has it")
    model = read_model(args.xml)
    inputs = _case_inputs(args.xml)
    print(f"{args.xml}: calibrated on its stored inputs {sorted(inputs)}")
    table = {}
    for lib, kind in runs:
        fpm = to_fixed_point(model, inputs, kind, library=lib, per_axis=not args.sa8_per_tensor)
        print(f"\n[{kind}]" if args.library == "mli1" else f"\n[{_LIB_NAME[lib]} {kind}]")
        print(fpm.summary())
        sn = fpm.report(inputs)
        table[(lib, kind)] = sn
        for name, db in sn.items():
            print(f"  S/N {name:<16} {db:7.2f} dB")
    if len(runs) > 1:
        heads = [f"{'mli2' if lib == 'mli2' else 'mli1.1'} {kind}" for lib, kind in runs]
        names = list(next(iter(table.values())))
        w = max([len("output")] + [len(n) for n in names])
        print("\nS/N (dB) against the float model")
        print(f"  {'output':<{w}}  " + "  ".join(f"{h:>18}" for h in heads))
        for n in names:
            print(f"  {n:<{w}}  " + "  ".join(f"{table[r][n]:18.2f}" for r in runs))
    return 0


def _run_model(ap, args) -> int:
    """``--scope model``: every layer on the MLI 1.1 kernels, S/N per output and layer."""
    import json
    import math

    from ..fixed_point.errors import FixedPointError
    from ..fixed_point.plan import Plan

    if args.library != "mli1":
        ap.error("--scope model runs on the MLI 1.1 kernels (--library mli1)")
    if args.margin < 0:
        ap.error("--margin: a non-negative number of frac bits")
    kinds = _KINDS["mli1"] if args.kind == "all" else [args.kind]
    if any(k not in _KINDS["mli1"] for k in kinds):
        ap.error(f"--kind {args.kind} is not an MLI 1.1 kind ({', '.join(_KINDS['mli1'])})")
    plan = Plan.load(args.plan) if args.plan else None
    if plan is not None and args.kind == "all":
        ap.error("--plan fixes the kinds: give no --kind all with it")
    if plan is not None:
        kinds = [plan.kind]
    if args.save_plan and len(kinds) > 1:
        ap.error("--save-plan writes one plan: give one --kind, not all")
    float_ops = tuple(o.strip() for o in args.float_ops.split(",") if o.strip())
    model = read_model(args.xml)
    inputs = _case_inputs(args.xml)
    try:
        models = {k: to_fixed_point(model, inputs, k, scope="model", margin=args.margin,
                                    float_ops=float_ops, plan=plan) for k in kinds}
    except FixedPointError as e:
        raise _ToolError(str(e)) from None
    data, labels = _dataset(args) if args.dataset else (None, None)
    if data is None:
        if args.labels or args.output or args.jobs != 1:
            ap.error("--labels, --output and --jobs need --dataset")
        reports = {k: wm.report(inputs) for k, wm in models.items()}
    else:
        reports = {k: wm.report(data, labels=labels, output=args.output, jobs=args.jobs,
                                progress=None if not args.json else False)
                   for k, wm in models.items()}
    if args.save_plan:
        next(iter(models.values())).plan.save(args.save_plan)

    def num(v):
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else (
            "inf" if v == math.inf else round(v, 3) if isinstance(v, float) else v)
    if args.json:
        out = {"model": str(args.xml), "scope": "model", "kinds": kinds,
               "outputs": {n: {k: num(reports[k]["outputs"][n]) for k in kinds}
                           for n in model.output_names},
               "layers": [dict(row, kind=k, sn_db=num(row["sn_db"]))
                          for k in kinds for row in reports[k]["layers"]],
               "float_ops": next(iter(models.values())).float_ops}
        if labels is not None:
            out["accuracy"] = {k: reports[k]["accuracy"] for k in kinds}
            out["agreement"] = {k: reports[k]["agreement"] for k in kinds}
            out["confusion"] = {k: reports[k]["confusion"] for k in kinds}
        if data is not None:
            out["samples"] = reports[kinds[0]]["samples"]
        print(json.dumps(out))
        return 0
    print(f"{args.xml}: every layer on MLI 1.1 kernels, calibrated on its stored inputs "
          f"{sorted(inputs)}")
    for k, wm in models.items():
        print(f"\n[{k}] layers (role = MLI kernel, kind, output format el/frac):")
        print(wm.summary())
        print(f"  {'tensor':<44} {'format':>9} {'S/N dB':>8} {'sat':>6} {'headroom':>8}")
        for row in reports[k]["layers"]:
            sn = row["sn_db"]
            mark = "  (float op)" if row["float"] else ""
            print(f"  {row['tensor']:<44} {row['el'] + '/' + str(row['frac']):>9} "
                  f"{'-' if sn is None else f'{sn:8.2f}':>8} {row['saturated']:>6} "
                  f"{'-' if row['headroom_bits'] is None else row['headroom_bits']:>8}{mark}")
        for name, db in reports[k]["outputs"].items():
            print(f"  S/N {name:<16} {db:7.2f} dB")
        if labels is not None:
            r = reports[k]
            print(f"  accuracy on {r['samples']} samples: float {r['accuracy']['float']:.4f}, "
                  f"fixed point {r['accuracy']['fixed']:.4f} (same class {r['agreement']:.4f})")
            print("  confusion (rows: label, columns: fixed-point class):")
            for i, row in enumerate(r["confusion"]):
                print(f"    {i:>3}: " + " ".join(f"{v:>5}" for v in row))
    return 0


def _dataset(args):
    """(samples dict, labels or None) of --dataset / --labels."""
    keys = npz_keys(args.dataset)
    data, left = {}, max_array_bytes()
    label_key = None
    if args.labels and not args.labels.endswith(".npy"):
        label_key = args.labels
        if label_key not in keys:
            raise _ToolError(f"--labels: {args.dataset} has no array {label_key!r}")
    elif args.labels is None and "labels" in keys:
        label_key = "labels"
    for k in keys:
        a = read_npz(args.dataset, k)
        left -= a.nbytes
        if left < 0:
            raise _ToolError(f"{args.dataset}: its arrays together exceed {limit_text()}")
        if k != label_key:
            data[k] = a
    labels = None
    if label_key is not None:
        labels = read_npz(args.dataset, label_key)
    elif args.labels:
        labels = np.load(args.labels, allow_pickle=False)
    if labels is not None and labels.dtype.kind not in "iu":
        raise _ToolError(f"--labels: class indices must be integers, got {labels.dtype}")
    return data, labels


if __name__ == "__main__":
    raise SystemExit(main())

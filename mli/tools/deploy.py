"""``mli deploy``: firmware C for a network on the MLI 1.1 kernels, with
a static memory plan, goldens and a host check (:mod:`mli.deploy`).

    mli deploy MODEL.xml -o DIR [--kind fx16|fx8w16d|fx8] [--plan FILE] [--calibration DATA.npz]
                         [--samples N] [--prefix model] [--force]
    mli deploy --example kws|har -o DIR [--depth 16|816|8] [--samples N] [--prefix model] [--force]

``MODEL.xml`` (an OpenVINO IR) is converted whole to MLI 1.1 fixed point as
``mli fixed-point MODEL.xml --scope model`` does (``--plan`` a plan it saved,
``--calibration`` the ``in__NAME`` arrays to calibrate on, default the ``.npz``
beside the model; with one more leading axis, a data set), lowered to MLI
calls and checked against the fixed-point model; the goldens are its
integers for the first N calibration sets.  ``--example kws`` deploys MLI's
keyword-spotting example network (its weights, formats and specialised
kernels; the goldens are the network's outputs for the first N inferences of
the example's ``test.wav``); ``--example har`` the HAR example's network at
``--depth`` (FC1 per time step on row views, the library LSTM for layer 3;
the goldens are its outputs for the first N vectors of the test set).  Then::

    make -C DIR check                       # against mli-py's C core
    make -C DIR check MLI_INC=$(python -c "import mli; print(mli.get_include())") \\
        MLI_LIB=../shared/oracle_c/libmli11_conv.so     # against MLI 1.1's own code

Exit codes: 0 written, 2 bad input (nothing written).
"""
import argparse
import os
import sys

from ..deploy import DeployError, deploy

EXAMPLES = ("kws", "har")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message)


def _parser():
    ap = _Parser(prog="mli deploy", description="Firmware C for a network on the MLI 1.1 kernels, with a static "
                 "memory plan, goldens and a host check (make check).")
    ap.add_argument("xml", nargs="?", help="an OpenVINO IR model (.xml, its .bin beside it)")
    ap.add_argument("--example", choices=EXAMPLES, help="instead of a model: kws or har (MLI's examples)")
    ap.add_argument("--kind", choices=("fx16", "fx8w16d", "fx8"), default=None,
                    help="MODEL.xml: every layer's kernel kind (default fx16, or the plan's)")
    ap.add_argument("--plan", metavar="FILE", help="MODEL.xml: a whole-model plan (mli fixed-point --save-plan)")
    ap.add_argument("--calibration", metavar="DATA.npz",
                    help="MODEL.xml: in__NAME input arrays to calibrate on (default: the .npz beside the model)")
    ap.add_argument("--depth", type=int, choices=(16, 816, 8), default=16, help="har: the example's depth (default 16)")
    ap.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write (new or empty)")
    ap.add_argument("--samples", type=int, default=2, metavar="N", help="input samples in the goldens (default 2)")
    ap.add_argument("--prefix", default="model", help="prefix of the C names and files (default model)")
    ap.add_argument("--force", action="store_true", help="replace the files an earlier mli deploy wrote in DIR")
    ap.add_argument("--data", help="the example's data folder (default: as mli kws finds it)")
    return ap


def _kws(args):
    from .kws import default_data_dir, features_of_wav, load_model
    from .kws.deploy import kws_program
    data = args.data if args.data is not None else default_data_dir()
    if not os.path.isdir(data):
        raise _UsageError(f"KWS data folder not found: {data} (give --data DIR or set MLI_KWS_DATA)")
    model = load_model(data)
    stream = features_of_wav(os.path.join(model.data_dir, "test.wav"))
    if not 1 <= args.samples <= stream.inferences:
        raise _UsageError(f"--samples: expected 1..{stream.inferences} (the inferences of test.wav), "
                          f"got {args.samples}")
    samples = [{"input": stream.network_input(n).reshape(1, 65, 13)} for n in range(args.samples)]
    return kws_program(model), samples


def _har(args):
    from .har import default_data_dir, load_har
    from .har_deploy import har_program, har_samples
    try:
        model = load_har(args.data if args.data is not None else default_data_dir(), args.depth)
        return har_program(model), har_samples(model, args.samples)
    except (OSError, ValueError) as e:
        raise _UsageError(str(e)) from None


def _model(args):
    from ..deploy import deploy_model
    from ..deploy.model import read_calibration
    if args.depth != 16:
        raise _UsageError("--depth: applies to --example har only")
    if args.data is not None:
        raise _UsageError("--data: applies to --example only")
    if args.plan is None and args.kind is None:
        args.kind = "fx16"
    if args.plan is not None and args.kind is not None:
        raise _UsageError("--kind: the plan sets the kinds; give one of --kind and --plan")
    if not os.path.isfile(args.xml):
        raise _UsageError(f"{args.xml}: no such model file")
    cal = read_calibration(args.calibration) if args.calibration is not None else None
    kw = {"plan": args.plan} if args.plan is not None else {"kind": args.kind}
    return deploy_model(args.xml, args.output, calibration=cal, samples=args.samples, prefix=args.prefix,
                        force=args.force, **kw)


def _run(argv):
    args = _parser().parse_args(argv)
    if (args.xml is None) == (args.example is None):
        raise _UsageError("give a model (MODEL.xml) or --example kws|har, not both")
    if args.xml is not None:
        r = _model(args)
        prog, n = r["program"], len(r["goldens"])
        print(f"mli deploy: {prog.name}: {len(prog.steps)} MLI calls, bit-exact with the fixed-point model on "
              f"{n} golden sample(s) -> {args.output}")
        print("inputs: " + ", ".join(f"{t} <- {m!r}" for t, m in r["inputs"].items()) +
              "; outputs: " + ", ".join(f"{t} -> {m!r}" for t, m in r["outputs"].items()))
        for line in r["report"]:
            print(line)
        print(f"next: make -C {args.output} check")
        return 0
    if args.example != "har" and args.depth != 16:
        raise _UsageError("--depth: applies to --example har only")
    for opt in ("kind", "plan", "calibration"):
        if getattr(args, opt) is not None:
            raise _UsageError(f"--{opt}: applies to MODEL.xml only")
    prog, samples = (_har if args.example == "har" else _kws)(args)
    r = deploy(prog, args.output, samples, prefix=args.prefix, force=args.force)
    print(f"mli deploy: {prog.name}: {len(prog.steps)} MLI calls, {len(samples)} golden samples -> {args.output}")
    for line in r["report"]:
        print(line)
    print(f"next: make -C {args.output} check")
    return 0


def main(argv=None):
    try:
        return _run(sys.argv[1:] if argv is None else argv)
    except (_UsageError, DeployError) as e:
        print(f"mli deploy: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"mli deploy: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2

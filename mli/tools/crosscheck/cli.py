"""The ``mli crosscheck`` command line: parse, run, print one line per result,
exit 0 (bit-exact), 1 (mismatch) or 2 (usage or input error)."""
import argparse
import json
import os
import sys

from ..._status import MliError
from ..jobs import jobs_arg
from ...io.load import parse_spec
from .case import _CLI_FLAG, ROUNDINGS, CaseError, _msg, load_case
from .deploy_dumps import crosscheck_deploy
from .har_dumps import crosscheck_har
from .kws_dumps import crosscheck_kws
from .plot import plot_results
from .results import DatasetResult
from .run import crosscheck
from .v2 import is_v2_kernel


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
    g.add_argument("--mli", choices=("1", "2"), help="MLI version of --kernel: 1 (1.1, default) or 2 (2.0.2; "
                   "implied by a 2.x-only kernel such as gru_cell_fx16 or lstm_cell_sa8_sa8_sa32)")
    g.add_argument("--kind", help="fx8, fx16 (default) or fx8w16d when --kernel has no suffix "
                   "(MLI 2: fx16, fx16_fx8_fx8, sa8_sa8_sa32, sa8, fx8)")
    g.add_argument("--in", "--input", dest="input", metavar="SPEC", help="input file (float: quantized)")
    g.add_argument("--in-frac", dest="input_frac", type=int, metavar="N", help="input frac bits")
    for role in ("weights", "bias", "prev_out", "cell", "in2"):
        flag = "--" + role.replace("_", "-")
        g.add_argument(flag, dest=role, metavar="SPEC",
                       help=f"{role} file" + (" or 'zeros' (default)" if role in ("prev_out", "cell") else ""))
        g.add_argument(flag + "-frac", dest=role + "_frac", type=int, metavar="N", help=f"{role} frac bits")
    v = ap.add_argument_group("MLI 2.x tensors (with --mli 2)")
    for role in ("weights_in", "weights_out"):
        flag = "--" + role.replace("_", "-")
        v.add_argument(flag, dest=role, metavar="SPEC", help=f"lstm_cell/gru_cell {role} file")
        v.add_argument(flag + "-frac", dest=role + "_frac", type=int, metavar="N", help=f"{role} frac bits")
    v.add_argument("--sa", dest="sa", action="append", metavar="ROLE=ZP,SCALE,FRAC",
                   help="per-tensor sa8/sa32 parameters of a role (input, prev_out, cell, weights, weights_in, "
                        "weights_out, bias, out); repeat per role")
    v.add_argument("--sa-dim", dest="sa_dim", action="append", metavar="ROLE=DIM",
                   help="quantize a float role's sa8 values per index of dimension DIM")
    v.add_argument("--direction", help="cells: forward (default) or backward")
    v.add_argument("--results", help="cells: all (default) or last")
    g.add_argument("--mode", help="RNN/LSTM mode: one_to_one, batch_to_batch (default), batch_to_last")
    g.add_argument("--act", help="RNN/LSTM output activation: tanh (default), sigm, none")
    g.add_argument("--relu-type", dest="relu", help="relu type: gen (default), relu_1, relu_6, none "
                   "(conv2d_chw / depthwise_conv2d_chw: cfg.relu, default none)")
    c = ap.add_argument_group("convolution, pooling, leaky ReLU, permute (MLI 1.1 cfg fields)")
    c.add_argument("--variant", help="a specialised entry point (generic, k3x3_str1_nopad, ...; default: the "
                   "dispatcher), or name it in --kernel (conv2d_chw_fx8_k1x1_str1_nopad)")
    for f in ("stride", "stride_width", "stride_height", "padding", "padding_left", "padding_right", "padding_top",
              "padding_bottom", "kernel_width", "kernel_height"):
        c.add_argument("--" + f.replace("_", "-"), dest=f, metavar="N",
                       help={"stride": "both strides (default 1)", "padding": "all four paddings (default 0)"}.get(
                           f, f"cfg.{f}" + (" (pooling)" if f.startswith("kernel") else "")))
    c.add_argument("--slope", metavar="N", help="leaky_relu: the slope's integer value (a rank-0 tensor)")
    c.add_argument("--slope-frac", dest="slope_frac", metavar="N", help="leaky_relu: the slope's frac bits")
    c.add_argument("--perm-dim", dest="perm_dim", metavar="1,2,0", help="permute: cfg.perm_dim")
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
    h.add_argument("--data", metavar="DIR", help="HAR (or with --kws, KWS) data folder (default: $MLI_HAR_DATA "
                   "or ../shared/data/har; $MLI_KWS_DATA or ../shared/data/kws)")
    k = ap.add_argument_group("the KWS example")
    k.add_argument("--kws", metavar="DIR", help="folder of one inference's firmware dumps: input and any of "
                   "L1_conv_lrelu ... softmax_out (as mli kws --dump writes them)")
    d = ap.add_argument_group("an mli deploy folder")
    d.add_argument("--deploy", metavar="DIR", help="the folder mli deploy wrote (plan.json, golden.c)")
    d.add_argument("--arena", metavar="FILE", help="with --deploy: a raw memory image of the arena from the target")
    d.add_argument("--after", metavar="LAYER", help="with --deploy: the image was taken after this step (a layer "
                   "name or step index; default: the end of a run)")
    d.add_argument("--sample", type=int, default=0, metavar="N",
                   help="with --deploy: the golden input the target ran (default 0)")
    o = ap.add_argument_group("run and output")
    o.add_argument("--vectors", action="store_true", default=None,
                   help="data-set run: the input's first axis (or an input folder's files) are vectors")
    o.add_argument("--rounding", choices=ROUNDINGS, help="mode checked first (default convergent)")
    o.add_argument("--no-alt-rounding", dest="alt", action="store_false", help="do not try the other rounding mode")
    o.add_argument("--isolate", action="store_true", default=None,
                   help="feed each layer the firmware's output of the previous layer")
    o.add_argument("--json", action="store_true", help="print the result as JSON")
    o.add_argument("-j", "--jobs", type=jobs_arg, default=1, metavar="N",
                   help="data-set run: runs of vectors (batched rows, up to 64 a run) checked at once on N "
                        "worker processes (0: one per core; default 1; one process when the data set is too "
                        "small to pay for starting them); the output is the same")
    o.add_argument("--plot", metavar="FILE.png", help="draw differences and S/N per time step (needs matplotlib)")
    return ap


def _cli_case(args):
    case = {"_cli": True}
    for key in ("kernel", "kind", "input", "input_frac", "weights", "weights_frac", "bias", "bias_frac",
                "prev_out", "prev_out_frac", "cell", "cell_frac", "in2", "in2_frac", "mode", "act", "relu",
                "out_frac", "per_step", "firmware", "firmware_cell", "float_ref") + _CFG_FLAGS:
        v = getattr(args, key)
        if v is not None:
            case[key] = v
    if args.mli == "2" or args.mli is None and any(getattr(args, k) is not None for k in _V2_FLAGS):
        case["mli"] = 2
    elif args.mli == "1" and is_v2_kernel(args.kernel):
        raise CaseError(f"--kernel: {args.kernel} is an MLI 2.x kernel (drop --mli 1)")
    for key in _V2_FLAGS:
        v = getattr(args, key)
        if v is not None and key not in ("sa", "sa_dim"):
            case[key] = v
    for text in args.sa or []:
        role, _, vals = text.partition("=")
        parts = vals.split(",")
        if role not in _SA_ROLES or len(parts) != 3:
            raise CaseError(f"--sa: expected ROLE=ZP,SCALE,FRAC with ROLE one of {', '.join(_SA_ROLES)}, "
                            f"got {text!r}")
        for sfx, p in zip(("_zp", "_scale", "_scale_frac"), parts):
            case[role + sfx] = p.strip()
    for text in args.sa_dim or []:
        role, _, d = text.partition("=")
        if role not in _SA_ROLES:
            raise CaseError(f"--sa-dim: expected ROLE=DIM with ROLE one of {', '.join(_SA_ROLES)}, got {text!r}")
        case[role + "_dim"] = d.strip()
    if case.get("mli") == 2:
        for k in ("per_step", "in2", "in2_frac", "mode"):
            if k in case:
                raise CaseError(f"{_CLI_FLAG.get(k, '--' + k)}: does not apply to MLI 2.x kernels")
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


_V2_FLAGS = ("weights_in", "weights_out", "weights_in_frac", "weights_out_frac", "sa", "sa_dim", "direction",
             "results")
_SA_ROLES = ("input", "prev_out", "cell", "weights", "weights_in", "weights_out", "bias", "out")

_CFG_FLAGS = ("variant", "stride", "stride_width", "stride_height", "padding", "padding_left", "padding_right",
              "padding_top", "padding_bottom", "kernel_width", "kernel_height", "slope", "slope_frac", "perm_dim")

_KERNEL_FLAGS = _V2_FLAGS + ("kernel", "kind", "weights", "bias", "prev_out", "cell", "in2", "mode", "act", "relu",
                 "out_frac", "per_step", "firmware", "firmware_cell", "weights_frac", "bias_frac",
                 "prev_out_frac", "cell_frac", "in2_frac", "time_axis") + _CFG_FLAGS


_SPEC_FLAGS = ("input", "weights", "bias", "prev_out", "cell", "in2", "weights_in", "weights_out", "firmware",
               "firmware_cell", "float_ref")


def _spec_path(value, base_dir=None):
    """The file a spec names (None when it names none)."""
    try:
        return parse_spec(value, base_dir=base_dir).path
    except (ValueError, TypeError, OSError):
        return value if isinstance(value, str) else None


def _strings(obj):
    """Every string in a case file's tables and lists."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("path", "file") or not isinstance(v, (int, float, bool)):
                yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def _plot_inputs(args):
    """(what, path) of every file and folder the run reads."""
    out = [(_CLI_FLAG.get(k, "--" + k.replace("_", "-")), _spec_path(getattr(args, k))) for k in _SPEC_FLAGS
           if getattr(args, k) is not None]
    for flag, v in (("--har", args.har), ("--kws", args.kws), ("--data", args.data), ("--arena", args.arena)):
        if v is not None:
            out.append((flag, v))
    if args.case:
        out.append(("the case file", args.case))
        try:
            case = load_case(args.case)
        except CaseError:
            case = {}
        base = os.path.dirname(os.fspath(args.case))
        out += [("the case file", _spec_path(v, base)) for v in _strings(case)]
    return [(w, p) for w, p in out if p]


def _refuse_plot_over_input(args):
    """--plot FILE must not be one of the run's inputs (compared as files:
    another spelling or a link counts), nor an existing file inside an input
    folder (a data set's vectors, the HAR dumps)."""
    target = os.fspath(args.plot)
    exists = os.path.exists(target)
    real = os.path.realpath(target)
    for what, p in _plot_inputs(args):
        try:
            same = exists and os.path.samefile(target, p)
        except (OSError, ValueError):
            same = False
        inside = False
        if exists and not same and os.path.isdir(p):
            inside = os.path.commonpath([real, os.path.realpath(p)]) == os.path.realpath(p)
        if same or inside:
            raise CaseError(f"--plot: would overwrite the input {target} (in {what}'s folder {p})" if inside
                            else f"--plot: would overwrite the input {p}" + ("" if p == target else f" ({what})"))


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
        _refuse_plot_over_input(args)   # before matplotlib is imported (it may be missing)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CaseError("--plot: needs matplotlib, which is not installed (pip install matplotlib)") from None
    used = [_CLI_FLAG.get(k, "--" + k) for k in _KERNEL_FLAGS if getattr(args, k) is not None]
    if args.deploy is not None or args.arena is not None:
        if args.deploy is None or args.arena is None:
            raise CaseError("--deploy and --arena go together: the folder mli deploy wrote and the arena image")
        if args.case or args.har is not None or args.kws is not None or used:
            raise CaseError("--deploy: give no case file, --har, --kws or kernel flags with it")
        res = crosscheck_deploy(args.deploy, args.arena, after=args.after, sample=args.sample)
    elif args.kws is not None:
        if args.case or args.har is not None:
            raise CaseError("--kws: give one of a case file, --har or --kws")
        extra = used + [flag for flag, v in (("--in", args.input), ("--in-frac", args.input_frac),
                                             ("--float-ref", args.float_ref), ("--vectors", args.vectors))
                        if v is not None]
        extra += [flag for flag, v, default in (("--depth", args.depth, 16), ("--layer3", args.layer3, "custom"))
                  if v != default]
        if extra:
            raise CaseError(f"{extra[0]}: does not apply with --kws (the folder holds the input)")
        res = crosscheck_kws(args.kws, data_dir=args.data, rounding=args.rounding or "convergent",
                             check_other_rounding=args.alt, isolate=bool(args.isolate))
    elif args.har is not None:
        if args.case:
            raise CaseError("--har: give either a case file or --har, not both")
        if used:
            raise CaseError(f"{used[0]}: does not apply with --har")
        if args.input_frac is not None:
            raise CaseError("--in-frac: does not apply with --har (the depth fixes the input format)")
        res = crosscheck_har(args.har, x=args.input, depth=args.depth, layer3=args.layer3, data_dir=args.data,
                             float_ref=args.float_ref, rounding=args.rounding or "convergent",
                             check_other_rounding=args.alt, vectors=bool(args.vectors), progress=show_bar,
                             on_result=stream, jobs=args.jobs)
    elif args.case:
        if used or args.input is not None or args.input_frac is not None or args.float_ref is not None:
            raise CaseError(f"{(used or ['--in'])[0]}: the case file describes the run; drop the kernel flags")
        res = crosscheck(args.case, rounding=args.rounding, check_other_rounding=args.alt, isolate=args.isolate,
                         vectors=args.vectors, progress=show_bar, on_result=stream, jobs=args.jobs)
    else:
        if args.kernel is None:
            raise CaseError("give a case file, --kernel with its files, --har DIR or --kws DIR "
                            "(see mli crosscheck --help)")
        case = _cli_case(args)
        if args.input is not None and os.path.isdir(args.input):
            case["vectors"] = True
        res = crosscheck(case, base_dir=None, rounding=args.rounding, check_other_rounding=args.alt,
                         isolate=args.isolate, vectors=args.vectors, progress=show_bar, on_result=stream,
                         jobs=args.jobs)
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
    except BrokenPipeError:  # the reader of stdout left: not an input error (mli.tools.cli exits quietly)
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

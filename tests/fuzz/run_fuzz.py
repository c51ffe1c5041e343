"""Run one fuzz target in this process and report.

    python tests/fuzz/run_fuzz.py --target kernels --examples 300 --seed 0
    python tests/fuzz/run_fuzz.py --target ir --examples 5000 --keep-going
    python tests/fuzz/run_fuzz.py --target kernels --replay "{'family': ...}"

Targets: kernels (public Python kernel API), bridge (mli._core), ir
(mli.ir.read_model + running the model), io (IDX / raw / C-array / npz
readers), cli (mli crosscheck / mli export-c main()).

Exit 0 when every example was acceptable (success, or a ValueError /
TypeError / NotImplementedError / OSError subclass with a message; for the
CLIs exit 0/1/2 and no traceback) and caller memory is intact; 1 otherwise,
with the (shrunk) reproducing spec on stderr.  The last line on stdout is a
JSON summary with the number of examples run.  The spec of the example being
run is written to --last-spec first, so a crash (segfault, abort) still
leaves its reproduction.  tests/test_fuzz.py runs this in a subprocess.
"""
import argparse
import ast
import faulthandler
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
try:  # the mli the environment provides (installed, or PYTHONPATH); else this checkout's
    import mli  # noqa: F401
except ImportError:
    sys.path.insert(1, ROOT)

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings  # noqa: E402

from common import Alarm, Finding, LastSpec, Stats, Timeout, check_exception, eprint, short  # noqa: E402

TARGETS = ("kernels", "bridge", "ir", "io", "cli")


def _target(name):
    """(strategy, executor, extra accepted exception types, per-example seconds)."""
    if name == "kernels":
        import fz_kernels as m
        return m.kernel_spec(), m.run_kernel_spec, (), 5
    if name == "bridge":
        import fz_kernels as m
        # the bridge's typed C parameters (int, uint32_t) raise Cython's OverflowError for
        # out-of-range Python ints: accepted here (internal API), not in the public API
        return m.bridge_spec(), m.run_bridge_spec, (OverflowError,), 5
    if name == "ir":
        import fz_ir as m
        return m.ir_spec(), m.run_ir_spec, (), 3
    if name == "io":
        import fz_io as m
        return m.io_spec(), m.run_io_spec, m.EXTRA_OK, 3
    if name == "cli":
        import fz_cli as m
        return m.cli_spec(), m.run_cli_spec, (), 10
    raise SystemExit(f"unknown target {name!r} (one of {', '.join(TARGETS)})")


def run_one(spec, executor, extra_ok, seconds, stats):
    """Run one spec; raise Finding for a disallowed outcome."""
    stats.examples += 1
    try:
        with Alarm(seconds):
            executor(spec)
    except Timeout:
        stats.timeouts += 1
        if len(stats.timeout_specs) < 5:
            stats.timeout_specs.append(short(spec, 600))
        return
    except Finding:
        raise
    except BaseException as e:  # noqa: B902 - classify everything
        if isinstance(e, (KeyboardInterrupt, SystemExit)) and not isinstance(e, SystemExit):
            raise
        reason = check_exception(e, extra_ok)
        if reason is not None:
            raise Finding(reason) from e
        stats.errors += 1
        key = type(e).__name__
        stats.error_types[key] = stats.error_types.get(key, 0) + 1
        return
    stats.ok += 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True, choices=TARGETS)
    ap.add_argument("--examples", type=int, default=int(os.environ.get("MLI_FUZZ_EXAMPLES", 300)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep-going", action="store_true",
                    help="record every distinct finding instead of stopping (and shrinking) at the first")
    ap.add_argument("--last-spec", help="file that always holds the spec being run")
    ap.add_argument("--replay", help="run this one spec (a Python literal, as printed) and report")
    ap.add_argument("--json", help="also write the summary to this file")
    ap.add_argument("--mem-limit-gb", type=float, default=8.0, help="address-space limit (0: none)")
    args = ap.parse_args(argv)

    faulthandler.enable()
    sanitized = "asan" in os.environ.get("LD_PRELOAD", "") or "ASAN_OPTIONS" in os.environ
    if args.mem_limit_gb and not sanitized and not os.environ.get("MLI_FUZZ_NO_RLIMIT"):
        # ASan reserves terabytes of address space: no RLIMIT_AS under it
        lim = int(args.mem_limit_gb * 2**30)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        except (ValueError, OSError):
            pass
    strategy, executor, extra_ok, seconds = _target(args.target)
    stats = Stats(args.target)
    last = LastSpec(args.last_spec)
    t0 = time.perf_counter()

    if args.replay is not None:
        spec = ast.literal_eval(args.replay)
        last.write(repr(spec))
        try:
            run_one(spec, executor, extra_ok, 0, stats)
        except Finding as f:
            import traceback
            traceback.print_exception(f.__cause__ or f)
            eprint(f"FINDING: {f}")
            stats.findings[str(f)] = (str(f), short(spec))
            _report(stats, t0, args)
            return 1
        _report(stats, t0, args)
        return 0

    failures = []

    @hseed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=False,
              phases=[Phase.generate, Phase.shrink] if not args.keep_going else [Phase.generate])
    @given(spec=strategy)
    def fuzz(spec):
        last.write(repr(spec))
        try:
            run_one(spec, executor, extra_ok, seconds, stats)
        except Finding as f:
            key = str(f).split(" at ")[-1] if " at " in str(f) else str(f)[:120]
            if args.keep_going:
                if key not in stats.findings:
                    stats.findings[key] = (str(f), short(spec))
                    eprint(f"FINDING [{args.target}]: {f}\n  spec: {short(spec)}")
                return
            failures.append((str(f), spec))
            raise

    try:
        fuzz()
    except Finding as f:
        spec = failures[-1][1] if failures else None
        stats.findings[str(f)] = (str(f), short(spec))
        eprint(f"FINDING [{args.target}] (shrunk): {f}\n  reproduce: python tests/fuzz/run_fuzz.py "
               f"--target {args.target} --replay {json.dumps(repr(spec))}")
    _report(stats, t0, args)
    return 1 if stats.findings else 0


def _report(stats, t0, args):
    d = stats.as_dict()
    d["seconds"] = round(time.perf_counter() - t0, 2)
    d["seed"] = args.seed
    if stats.target == "cli":
        import fz_cli
        d["exit_codes"] = {f"{cmd} {code}": n for (cmd, code), n in sorted(fz_cli.CODES.items(), key=str)}
        d["catch_all"] = [{"message": m, "spec": s} for m, s in fz_cli.CATCH_ALL.values()]
    line = json.dumps(d)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    print(f"{stats.target}: {stats.examples} examples ran ({stats.ok} ok, {stats.errors} clean errors, "
          f"{stats.timeouts} timeouts, {len(stats.findings)} findings) in {d['seconds']} s", flush=True)
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())

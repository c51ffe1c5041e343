"""``mli demo``: quantize a seeded synthetic RNN and compare fx8, fx16 and
fx8w16d, in all three modes, against the float model (S/N in dB), with the
time per step of the C kernel."""
import argparse
import os
import sys
import time

import numpy as np

from .. import kernels as K
from ..enums import RnnActivation, RnnMode
from ..metrics import sn_db
from ..tensor import Tensor, frac_bits_for

KIND_TYPES = {"fx8": ("fx8", "fx8"), "fx16": ("fx16", "fx16"), "fx8w16d": ("fx16", "fx8")}


def synthetic_rnn(n_in=32, n_state=32, steps=100, seed=0):
    """A float tanh RNN and its input sequence (pre-activations within +-4,
    inside the 3 integer bits MLI's kernels keep before the activation)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.5 / np.sqrt(n_in + n_state), (n_state, n_in + n_state))
    b = rng.normal(0, 0.1, n_state)
    t = np.arange(steps)[:, None]
    x = 0.6 * np.sin(0.05 * t * (1 + np.arange(n_in)) / n_in * 6) + rng.normal(0, 0.2, (steps, n_in))
    return x.astype(np.float32), w.astype(np.float32), b.astype(np.float32)


def float_rnn(x, w, b, h0):
    h, ys = h0.astype(np.float64), []
    for xt in x:
        h = np.tanh(w @ np.concatenate([xt, h]) + b)
        ys.append(h)
    return np.array(ys)


def quantize(x, w, b, kind):
    data, weights = KIND_TYPES[kind]
    fw = frac_bits_for(w, weights)
    fb = min(frac_bits_for(b, weights), fw + frac_bits_for(x, data))
    q = 7 if data == "fx8" else 15
    return (Tensor.from_float(x, data, frac_bits_for(x, data)), Tensor.from_float(w, weights, fw),
            Tensor.from_float(b, weights, fb), Tensor.from_float(np.zeros(w.shape[0]), data, q))


def run(kind, mode, x, w, b, repeats=20, rounds=5):
    """The output of one call and the time per step of the C kernel.

    Batch modes: one call runs the whole sequence; one-to-one: one call per
    step, bound once with :func:`mli.prepare` (no marshalling or allocation
    per call, as ``benchmarks/`` steps a cell), so the figure is the kernel
    plus the call of a bound C function.  Each figure is the best of
    `rounds` rounds of `repeats` calls, after one warm-up call."""
    xt, wt, bt, h0 = quantize(x, w, b, kind)
    cfg = K.RnnCellConfig(mode=mode, act=RnnActivation.TANH)
    fn = getattr(K, f"basic_rnn_cell_{kind}")
    xin = Tensor(xt.numpy()[0], xt.frac_bits) if mode == RnnMode.ONE_TO_ONE else xt
    y = fn(xin, h0, wt, bt, cfg)   # the result, and the warm-up
    out = Tensor(np.zeros_like(y.numpy()), y.frac_bits)
    call = K.prepare(fn, xin, h0, wt, bt, cfg, out=out)
    call()
    steps = 1 if mode == RnnMode.ONE_TO_ONE else len(x)
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeats):
            call()
        best = min(best, time.perf_counter() - t0)
    return y.to_float(), best / repeats / steps


#: largest sizes the demo accepts: beyond them the run takes minutes and the
#: float model gigabytes, and nothing new is shown
MAX_INPUTS = 1024
MAX_STATE = 1024
MAX_STEPS = 10000


class _UsageError(ValueError):
    """A bad option; the message names it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(f"{message} (see mli demo --help)")


def _bounded(value, option, top):
    if not 1 <= value <= top:
        raise _UsageError(f"{option}: expected 1..{top}, got {value}")
    return value


def main(argv=None):
    """``mli demo``: returns 0, or 2 with a one-line message for a bad option."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _run(argv)
    except SystemExit as e:  # --help
        return int(e.code or 0) if isinstance(e.code, int) else 0
    except _UsageError as e:
        print(f"mli demo: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout left (mli.tools.cli exits quietly)
        raise
    except Exception as e:  # never a traceback
        if os.environ.get("MLI_DEBUG"):
            raise
        print(f"mli demo: error: {type(e).__name__}: {e} (set MLI_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2


def _run(argv):
    ap = _Parser(prog="mli demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=32, help=f"input size N, 1..{MAX_INPUTS} (default 32)")
    ap.add_argument("--state", type=int, default=32, help=f"state size M, 1..{MAX_STATE} (default 32)")
    ap.add_argument("--steps", type=int, default=100, help=f"sequence length T, 1..{MAX_STEPS} (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights and inputs, >= 0 (default 0)")
    args = ap.parse_args(argv)
    _bounded(args.inputs, "--inputs", MAX_INPUTS)
    _bounded(args.state, "--state", MAX_STATE)
    _bounded(args.steps, "--steps", MAX_STEPS)
    if args.seed < 0:   # numpy's generators take no negative seed
        raise _UsageError(f"--seed: expected an integer >= 0, got {args.seed}")
    x, w, b = synthetic_rnn(args.inputs, args.state, args.steps, args.seed)
    ref = float_rnn(x, w, b, np.zeros(args.state))
    ref_one = float_rnn(x[:1], w, b, np.zeros(args.state))[-1]
    print(f"mli demo: synthetic tanh RNN, N={args.inputs} M={args.state} T={args.steps} seed={args.seed}")
    print("S/N in dB of the fixed-point output against the float model; time per step of the C kernel")
    print("(batch modes: one call for all T steps; one_to_one: one call per step, bound once by mli.prepare;")
    print(" best of 5 rounds after a warm-up)\n")
    print(f"{'kind':<9} {'mode':<16} {'S/N dB':>8} {'us/step':>9}")
    for kind in ("fx8", "fx16", "fx8w16d"):
        for mode in RnnMode:
            y, per_step = run(kind, mode, x, w, b)
            want = {RnnMode.ONE_TO_ONE: ref_one, RnnMode.BATCH_TO_BATCH: ref, RnnMode.BATCH_TO_LAST: ref[-1]}[mode]
            print(f"{kind:<9} {mode.name.lower():<16} {sn_db(want, y):8.1f} {per_step * 1e6:9.2f}")
    return 0

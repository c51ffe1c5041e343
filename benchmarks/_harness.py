"""Timing, data and formatting helpers for ``benchmarks/bench.py``.

Nothing here asserts on times: the benchmark reports, it never fails on speed.
Import this module only after the thread-count environment variables are set
(``bench.py`` does that before it imports numpy).
"""
from __future__ import annotations

import gc
import itertools
import os
import platform
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import mli

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# (N, M, T) and a label; the lower bounds for the fx16 LSTM, per sequence
SHAPES = [(32, 32, 128), (64, 64, 50), (128, 128, 100), (512, 256, 25)]
SHAPE_LABEL = {(32, 32, 128): "HAR"}
BOUND_US = {(32, 32, 128): 11.0, (64, 64, 50): 31.0, (128, 128, 100): 243.0, (512, 256, 25): 449.0}

KINDS = ("fx16", "fx8", "fx8w16d")
# Distinct input sequences cycled through by the "fresh data" timings.  The
# kernels' scalar rounding code branches on the data: timing one input again
# and again lets the branch predictor learn the whole call (measured: up to
# 1.5x faster than with new data), which real use never sees.  8 distinct
# inputs already defeat it on the machine this was written on; 32 to be safe.
N_INPUTS = 32
DATA_DTYPE = {"fx16": np.int16, "fx8": np.int8, "fx8w16d": np.int16}
WEIGHT_EL = {"fx16": "fx16", "fx8": "fx8", "fx8w16d": "fx8"}
DATA_EL = {"fx16": "fx16", "fx8": "fx8", "fx8w16d": "fx16"}
# frac bits: input x (values in [-1, 1]), state h (= output frac with a tanh
# output: 15 / 7), cell c, weights (Q15 / Q7)
IN_FRAC = {"fx16": 12, "fx8": 5, "fx8w16d": 12}
STATE_FRAC = {"fx16": 15, "fx8": 7, "fx8w16d": 15}
CELL_FRAC = {"fx16": 12, "fx8": 5, "fx8w16d": 12}
W_FRAC_MAX = {"fx16": 15, "fx8": 7, "fx8w16d": 7}


def shape_name(shape):
    n, m, t = shape
    label = SHAPE_LABEL.get(shape)
    return f"{n}x{m}x{t}" + (f" ({label})" if label else "")


def parse_shapes(text):
    """'32x32x128,64x64x50' -> [(32, 32, 128), (64, 64, 50)]."""
    shapes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            n, m, t = (int(v) for v in part.lower().split("x"))
        except ValueError:
            raise SystemExit(f"--shapes: expected NxMxT[,NxMxT...], got {part!r}") from None
        if min(n, m, t) < 1:
            raise SystemExit(f"--shapes: sizes must be >= 1, got {part!r}")
        shapes.append((n, m, t))
    if not shapes:
        raise SystemExit("--shapes: no shape given")
    return shapes


# ----------------------------------------------------------------------------- timing
@dataclass
class Timing:
    """Per-call times in ns: best (reported), median of the repeats, and how
    they were taken (inner calls per repeat, repeats)."""

    best_ns: float
    median_ns: float
    inner: int
    repeats: int
    note: str = ""

    @property
    def us(self):
        return self.best_ns / 1e3

    def as_dict(self):
        return {"best_ns": self.best_ns, "median_ns": self.median_ns, "inner": self.inner,
                "repeats": self.repeats, **({"note": self.note} if self.note else {})}


@dataclass
class Budget:
    """How long each measurement runs: after `warmup` calls, repeats of as many
    calls as fill `target_ns` (a short window, so that some windows escape
    preemption on a shared machine), until `total_ns` is spent and at least
    `min_repeats` repeats are done (at most `max_repeats`)."""

    target_ns: int = 1_000_000
    total_ns: int = 300_000_000
    min_repeats: int = 5
    max_repeats: int = 5_000
    warmup: int = 2
    max_inner: int = 100_000
    rounds: int = 5          # interleaving rounds of measure_many


def _calibrate(fn, budget):
    for _ in range(budget.warmup):
        fn()
    t0 = time.perf_counter_ns()
    fn()
    one = max(time.perf_counter_ns() - t0, 1)
    return int(min(budget.max_inner, max(1, budget.target_ns // one)))


def _repeats(fn, inner, total_ns, min_repeats, cap, out):
    """Append per-call means of repeats of `inner` calls until `total_ns` is spent."""
    clock = time.perf_counter_ns
    start = clock()
    n = 0
    while n < cap and (n < min_repeats or clock() - start < total_ns):
        rng = range(inner)
        t0 = clock()
        for _ in rng:
            fn()
        out.append((clock() - t0) / inner)
        n += 1


def measure(fn, budget: Budget, *, max_repeats=None) -> Timing:
    """Best (minimum over repeats) of the mean per-call time of ``fn()`` over
    one repeat, with time.perf_counter_ns and the GC off; also the median."""
    return measure_many({"fn": (fn, None)}, budget, rounds=1, max_repeats=max_repeats)["fn"]


def measure_many(fns, budget: Budget, *, rounds=3, max_repeats=None):
    """Time several functions interleaved: ``rounds`` rounds, each giving every
    function 1/rounds of its budget in turn, so that a change of machine load
    during the run hits all of them alike.  ``fns`` maps a name to ``(fn,
    setup)``; ``setup()`` (or None) runs before each of that function's blocks
    (e.g. to switch the ISA path).  Returns {name: Timing}."""
    inner = {}
    for name, (fn, setup) in fns.items():
        if setup is not None:
            setup()
        inner[name] = _calibrate(fn, budget)
    cap = budget.max_repeats if max_repeats is None else min(budget.max_repeats, max_repeats)
    per_call = {name: [] for name in fns}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            for name, (fn, setup) in fns.items():
                if setup is not None:
                    setup()
                _repeats(fn, inner[name], budget.total_ns // rounds,
                         -(-budget.min_repeats // rounds), max(1, cap // rounds), per_call[name])
    finally:
        if gc_was:
            gc.enable()
    return {name: Timing(min(v), float(np.median(v)), inner[name], len(v)) for name, v in per_call.items()}


# ----------------------------------------------------------------------------- data
def _gauss_weights(rng, shape, fan_in):
    """Weights ~ N(0, 1/sqrt(fan_in)) (the brief's "1/sqrt(N+M)" scale)."""
    return rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape)


def quantized(values, el, frac_max):
    """mli.Tensor of `values` at min(frac_max, mli.frac_bits_for(values)): the
    nominal Q15 / Q7, lowered only if that would saturate."""
    frac = min(frac_max, mli.frac_bits_for(values, el))
    return mli.Tensor.from_float(values, el, frac)


@dataclass
class CellCase:
    """Everything one LSTM / basic RNN / FC call needs, with preallocated outputs."""

    cell: str                 # "lstm", "rnn" or "fc"
    kind: str
    shape: tuple
    x: mli.Tensor = None
    h: mli.Tensor = None
    c: mli.Tensor = None
    w: mli.Tensor = None
    b: mli.Tensor = None
    cfg: mli.RnnCellConfig = None
    out: mli.Tensor = None
    cell_out: mli.Tensor = None
    float_w: np.ndarray = None    # float weights (for the float baselines), MLI gate order
    float_b: np.ndarray = None
    float_x: np.ndarray = None
    xs: list = field(default_factory=list)   # N_INPUTS distinct inputs (xs[0] is x)
    extra: dict = field(default_factory=dict)

    @property
    def fn(self):
        name = {"lstm": "lstm_cell_", "rnn": "basic_rnn_cell_", "fc": "fully_connected_"}[self.cell]
        return getattr(mli, name + self.kind)

    def call(self):
        """The plain wrapper call with every output preallocated."""
        if self.cell == "lstm":
            return self.fn(self.x, self.h, self.w, self.b, self.cfg, self.c, out=self.out,
                           cell_out=self.cell_out)
        if self.cell == "rnn":
            return self.fn(self.x, self.h, self.w, self.b, self.cfg, out=self.out)
        return self.fn(self.x, self.w, self.b, out=self.out)

    def caller(self, fresh=True):
        """A zero-argument closure for the timer (no attribute look-ups in the
        loop).  ``fresh``: each call takes the next of the distinct inputs
        ``xs`` (cycling); else every call repeats the same input ``x``."""
        fn, x, h, w, b, cfg, c, out, co = (self.fn, self.x, self.h, self.w, self.b, self.cfg,
                                           self.c, self.out, self.cell_out)
        if fresh and len(self.xs) > 1:
            nxt = itertools.cycle(self.xs).__next__
            if self.cell == "lstm":
                return lambda: fn(nxt(), h, w, b, cfg, c, out=out, cell_out=co)
            if self.cell == "rnn":
                return lambda: fn(nxt(), h, w, b, cfg, out=out)
            return lambda: fn(nxt(), w, b, out=out)
        if self.cell == "lstm":
            return lambda: fn(x, h, w, b, cfg, c, out=out, cell_out=co)
        if self.cell == "rnn":
            return lambda: fn(x, h, w, b, cfg, out=out)
        return lambda: fn(x, w, b, out=out)

    @property
    def macs(self):
        """Multiply-accumulates of one sequence (LSTM 4*M*(N+M)*T, RNN M*(N+M)*T)
        or, for FC, of one call (4M x (N+M): the dense of one LSTM step)."""
        n, m, t = self.shape
        return {"lstm": 4 * m * (n + m) * t, "rnn": m * (n + m) * t, "fc": 4 * m * (n + m)}[self.cell]


def make_case(cell, kind, shape, *, seed=0, mode=None, ir=True, n_inputs=N_INPUTS):
    """Realistic fixed-point data: weights quantized from N(0, 1/sqrt(N+M)) floats
    at Q15 (16-bit) / Q7 (8-bit), bias from N(0, 0.1) at the weights' format
    (or lower if needed), inputs uniform in [-1, 1] at Q12 (16-bit data) / Q5
    (8-bit data), h0 = 0 at Q15 / Q7, c0 uniform in [-0.5, 0.5] at Q12 / Q5.

    ``mode`` defaults to batch-to-batch for the cells; ``ir=True`` preallocates
    cfg.ir (the scratch MLI needs) so the timed call allocates nothing.
    ``n_inputs`` distinct inputs are made (``case.xs``; ``case.x`` is the first);
    the same seed gives the same weights, bias and inputs whatever the mode."""
    n, m, t = shape
    rng = np.random.default_rng(seed)
    del_, wel = DATA_EL[kind], WEIGHT_EL[kind]
    dtype = DATA_DTYPE[kind]
    case = CellCase(cell, kind, shape)
    if mode is None:
        mode = mli.RNN_BATCH_TO_BATCH
    if cell == "fc":
        fw = _gauss_weights(rng, (4 * m, n + m), n + m)
        fb = rng.normal(0.0, 0.1, 4 * m)
        case.w = quantized(fw, wel, W_FRAC_MAX[kind])
        case.b = quantized(fb, wel, min(case.w.frac_bits, IN_FRAC[kind] + case.w.frac_bits))
        xrng = np.random.default_rng([seed, 1])
        case.xs = [mli.Tensor.from_float(xrng.uniform(-1, 1, n + m), del_, IN_FRAC[kind])
                   for _ in range(max(1, n_inputs))]
        case.x = case.xs[0]
        case.out = mli.Tensor.empty(4 * m, del_, IN_FRAC[kind])
        case.float_w, case.float_b = fw, fb
        return case
    gates = 4 if cell == "lstm" else 1
    wshape = (4, m, n + m) if cell == "lstm" else (m, n + m)
    bshape = (4, m) if cell == "lstm" else (m,)
    fw = _gauss_weights(rng, wshape, n + m)
    fb = rng.normal(0.0, 0.1, bshape)
    case.w = quantized(fw, wel, W_FRAC_MAX[kind])
    case.b = quantized(fb, wel, min(case.w.frac_bits, IN_FRAC[kind] + case.w.frac_bits))
    steps = t if mode != mli.RNN_ONE_TO_ONE else 1
    xrng = np.random.default_rng([seed, 1])
    fxs = [xrng.uniform(-1, 1, (t, n)) for _ in range(max(1, n_inputs))]
    if mode == mli.RNN_ONE_TO_ONE:
        fxs = [f[0] for f in fxs]
    case.xs = [mli.Tensor.from_float(f, del_, IN_FRAC[kind]) for f in fxs]
    case.x, fx = case.xs[0], fxs[0]
    case.h = mli.Tensor.from_float(np.zeros(m), del_, STATE_FRAC[kind])
    out_shape = (steps, m) if mode == mli.RNN_BATCH_TO_BATCH else (m,)
    case.out = mli.Tensor.empty(out_shape, del_, STATE_FRAC[kind])
    irt = mli.Tensor(np.zeros(gates * m, dtype)) if ir else None
    case.cfg = mli.RnnCellConfig(mode=mode, act=mli.RNN_ACT_TANH, ir=irt)
    if cell == "lstm":
        fc = rng.uniform(-0.5, 0.5, m)
        case.c = mli.Tensor.from_float(fc, del_, CELL_FRAC[kind])
        case.cell_out = mli.Tensor.empty(m, del_, CELL_FRAC[kind])
        case.extra["float_c"] = fc
    case.float_w, case.float_b, case.float_x = fw, fb, fx
    return case


# ----------------------------------------------------------------------------- float baselines
def numpy_lstm_fn(shape, seed=0, n_inputs=N_INPUTS):
    """A natural vectorized float32 LSTM in numpy: per step one [4M, N+M] matvec
    on concat(x_t, h), then the gate activations and the cell update.  Each
    call takes the next of `n_inputs` distinct input sequences."""
    n, m, t = shape
    rng = np.random.default_rng(seed)
    W = _gauss_weights(rng, (4 * m, n + m), n + m).astype(np.float32)
    b = rng.normal(0.0, 0.1, 4 * m).astype(np.float32)
    nxt = itertools.cycle([rng.uniform(-1, 1, (t, n)).astype(np.float32)
                           for _ in range(max(1, n_inputs))]).__next__
    h0 = np.zeros(m, np.float32)
    c0 = rng.uniform(-0.5, 0.5, m).astype(np.float32)
    one = np.float32(1)

    def run():
        x = nxt()
        h, c = h0, c0
        ys = np.empty((t, m), np.float32)
        for k in range(t):
            z = W @ np.concatenate((x[k], h)) + b
            i = one / (one + np.exp(-z[:m]))
            g = np.tanh(z[m:2 * m])
            f = one / (one + np.exp(-z[2 * m:3 * m]))
            o = one / (one + np.exp(-z[3 * m:]))
            c = f * c + i * g
            h = o * np.tanh(c)
            ys[k] = h
        return ys, c

    return run


def torch_lstm_fn(shape, seed=0, n_inputs=N_INPUTS):
    """PyTorch float32 nn.LSTM(N, M) over a [T, 1, N] sequence, inference mode,
    cycling through `n_inputs` distinct inputs.  None when torch is not importable."""
    try:
        import torch
    except Exception:
        return None
    n, m, t = shape
    torch.manual_seed(seed)
    lstm = torch.nn.LSTM(n, m).eval()
    nxt = itertools.cycle([torch.rand(t, 1, n) * 2 - 1 for _ in range(max(1, n_inputs))]).__next__
    h0 = torch.zeros(1, 1, m)
    c0 = torch.rand(1, 1, m) - 0.5

    def run():
        with torch.inference_mode():
            return lstm(nxt(), (h0, c0))

    return run


# ----------------------------------------------------------------------------- environment
def cpu_model():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" not in line:
                    if info:
                        break
                    continue
                k, v = (s.strip() for s in line.split(":", 1))
                info.setdefault(k, v)
    except OSError:
        return platform.processor() or platform.machine(), ""
    flags = set(info.get("flags", "").split())
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni")
            if f in flags]
    model = info.get("model name", platform.processor() or "?")
    fam = f"family {info.get('cpu family', '?')} model {info.get('model', '?')}"
    return f"{model} ({info.get('vendor_id', '?')}, {fam}, {info.get('cpu MHz', '?')} MHz)", " ".join(simd)


def _proc_stat():
    """(busy, steal) jiffies of all CPUs from /proc/stat, or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal


class LoadMonitor:
    """How busy the machine was with other work while the benchmark ran:
    all CPUs' busy time (/proc/stat) minus this process's CPU time, per
    second of wall time (0 = nothing else ran; 1 = one other CPU kept busy)."""

    def __init__(self):
        self.t0, self.cpu0, self.stat0 = time.perf_counter(), time.process_time(), _proc_stat()

    def result(self):
        wall = time.perf_counter() - self.t0
        own = time.process_time() - self.cpu0
        stat = _proc_stat()
        out = {"wall_s": round(wall, 1), "own_cpu_share": round(own / wall, 2)}
        if stat and self.stat0:
            hz = os.sysconf("SC_CLK_TCK")
            busy = (stat[0] - self.stat0[0]) / hz
            out["other_cpus_busy"] = round(max(0.0, busy - own) / wall, 2)
            out["steal_cpus"] = round((stat[1] - self.stat0[1]) / hz / wall, 2)
        return out


def environment(torch_version):
    model, simd = cpu_model()
    core = getattr(mli, "_core", None)
    core_file = getattr(core, "__file__", "?")
    try:
        built = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(core_file)))
    except OSError:
        built = "?"
    return {
        "mli_isa": mli.isa(),
        "mli_supported_isas": mli.supported_isas(),
        "mli_version": getattr(mli, "__version__", "?"),
        "mli_core": f"{core_file} (built {built})",
        "mli_rounding": str(mli.get_rounding()),
        "MLIPY_ISA": os.environ.get("MLIPY_ISA", "(unset)"),
        "cpu": model,
        "cpu_simd_flags": simd,
        "logical_cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "python": sys.version.split()[0] + f" ({platform.python_implementation()})",
        "numpy": np.__version__,
        "torch": torch_version,
        "threads": {v: os.environ.get(v) for v in THREAD_VARS},
        "platform": platform.platform(),
    }


# ----------------------------------------------------------------------------- formatting
def fmt_us(us):
    if us is None:
        return "-"
    if us >= 1e5:
        return f"{us / 1e3:,.0f} ms"
    if us >= 100:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def fmt_t(us):
    """A time with its unit: '86.1 us', '1,701 ms'."""
    if us is None:
        return "-"
    s = fmt_us(us)
    return s if s.endswith("ms") else s + " us"


def fmt_x(r):
    if r is None:
        return "-"
    if r >= 100:
        return f"{r:,.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.2f}x"


def table(headers, rows, align=None):
    """A GitHub-markdown table (also readable as plain text)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    width = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or ["<"] + [">"] * (len(headers) - 1)
    out = []
    for k, r in enumerate(cells):
        out.append("| " + " | ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, width)) + " |")
        if k == 0:
            out.append("|" + "|".join(("-" * (w + 1) + ":") if a == ">" else ("-" * (w + 2))
                                      for a, w in zip(align, width)) + "|")
    return "\n".join(out)

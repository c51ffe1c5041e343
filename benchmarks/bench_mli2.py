"""MLI 2.0.2 kernels of mli.v2: LSTM and GRU whole-sequence calls per kind
(fx16, fx16_fx8_fx8, sa8_sa8_sa32) at four shapes (N x M x T), side by side
with the MLI 1.1 fx16 LSTM of mli.  ``run(log) -> dict`` (for bench.py);
``python benchmarks/bench_mli2.py`` prints the table.  Best of several
repeats, microseconds per sequence, one thread."""
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import mli  # noqa: E402
import mli.v2 as v  # noqa: E402

SHAPES = [(32, 32, 128), (64, 64, 50), (128, 128, 100), (512, 256, 25)]
KINDS = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32")


def _best_us(fn, min_time=0.3, min_rep=3):
    fn()
    best, total, n = float("inf"), 0.0, 0
    while n < min_rep or total < min_time:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, n = min(best, dt), total + dt, n + 1
    return best * 1e6


def _v2_case(cell, kind, shape, seed=0):
    n, m, t = shape
    g = 4 if cell == "lstm" else 3
    rng = np.random.default_rng(seed)
    wf_in = rng.normal(0, 1 / np.sqrt(n + m), (g, n, m))
    wf_out = rng.normal(0, 1 / np.sqrt(n + m), (g, m, m))
    bf = rng.normal(0, 0.1, (g, m))
    xf = rng.uniform(-1, 1, (t, n))
    if kind == "sa8_sa8_sa32":
        x = v.Tensor.from_float(xf, "sa8")
        h0 = v.Tensor.sa(np.zeros(m), 0, 16384, 21)
        wi = v.Tensor.from_float(wf_in, "sa8", dim=0, symmetric=True)
        wo = v.Tensor.from_float(wf_out, "sa8", dim=0, symmetric=True)
        # the bias scale MLI's check expects: in.scale * weights.scale per gate
        s_in, f_in = int(x.scale[0]), int(x.scale_frac_bits[0])
        scales = [(s_in * int(s)) >> 15 for s in wi.scale]
        fbs = [f_in + int(f) - 15 for f in wi.scale_frac_bits]
        q = np.stack([np.round(bf[k] / (scales[k] * 2.0 ** -fbs[k])) for k in range(g)]).astype(np.int32)
        b = v.Tensor.sa(q, [0] * g, scales, fbs, dim=0, el_type="sa32")
        cell_t = v.Tensor.sa(np.zeros(m), 0, 16384, 17)
        out = v.Tensor.sa(np.zeros((t, m)), 0, 16384, 21)
    else:
        wel = "fx16" if kind == "fx16" else "fx8"
        x = v.Tensor.from_float(xf, "fx16", frac_bits=12)
        h0 = v.Tensor.fx(np.zeros(m), 15)
        wfrac = 15 if wel == "fx16" else 7
        wi = v.Tensor.from_float(wf_in, wel, frac_bits=wfrac)
        wo = v.Tensor.from_float(wf_out, wel, frac_bits=wfrac)
        b = v.Tensor.from_float(bf, wel, frac_bits=wfrac)
        cell_t = v.Tensor.fx(np.zeros(m), 12)
        out = v.Tensor.zeros((t, m), "fx16", 15)
    cfg = v.RnnCellCfg(0, v.RNN_OUT_ALL, v.RNN_ACT_TANH)
    fn = getattr(v, f"{cell}_cell_{kind}")
    cfg = v._scratch_cfg(cfg, g, h0, x)
    tl, sl = v.tanh_lut(), v.sigm_lut()
    if cell == "lstm":
        return lambda: fn(x, h0, wi, wo, b, tl, sl, cfg, cell_t, out)
    return lambda: fn(x, h0, wi, wo, b, tl, sl, cfg, out)


def run(log=print) -> dict:
    import _harness as H

    res = {"isa": mli.isa(), "unit": "us per sequence", "rows": []}
    log(f"mli.v2 LSTM/GRU (MLI 2.0.2) vs mli LSTM fx16 (MLI 1.1), ISA {mli.isa()}, us per sequence (best)")
    log(f"{'shape':>14} {'1.1 lstm fx16':>14} " + " ".join(f"{c + ' ' + k:>24}" for c in ("lstm", "gru")
                                                          for k in KINDS))
    for shape in SHAPES:
        c11 = H.make_case("lstm", "fx16", shape)
        t11 = _best_us(c11.caller(False))
        row = {"shape": "x".join(map(str, shape)), "mli11_lstm_fx16": t11}
        for cell in ("lstm", "gru"):
            for kind in KINDS:
                row[f"{cell}_{kind}"] = _best_us(_v2_case(cell, kind, shape))
        res["rows"].append(row)
        log(f"{row['shape']:>14} {t11:14.0f} " + " ".join(
            f"{row[f'{c}_{k}']:14.0f} ({row[f'{c}_{k}'] / t11:5.2f}x)" for c in ("lstm", "gru") for k in KINDS))
    return res


if __name__ == "__main__":
    run()

"""MLI 2.0.2 kernels of mli.v2: LSTM and GRU whole-sequence calls per kind
(fx16, fx16_fx8_fx8, sa8_sa8_sa32) at four shapes (N x M x T), timed
interleaved with the MLI 1.1 fx16 LSTM of mli and, when it imports, PyTorch's
float32 ``nn.LSTM`` / ``nn.GRU`` on one thread.

    PYTHONPATH=. python benchmarks/bench_mli2.py [--quick] [--no-torch]

Goals (issue 14): 2.x fx16 within 1.3x of the 1.1 fx16 LSTM time; sa8 no
slower than fx16 (2 % noise allowance).  Every call takes the next of a few
distinct input sequences.  ``run(log) -> dict`` is what bench.py calls;
nothing here asserts on a time.
"""
import os
import sys

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import itertools  # noqa: E402

import numpy as np  # noqa: E402

import _harness as H  # noqa: E402
import mli  # noqa: E402
import mli.v2 as v  # noqa: E402

SHAPES = [(32, 32, 128), (64, 64, 50), (128, 128, 100), (512, 256, 25)]
KINDS = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32")
CELLS = ("lstm", "gru")
GOAL_X = 1.3          # 2.x fx16 time / 1.1 fx16 LSTM time
SLACK = 1.02          # "no slower": sa8 time <= fx16 time + 2 %
N_INPUTS = 8


def _v2_case(cell, kind, shape, seed=0, n_inputs=N_INPUTS):
    """A call of mli.v2.<cell>_cell_<kind> over the whole sequence, cycling
    through `n_inputs` distinct inputs (weights, bias, state fixed)."""
    n, m, t = shape
    g = 4 if cell == "lstm" else 3
    rng = np.random.default_rng(seed)
    wf_in = rng.normal(0, 1 / np.sqrt(n + m), (g, n, m))
    wf_out = rng.normal(0, 1 / np.sqrt(n + m), (g, m, m))
    bf = rng.normal(0, 0.1, (g, m))
    xfs = [rng.uniform(-1, 1, (t, n)) for _ in range(max(1, n_inputs))]
    if kind == "sa8_sa8_sa32":
        xs = [v.Tensor.from_float(xf, "sa8") for xf in xfs]
        # one input format for all inputs: the bias scale depends on it
        x0 = xs[0]
        xs = [v.Tensor.sa(np.clip(np.round(xf * (1 << int(x0.scale_frac_bits[0])) / int(x0.scale[0]))
                                  + int(x0.zero_point[0]), -128, 127),
                          int(x0.zero_point[0]), int(x0.scale[0]), int(x0.scale_frac_bits[0])) for xf in xfs]
        h0 = v.Tensor.sa(np.zeros(m), 0, 16384, 21)
        wi = v.Tensor.from_float(wf_in, "sa8", dim=0, symmetric=True)
        wo = v.Tensor.from_float(wf_out, "sa8", dim=0, symmetric=True)
        # the bias scale MLI's check expects: in.scale * weights.scale per gate
        s_in, f_in = int(x0.scale[0]), int(x0.scale_frac_bits[0])
        scales = [(s_in * int(s)) >> 15 for s in wi.scale]
        fbs = [f_in + int(f) - 15 for f in wi.scale_frac_bits]
        q = np.stack([np.round(bf[k] / (scales[k] * 2.0 ** -fbs[k])) for k in range(g)]).astype(np.int32)
        b = v.Tensor.sa(q, [0] * g, scales, fbs, dim=0, el_type="sa32")
        cell_t = v.Tensor.sa(np.zeros(m), 0, 16384, 17)
        out = v.Tensor.sa(np.zeros((t, m)), 0, 16384, 21)
    else:
        wel = "fx16" if kind == "fx16" else "fx8"
        xs = [v.Tensor.from_float(xf, "fx16", frac_bits=12) for xf in xfs]
        h0 = v.Tensor.fx(np.zeros(m), 15)
        wfrac = 15 if wel == "fx16" else 7
        wi = v.Tensor.from_float(wf_in, wel, frac_bits=wfrac)
        wo = v.Tensor.from_float(wf_out, wel, frac_bits=wfrac)
        b = v.Tensor.from_float(bf, wel, frac_bits=wfrac)
        cell_t = v.Tensor.fx(np.zeros(m), 12)
        out = v.Tensor.zeros((t, m), "fx16", 15)
    cfg = v._scratch_cfg(v.RnnCellCfg(0, v.RNN_OUT_ALL, v.RNN_ACT_TANH), g, h0, xs[0])
    fn = getattr(v, f"{cell}_cell_{kind}")
    tl, sl = v.tanh_lut(), v.sigm_lut()
    nxt = itertools.cycle(xs).__next__
    if cell == "lstm":
        return lambda: fn(nxt(), h0, wi, wo, b, tl, sl, cfg, cell_t, out)
    return lambda: fn(nxt(), h0, wi, wo, b, tl, sl, cfg, out)


def _torch_fn(cell, shape, seed=0, n_inputs=N_INPUTS):
    """PyTorch float32 nn.LSTM / nn.GRU(N, M) over [T, 1, N], or None."""
    if cell == "lstm":
        return H.torch_lstm_fn(shape, seed, n_inputs)
    try:
        import torch
    except Exception:
        return None
    n, m, t = shape
    torch.manual_seed(seed)
    gru = torch.nn.GRU(n, m).eval()
    nxt = itertools.cycle([torch.rand(t, 1, n) * 2 - 1 for _ in range(max(1, n_inputs))]).__next__
    h0 = torch.zeros(1, 1, m)

    def run():
        with torch.inference_mode():
            return gru(nxt(), h0)

    return run


def _torch_ready(use_torch):
    if not use_torch:
        return None
    try:
        import torch
        torch.set_num_threads(1)
        return torch.__version__
    except Exception:
        return None


def run(log=print, budget=None, use_torch=True, shapes=None) -> dict:
    """Every shape: the 1.1 fx16 LSTM, the 2.x LSTM / GRU of each kind (and
    PyTorch's LSTM / GRU) timed interleaved.  Returns {"rows": [...],
    "goals": [{"goal", "met", "figures"}], ...} in us per sequence."""
    budget = budget or H.Budget(total_ns=400_000_000, rounds=5)
    shapes = shapes or SHAPES
    torch_ver = _torch_ready(use_torch)
    res = {"isa": mli.isa(), "unit": "us per sequence", "torch": torch_ver or "not run", "rows": [],
           "goals": []}
    log(f"mli.v2 LSTM/GRU (MLI 2.0.2) vs mli LSTM fx16 (MLI 1.1), ISA {mli.isa()}, us per sequence "
        f"(best repeat, interleaved); torch {torch_ver or 'not run'}")
    head = ["shape", "1.1 lstm fx16"] + [f"{c} {k}" for c in CELLS for k in KINDS]
    if torch_ver:
        head += ["torch lstm f32", "torch gru f32"]
    table = []
    for shape in shapes:
        c11 = H.make_case("lstm", "fx16", shape)
        fns = {"mli11": (c11.caller(True), None)}
        for cell in CELLS:
            for kind in KINDS:
                fns[f"{cell}_{kind}"] = (_v2_case(cell, kind, shape), None)
        if torch_ver:
            for cell in CELLS:
                fns[f"torch_{cell}"] = (_torch_fn(cell, shape), None)
        tm = H.measure_many(fns, budget, rounds=budget.rounds)
        t11 = tm["mli11"].us
        row = {"shape": "x".join(map(str, shape)), "mli11_lstm_fx16": t11}
        cells = [row["shape"], H.fmt_us(t11)]
        for cell in CELLS:
            for kind in KINDS:
                u = tm[f"{cell}_{kind}"].us
                row[f"{cell}_{kind}"] = u
                cells.append(f"{H.fmt_us(u)} ({u / t11:.2f}x)")
        if torch_ver:
            for cell in CELLS:
                row[f"torch_{cell}"] = tm[f"torch_{cell}"].us
                cells.append(H.fmt_us(tm[f"torch_{cell}"].us))
        res["rows"].append(row)
        table.append(cells)
        for cell in CELLS:
            f16 = row[f"{cell}_fx16"]
            res["goals"].append({
                "goal": f"2.x {cell.upper()} fx16 within {GOAL_X}x of the 1.1 fx16 LSTM, {row['shape']}",
                "met": f16 <= GOAL_X * t11,
                "figures": f"{H.fmt_us(f16)} vs {H.fmt_us(t11)} = {f16 / t11:.2f}x"})
            s8 = row[f"{cell}_sa8_sa8_sa32"]
            res["goals"].append({
                "goal": f"2.x {cell.upper()} sa8 no slower than fx16, {row['shape']}",
                "met": s8 <= SLACK * f16,
                "figures": f"sa8 {H.fmt_us(s8)} vs fx16 {H.fmt_us(f16)} = {s8 / f16:.2f}x (2 % allowance)"})
    log(H.table(head, table))
    for g in res["goals"]:
        log(f"- [{'met' if g['met'] else 'MISSED'}] {g['goal']}: {g['figures']}")
    return res


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short measurements (a smoke run)")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    a = ap.parse_args(argv)
    budget = H.Budget(total_ns=40_000_000, rounds=2) if a.quick else None
    run(lambda s="": print(s, flush=True), budget, not a.no_torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Speed of the MLI 1.1 convolution, depthwise convolution and pooling kernels
at the layer shapes of MLI's KWS example, on one thread, side by side with
PyTorch's float32 ``conv2d`` / ``avg_pool2d`` on the same shapes, per ISA path.

    PYTHONPATH=. python benchmarks/bench_conv.py [--quick] [--json FILE] [--no-torch]

The layers are those of ``mli.tools.kws.network`` (the example's weights and
formats, read from ../shared/data/kws); the input is the network input of
inference 1 of ``test.wav`` and every layer gets the output of the one before,
as in the example.  Each timed call writes into a preallocated ``out=``.
Nothing here is asserted; no test depends on it."""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

import mli  # noqa: E402
from _harness import Budget, LoadMonitor, environment, measure_many  # noqa: E402
from mli.tools import kws  # noqa: E402
from mli.tools.kws import network  # noqa: E402


def layers(model, x0):
    """[(name, mli call, torch call or None, macs)] of the example's convolution
    and pooling layers, each fed the previous layer's output."""
    c, f = model.coef, model.frac
    out = network.run_network(x0, model)
    prev = {name: (out[network.previous(name)] if network.previous(name) != "input"
                   else network.input_tensor(x0, model)) for name in network.LAYER_OUTPUTS}
    rows = []
    conv_cfg = {"L1_conv": mli.Conv2dConfig(stride_height=2)}
    for name, prefix, fn_name in (("L1_conv_lrelu", "L1_conv", "conv2d_chw_fx8_generic"),
                                  ("L2a_dw_lrelu", "L2a_conv_dw", "depthwise_conv2d_chw_fx8_k3x3_str1_nopad"),
                                  ("L2b_pw_lrelu", "L2b_conv_pw", "conv2d_chw_fx8_k1x1_str1_nopad"),
                                  ("L3a_dw_lrelu", "L3a_conv_dw", "depthwise_conv2d_chw_fx8_k3x3_str1_nopad"),
                                  ("L3b_pw_lrelu", "L3b_conv_pw", "conv2d_chw_fx8_k1x1_str1_nopad"),
                                  ("L4a_dw_lrelu", "L4a_conv_dw", "depthwise_conv2d_chw_fx8_k3x3_str1_nopad"),
                                  ("L4b_pw_lrelu", "L4b_conv_pw", "conv2d_chw_fx8_k1x1_str1_nopad")):
        x, w, b = prev[name], c[prefix + "_wt"], c[prefix + "_bias"]
        cfg = conv_cfg.get(prefix, mli.Conv2dConfig())
        kernel = getattr(mli, fn_name)
        y = kernel(x, w, b, cfg, out_frac_bits=f[prefix + "_out"])
        o = mli.Tensor(np.zeros(y.shape, np.int8), y.frac_bits)
        depthwise = "dw" in prefix
        rows.append((f"{prefix} {fn_name}", (lambda k=kernel, x=x, w=w, b=b, cfg=cfg, o=o:
                                             k(x, w, b, cfg, out=o)),
                     ("conv", x.shape, w.shape, depthwise, (cfg.stride_height, cfg.stride_width)),
                     int(np.prod(y.shape)) * int(np.prod(w.shape[1:]))))
    y = out["fx16_convert"]
    pool = mli.PoolConfig(kernel_width=5, kernel_height=1)
    p = mli.avepool_chw_fx16_generic(y, pool)
    po = mli.Tensor(np.zeros(p.shape, np.int16), p.frac_bits)
    rows.append(("L5 avepool_chw_fx16_generic 1x5", lambda y=y, o=po: mli.avepool_chw_fx16_generic(y, pool, out=o),
                 ("avgpool", y.shape, (1, 5)), int(np.prod(y.shape))))
    return rows


def torch_call(spec, torch):
    if spec[0] == "conv":
        _, xs, ws, depthwise, stride = spec
        x = torch.randn(1, *xs)
        w = torch.randn(*ws) if not depthwise else torch.randn(ws[0], 1, *ws[2:])
        b = torch.randn(ws[0])
        groups = xs[0] if depthwise else 1
        f = torch.nn.functional.conv2d
        return lambda: f(x, w, b, stride=stride, groups=groups)
    _, ys, k = spec
    y = torch.randn(1, *ys)
    return lambda: torch.nn.functional.avg_pool2d(y, k)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short repeats (a smoke run)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    args = ap.parse_args(argv)
    torch = None
    if not args.no_torch:
        try:
            import torch
            torch.set_num_threads(1)
        except ImportError:
            print("PyTorch not installed: its column is empty", file=sys.stderr)
    model = kws.load_model()
    feats = kws.features_of_wav(os.path.join(model.data_dir, "test.wav"))
    rows = layers(model, feats.network_input(1))
    budget = Budget(total_ns=60_000_000, min_repeats=5) if args.quick else Budget(total_ns=400_000_000)
    isas = mli.supported_isas()
    mon = LoadMonitor()
    results = []
    print(f"{'layer':58s} " + " ".join(f"{i + ' us':>12s}" for i in isas) + f" {'torch us':>10s} {'torch/mli':>10s}")
    for name, fn, spec, macs in rows:
        fns = {isa: (fn, (lambda i=isa: mli.set_isa(i))) for isa in isas}
        if torch is not None:
            fns["torch"] = (torch_call(spec, torch), None)
        t = measure_many(fns, budget, rounds=3)
        mli.set_isa(isas[-1])
        best = min(t[i].us for i in isas)
        tt = t["torch"].us if "torch" in t else None
        print(f"{name:58s} " + " ".join(f"{t[i].us:12.2f}" for i in isas)
              + (f" {tt:10.2f} {tt / best:10.2f}" if tt else ""))
        results.append({"layer": name, "macs": macs, **{i: t[i].as_dict() for i in isas},
                        **({"torch": t["torch"].as_dict()} if tt else {})})
    env = environment(getattr(torch, "__version__", None) if torch else None)
    env["load"] = mon.result()
    print("\n" + "\n".join(f"- {k}: {v}" for k, v in env.items()))
    if args.json:
        with open(args.json, "x") as fh:
            json.dump({"layers": results, "env": env}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

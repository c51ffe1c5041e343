"""Quality of a whole-model conversion against the float model, per layer."""

from __future__ import annotations

import math

import numpy as np

from ..metrics import sn_db
from .formats import dequantize, int_range

__all__ = ["layer_report", "tensor_quality"]


def tensor_quality(ref, q, el, frac) -> dict:
    """S/N (dB) of the integers ``q`` (format el/frac) against the float ``ref``, the
    elements of ``ref`` beyond the format's range (saturated) and the headroom: whole
    bits between the largest |ref| and the format's largest value (negative: saturating)."""
    ref = np.asarray(ref, np.float64)
    got = dequantize(q, frac).astype(np.float64)
    lo, hi = int_range(el)
    top, bottom = hi * 2.0 ** -frac, lo * 2.0 ** -frac
    sat = int(np.count_nonzero((ref > top + 2.0 ** -(frac + 1)) | (ref < bottom - 2.0 ** -(frac + 1))))
    peak = float(np.abs(ref).max(initial=0.0))
    head = None if peak == 0 else int(math.floor(math.log2((hi + 1) * 2.0 ** -frac / peak)))
    return {"sn_db": sn_db(ref, got) if ref.shape == got.shape else None,
            "saturated": sat, "elements": int(ref.size), "headroom_bits": head}


def layer_report(wm, inputs, named) -> dict:
    """See :meth:`mli.fixed_point.whole.WholeModel.report`."""
    ref_out, ref = wm.float_values(inputs, **named)
    got_out, trace = wm.run(inputs, trace=True, **named)
    outputs = {k: sn_db(np.asarray(ref_out[k], np.float64), np.asarray(got_out[k], np.float64))
               for k in ref_out}
    layers = []
    for key, t in wm.plan.tensors.items():
        if key not in trace or key not in ref:
            continue
        lk = key.rsplit(":", 1)[0]
        lp = wm.plan.layers.get(lk, {})
        info = next((i for i in wm.analysis.infos if i.key == lk), None)
        if info is not None and info.bias is not None:
            continue            # its output is its fused bias Add's (reported there)
        row = {"tensor": key, "op": lp.get("op", "Parameter"), "role": lp.get("role", "input"),
               "kind": lp.get("kind", wm.kind), "el": t["el"], "frac": t["frac"],
               "float": lp.get("role") == "float"}
        row.update(tensor_quality(ref[key], trace[key], t["el"], t["frac"]))
        layers.append(row)
    return {"outputs": outputs, "layers": layers}


# ---------------------------------------------------------------------------- data sets
def dataset_samples(model, dataset) -> list:
    """The samples of ``dataset``: a list of input dicts, or a dict ``{input name: array}``
    whose first axis indexes the samples (an array of the model input's rank + 1 gives
    ``a[i]``, one of the same rank ``a[i:i + 1]``, a batch of one)."""
    if isinstance(dataset, (list, tuple)):
        if not dataset or not all(isinstance(s, dict) for s in dataset):
            raise ValueError("dataset: a non-empty list of input dicts, or a dict of arrays "
                             "whose first axis indexes the samples")
        return list(dataset)
    if not isinstance(dataset, dict) or not dataset:
        raise ValueError("dataset: a non-empty list of input dicts, or a dict of arrays "
                         "whose first axis indexes the samples")
    ranks = {t.name: len(t.dims) for t in model.inputs}
    arrays = {k[4:] if k.startswith("in__") else k: np.asarray(v) for k, v in dataset.items()}
    unknown = [k for k in arrays if k not in ranks]
    if unknown:
        raise ValueError(f"dataset: {unknown[0]!r} is not a model input ({list(ranks)})")
    n = {len(a) for a in arrays.values()}
    if len(n) != 1:
        raise ValueError(f"dataset: the arrays hold different numbers of samples {sorted(n)}")
    count = n.pop()
    return [{k: (a[i] if a.ndim == ranks[k] + 1 else a[i:i + 1]) for k, a in arrays.items()}
            for i in range(count)]


def _classes(out):
    return int(np.argmax(np.asarray(out, np.float64).reshape(-1)))


def sample_stats(wm, sample, output) -> dict:
    """What one sample adds to a data-set report (sums, so samples combine by adding)."""
    wm._float.reset_state()
    wm._fixed.reset_state()
    ref_out, ref = wm.float_values(sample)
    got_out, trace = wm.run(sample, trace=True)
    tensors = {}
    for key, t in wm.plan.tensors.items():
        if key not in trace or key not in ref or np.shape(ref[key]) != np.shape(trace[key]):
            continue
        r = np.asarray(ref[key], np.float64)
        g = dequantize(trace[key], t["frac"]).astype(np.float64)
        q = tensor_quality(r, trace[key], t["el"], t["frac"])
        tensors[key] = [float(np.sum(r * r)), float(np.sum((r - g) ** 2)), q["saturated"],
                        q["elements"], float(np.abs(r).max(initial=0.0))]
    outs = {k: [float(np.sum(np.asarray(ref_out[k], np.float64) ** 2)),
                float(np.sum((np.asarray(ref_out[k], np.float64)
                              - np.asarray(got_out[k], np.float64)) ** 2))] for k in ref_out}
    return {"tensors": tensors, "outputs": outs, "float_class": _classes(ref_out[output]),
            "fixed_class": _classes(got_out[output])}


def _db(signal, noise):
    from ..metrics import snr_db
    return snr_db(signal, noise)


def combine(wm, stats, labels, output) -> dict:
    """The data-set report from the samples' :func:`sample_stats` (in sample order)."""
    tensors: dict = {}
    outs: dict = {}
    for s in stats:
        for k, v in s["tensors"].items():
            a = tensors.setdefault(k, [0.0, 0.0, 0, 0, 0.0])
            a[0] += v[0]
            a[1] += v[1]
            a[2] += v[2]
            a[3] += v[3]
            a[4] = max(a[4], v[4])
        for k, v in s["outputs"].items():
            o = outs.setdefault(k, [0.0, 0.0])
            o[0] += v[0]
            o[1] += v[1]
    layers = []
    for key, t in wm.plan.tensors.items():
        if key not in tensors:
            continue
        lk = key.rsplit(":", 1)[0]
        info = next((i for i in wm.analysis.infos if i.key == lk), None)
        if info is not None and info.bias is not None:
            continue
        lp = wm.plan.layers.get(lk, {})
        a = tensors[key]
        lo, hi = int_range(t["el"])
        head = None if a[4] == 0 else int(math.floor(math.log2((hi + 1) * 2.0 ** -t["frac"] / a[4])))
        layers.append({"tensor": key, "op": lp.get("op", "Parameter"),
                       "role": lp.get("role", "input"), "kind": lp.get("kind", wm.kind),
                       "el": t["el"], "frac": t["frac"], "float": lp.get("role") == "float",
                       "sn_db": _db(a[0], a[1]), "saturated": a[2], "elements": a[3],
                       "headroom_bits": head})
    rep = {"outputs": {k: _db(*v) for k, v in outs.items()}, "layers": layers,
           "samples": len(stats)}
    if labels is not None:
        labels = np.asarray(labels).reshape(-1).astype(np.int64)
        f = np.array([s["float_class"] for s in stats])
        q = np.array([s["fixed_class"] for s in stats])
        n = int(max(labels.max(initial=0), f.max(initial=0), q.max(initial=0))) + 1
        conf = np.zeros((n, n), np.int64)
        np.add.at(conf, (labels, q), 1)
        rep.update(output=output, accuracy={"float": float(np.mean(f == labels)),
                                            "fixed": float(np.mean(q == labels))},
                   agreement=float(np.mean(f == q)), confusion=conf.tolist())
    return rep


class _Bar:
    """A progress bar on stderr when it is a terminal (else nothing)."""

    def __init__(self, total, show):
        import sys
        self.total, self.n, self.out = total, 0, sys.stderr
        self.show = show if show is not None else self.out.isatty()

    def step(self, k=1):
        self.n += k
        if self.show:
            w = 30
            done = int(w * self.n / max(self.total, 1))
            self.out.write(f"\r  [{'#' * done}{'.' * (w - done)}] {self.n}/{self.total}")
            self.out.flush()

    def close(self):
        if self.show:
            self.out.write("\r" + " " * 60 + "\r")
            self.out.flush()


def dataset_report(wm, dataset, labels=None, output=None, jobs=1, progress=None) -> dict:
    """See :meth:`mli.fixed_point.whole.WholeModel.report` (a data set)."""
    from ..tools.jobs import process_map
    samples = dataset_samples(wm.float_model, dataset)
    if labels is not None and len(np.asarray(labels).reshape(-1)) != len(samples):
        raise ValueError(f"labels: {len(np.asarray(labels).reshape(-1))} labels for "
                         f"{len(samples)} samples")
    output = output if output is not None else wm.output_names[0]
    if output not in wm.output_names:
        raise ValueError(f"output: {output!r} is not a model output ({wm.output_names})")
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: a positive int, got {jobs!r}")
    bar = _Bar(len(samples), progress)
    stats: list = []
    try:
        if jobs == 1 or wm.float_model.path is None:
            for s in samples:
                stats.append(sample_stats(wm, s, output))
                bar.step()
        else:
            size = max(1, -(-len(samples) // (4 * jobs)))
            chunks = [samples[i:i + size] for i in range(0, len(samples), size)]
            import functools
            init, work = wm.workers()
            for part in process_map(functools.partial(work, output), chunks, jobs,
                                    seconds=len(samples) * 0.05, init=init,
                                    init_args=(str(wm.float_model.path), wm.plan.to_dict(),
                                               samples[0])):
                stats += part
                bar.step(len(part))
    finally:
        bar.close()
    return combine(wm, stats, labels, output)

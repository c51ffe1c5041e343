"""``--plot``: firmware against package per output (needs matplotlib, the
``plot`` extra)."""
import math

import numpy as np

from ...metrics import snr_db
from .results import DatasetResult


def plot_results(result, path):
    """Draw the differing elements and the firmware-vs-package S/N per time
    step of every compared output with a time axis (pooled over the vectors
    of a data-set run) into a PNG; outputs without a time axis are listed
    with their difference counts.  When no output has a time axis, draws
    differing elements and S/N per output instead.  Needs matplotlib
    (ImportError otherwise)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = result.results if isinstance(result, DatasetResult) else [result]
    timed, untimed = {}, {}
    for r in results:
        for lr in r.layers:
            rep = lr.report
            if rep.per_step_diff is not None:
                acc = timed.setdefault(lr.name, [np.zeros(len(rep.per_step_diff)), np.zeros(len(rep.per_step_diff)),
                                                 np.zeros(len(rep.per_step_diff))])
                if len(acc[0]) == len(rep.per_step_diff):
                    acc[0] += rep.per_step_diff
                    acc[1] += rep.per_step_signal
                    acc[2] += rep.per_step_noise
            else:
                u = untimed.setdefault(lr.name, [0, 0, 0.0, 0.0])
                u[0] += rep.n_diff
                u[1] += rep.count
                fw_pk = rep.snr_db
                if math.isfinite(fw_pk):
                    u[3] += 1.0
                    u[2] += fw_pk
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6))
    title = "firmware vs package" + (f" ({len(results)} vectors)" if len(results) > 1 else "")
    if timed:
        for name, (d, sig, noise) in timed.items():
            x = np.arange(len(d))
            ax1.step(x, d, where="mid", label=name)
            snr = np.array([snr_db(a, b) for a, b in zip(sig, noise)])
            ok = np.isfinite(snr)
            ax2.plot(x[ok], snr[ok], marker=".", linestyle="-" if ok.sum() > 1 else "none", label=name)
        ax1.set_xlabel("time step")
        ax2.set_xlabel("time step (steps without differences have infinite S/N and are not drawn)")
        ax2.set_xlim(ax1.get_xlim())
        if untimed:
            title += "\nno time axis: " + ", ".join(f"{n} {u[0]}/{u[1]} differ" for n, u in untimed.items())
    else:
        names = list(untimed)
        ax1.bar(range(len(names)), [untimed[n][0] for n in names])
        ax2.bar(range(len(names)), [untimed[n][2] / untimed[n][3] if untimed[n][3] else 0 for n in names])
        for ax in (ax1, ax2):
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(names)
        ax2.set_xlabel("output (S/N bar 0: no difference, infinite S/N)")
    ax1.set_ylabel("differing elements")
    ax2.set_ylabel("S/N firmware vs package (dB)")
    ax1.set_title(title, fontsize="medium")
    if timed:
        ax1.legend(fontsize="small")
        if ax2.lines:
            ax2.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

"""Signal-to-noise figures used by the demo and tools."""
import numpy as np


def sn_db(reference, approx):
    """S/N in dB of `approx` against the float `reference` (power ratio):
    10*log10(sum(ref^2) / sum((ref - approx)^2)); inf when identical."""
    r = np.asarray(reference, np.float64).reshape(-1)
    a = np.asarray(approx, np.float64).reshape(-1)
    noise = float(np.sum((r - a) ** 2))
    signal = float(np.sum(r * r))
    if noise == 0.0:
        return float("inf")
    return 10.0 * np.log10(max(signal, 1e-300) / noise)

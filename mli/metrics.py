"""Compare a firmware's integer outputs with the package's, bit for bit.

:func:`compare` answers: are they identical; if not, how many elements
differ, where is the first difference (time step and unit for a recurrent
[T, M] output), by how many LSBs at most, how are the differences
distributed, and what does that cost in S/N (firmware vs package, and each
vs a float reference when one is given), overall and per time step.

S/N is ``10*log10(sum(ref**2) / sum((x - ref)**2))`` in dB, computed in
float64 on the integer values (or on dequantized values against a float
reference); it is ``inf`` when the two are identical (``None`` in
:meth:`Report.to_dict`, since JSON has no infinity).
"""

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

__all__ = ["Report", "compare", "snr_db", "log10f", "f32_ulps_apart"]


def snr_db(signal_energy, noise_energy):
    """``10*log10(signal/noise)`` in dB; inf for zero noise, -inf for zero
    signal with noise, nan for both zero."""
    s, n = float(signal_energy), float(noise_energy)
    if n == 0.0:
        return math.inf if s > 0 else (math.inf if s == 0 else math.nan)
    if s == 0.0:
        return -math.inf
    return 10.0 * math.log10(s / n)


def log10f(x):
    """``log10f`` correctly rounded to float32, the same on every machine.

    numpy's float32 ``log10`` takes other SIMD code on AVX2 and AVX-512
    machines and differs between them in the last bit for some inputs; the
    float64 logarithm of the (exact) float64 value of `x`, rounded once to
    float32, is the correctly rounded result but for inputs within 2**-29
    relative of a float32 rounding boundary."""
    x = float(np.float32(x))
    if x == 0.0:
        return np.float32(-np.inf)
    if x < 0.0 or math.isnan(x):
        return np.float32(np.nan)
    if math.isinf(x):
        return np.float32(np.inf)
    return np.float32(math.log10(x))


def f32_ulps_apart(a, b):
    """How many float32 values lie from `a` to `b` (0 when equal, inf when
    either is nan or they differ in sign): the tolerance unit for float32
    figures whose last bits depend on a libm (a stated number of ulps)."""
    a, b = np.float32(a), np.float32(b)
    if np.isnan(a) or np.isnan(b):
        return math.inf
    if a == b:
        return 0
    if (a < 0) != (b < 0) and a != 0 and b != 0:
        return math.inf
    ia = int(np.abs(a).view(np.int32))
    ib = int(np.abs(b).view(np.int32))
    return abs(ia - ib)


def sn_db(reference, approx):
    """S/N in dB of `approx` against `reference` (power ratio, float64):
    10*log10(sum(ref^2) / sum((ref - approx)^2)); inf when identical."""
    r = np.asarray(reference, np.float64).reshape(-1)
    a = np.asarray(approx, np.float64).reshape(-1)
    return snr_db(np.sum(r * r), np.sum((r - a) ** 2))


def _jsonable(v):
    if isinstance(v, float):
        return None if not math.isfinite(v) else round(v, 6)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return _jsonable(float(v))
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


@dataclass
class Report:
    """What :func:`compare` found.  All indices are 0-based.

    Attributes
    ----------
    bit_exact : bool
    shape : tuple
        The compared shape (the package's).
    count, n_diff : int
        Elements compared, elements that differ.
    first_index : tuple or None
        ND index of the first difference (in time order when there is a
        time axis, else row-major order).
    first_flat : int or None
        Its row-major flat index.
    first_step, first_unit : int, int or tuple, or None
        Time step and unit (the index within the step; an int for [T, M]
        outputs) of the first difference, when there is a time axis.
    first_firmware, first_package : int or None
        The two values there.
    max_abs_diff : int
        Largest |firmware - package| in LSBs.
    max_diff_index : tuple or None
        Where it occurs first.
    histogram : dict
        ``{difference in LSBs (firmware - package): count}`` over the
        differing elements.
    snr_db : float
        Firmware vs package (the package is the signal).
    snr_firmware_vs_float_db, snr_package_vs_float_db : float or None
        Against the float reference, when one is given.
    time_axis : int or None
    per_step_diff : list of int or None
        Differing elements per time step.
    per_step_snr_db : list of float or None
        Firmware vs package S/N per time step.
    per_step_signal, per_step_noise : list of float or None
        The energies behind it (sum of package**2, of difference**2), so
        that runs can be pooled.
    frac_bits : int or None
    notes : list of str
        Anything the comparison adjusted (e.g. a flat dump reshaped).
    """

    bit_exact: bool
    shape: tuple
    count: int
    n_diff: int
    first_index: Optional[tuple] = None
    first_flat: Optional[int] = None
    first_step: Optional[int] = None
    first_unit: object = None
    first_firmware: Optional[int] = None
    first_package: Optional[int] = None
    max_abs_diff: int = 0
    max_diff_index: Optional[tuple] = None
    histogram: dict = field(default_factory=dict)
    snr_db: float = math.inf
    snr_firmware_vs_float_db: Optional[float] = None
    snr_package_vs_float_db: Optional[float] = None
    time_axis: Optional[int] = None
    per_step_diff: Optional[list] = None
    per_step_snr_db: Optional[list] = None
    per_step_signal: Optional[list] = None
    per_step_noise: Optional[list] = None
    frac_bits: Optional[int] = None
    notes: list = field(default_factory=list)

    # ----------------------------------------------------------- output
    def where(self):
        """The first difference in words: ``step 17, unit 4`` or
        ``index (2, 5)`` / ``element 12``; "" when bit-exact."""
        if self.bit_exact:
            return ""
        if self.first_step is not None:
            return f"step {self.first_step}, unit {self.first_unit}"
        if len(self.first_index) == 1:
            return f"element {self.first_index[0]}"
        return f"index {self.first_index} (flat {self.first_flat})"

    def summary(self):
        """One line."""
        if self.bit_exact:
            return f"bit-exact ({self.count} elements)"
        return (f"{self.n_diff} of {self.count} elements differ, first at {self.where()} "
                f"(firmware {self.first_firmware}, package {self.first_package}), "
                f"max {self.max_abs_diff} LSB, S/N {_db(self.snr_db)}")

    def format(self, indent=""):
        """Several lines of text (what ``mli crosscheck`` prints)."""
        lines = [self.summary()]
        if not self.bit_exact:
            items = sorted(self.histogram.items())
            if len(items) > 12:  # the most frequent ones
                items = sorted(sorted(items, key=lambda kv: -kv[1])[:12])
            hist = ", ".join(f"{k:+d}: {v}" for k, v in items)
            if len(self.histogram) > 12:
                hist += f", ... ({len(self.histogram)} distinct values; most frequent shown)"
            lines.append(f"differences (firmware - package, LSB: count): {hist}")
            if self.max_abs_diff > 1 or self.max_diff_index != self.first_index:
                lines.append(f"largest difference {self.max_abs_diff} LSB first at index {self.max_diff_index}")
            if self.per_step_diff is not None:
                steps = [t for t, n in enumerate(self.per_step_diff) if n]
                shown = ", ".join(f"{t}: {self.per_step_diff[t]}" for t in steps[:10])
                more = f", ... ({len(steps)} steps)" if len(steps) > 10 else ""
                lines.append(f"differing elements per step (step: count): {shown}{more}")
                worst = min((s for s in self.per_step_snr_db if s is not None), default=None)
                if worst is not None and math.isfinite(worst):
                    lines.append(f"worst per-step S/N {_db(worst)} at step "
                                 f"{self.per_step_snr_db.index(worst)}")
        if self.snr_firmware_vs_float_db is not None:
            lines.append(f"vs float reference: firmware {_db(self.snr_firmware_vs_float_db)}, "
                         f"package {_db(self.snr_package_vs_float_db)}")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(indent + line for line in lines)

    def __str__(self):
        return self.format()

    def to_dict(self):
        """A JSON-ready dict of every field (infinite S/N as None)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["histogram"] = {str(k): v for k, v in sorted(self.histogram.items())}
        d["where"] = self.where()
        return _jsonable(d)


def _db(v):
    if v is None:
        return "n/a"
    if math.isinf(v):
        return "inf dB" if v > 0 else "-inf dB"
    if math.isnan(v):
        return "n/a"
    return f"{v:.1f} dB"


def _as_int_array(x, what):
    frac = None
    if hasattr(x, "numpy") and hasattr(x, "frac_bits") and not isinstance(x, np.ndarray):
        frac = int(x.frac_bits)
        x = x.numpy()
    a = np.asarray(x)
    if a.dtype.kind == "f":
        if a.size and not np.all(np.isfinite(a)):
            raise ValueError(f"{what}: contains NaN or infinity; expected the integer output")
        if a.size and not np.all(a == np.round(a)):
            raise TypeError(f"{what}: holds non-integer {a.dtype} values; compare the integer (fixed-point) "
                            "output, not dequantized floats")
    elif a.dtype.kind not in "iub":
        raise TypeError(f"{what}: dtype {a.dtype} is not an integer type")
    return a.astype(np.int64), frac


def compare(firmware, package, *, time_axis=0, float_ref=None, frac_bits=None):
    """Compare the firmware's integer output with the package's.

    Parameters
    ----------
    firmware, package : array_like or mli.Tensor
        Integer values (a float array holding whole numbers is accepted).
        Same shape, or the same element count (the firmware dump is then
        reshaped to the package's shape, with a note).
    time_axis : int or None
        The time axis of a recurrent output (default 0, the T of [T, M]).
        Used only when the output has at least 2 dims; None: no time axis.
    float_ref : array_like, optional
        Float reference values of the same shape; gives the S/N of each
        side against it (needs frac bits).
    frac_bits : int, optional
        Frac bits of the outputs (default: the package Tensor's, if any).

    Returns
    -------
    Report

    Raises
    ------
    ValueError
        Element counts differ, bad time axis, float reference without frac
        bits or of another shape.
    TypeError
        A side is not integer-valued.
    """
    fw, ffw = _as_int_array(firmware, "firmware")
    pk, fpk = _as_int_array(package, "package")
    if frac_bits is None:
        frac_bits = fpk if fpk is not None else ffw
    notes = []
    if fw.shape != pk.shape:
        if fw.size != pk.size:
            raise ValueError(f"firmware: shape {fw.shape} ({fw.size} elements) does not match the "
                             f"package output {pk.shape} ({pk.size} elements)")
        notes.append(f"firmware data of shape {fw.shape} read as {pk.shape}")
        fw = fw.reshape(pk.shape)
    shape = pk.shape
    if time_axis is not None and pk.ndim >= 2:
        if not -pk.ndim <= time_axis < pk.ndim:
            raise ValueError(f"time_axis: {time_axis} is out of range for shape {shape}")
        ta = time_axis % pk.ndim
    else:
        ta = None
    diff = fw - pk
    mask = diff != 0
    n_diff = int(mask.sum())
    rep = Report(bit_exact=n_diff == 0, shape=tuple(shape), count=int(pk.size), n_diff=n_diff,
                 time_axis=ta, frac_bits=frac_bits, notes=notes)
    sig = float(np.sum(pk.astype(np.float64) ** 2))
    noise = float(np.sum(diff.astype(np.float64) ** 2))
    rep.snr_db = snr_db(sig, noise)
    if n_diff:
        if ta is not None:
            moved = np.moveaxis(mask, ta, 0)
            k = int(np.flatnonzero(moved.reshape(-1))[0])
            idx_m = np.unravel_index(k, moved.shape)
            idx = list(idx_m[1:])
            idx.insert(ta, idx_m[0])
            rep.first_index = tuple(int(i) for i in idx)
            rep.first_step = int(idx_m[0])
            rest = tuple(int(i) for i in idx_m[1:])
            rep.first_unit = rest[0] if len(rest) == 1 else rest
        else:
            k = int(np.flatnonzero(mask.reshape(-1))[0])
            rep.first_index = tuple(int(i) for i in np.unravel_index(k, shape)) if shape else ()
        rep.first_flat = int(np.ravel_multi_index(rep.first_index, shape)) if shape else 0
        rep.first_firmware = int(fw[rep.first_index])
        rep.first_package = int(pk[rep.first_index])
        ad = np.abs(diff)
        rep.max_abs_diff = int(ad.max())
        rep.max_diff_index = tuple(int(i) for i in np.unravel_index(int(np.argmax(ad)), shape)) if shape else ()
        vals, counts = np.unique(diff[mask], return_counts=True)
        rep.histogram = {int(v): int(c) for v, c in zip(vals, counts)}
    if ta is not None:
        m = np.moveaxis(mask, ta, 0).reshape(shape[ta], -1)
        d2 = np.moveaxis(diff, ta, 0).reshape(shape[ta], -1).astype(np.float64) ** 2
        p2 = np.moveaxis(pk, ta, 0).reshape(shape[ta], -1).astype(np.float64) ** 2
        rep.per_step_diff = [int(v) for v in m.sum(axis=1)]
        rep.per_step_signal = [float(v) for v in p2.sum(axis=1)]
        rep.per_step_noise = [float(v) for v in d2.sum(axis=1)]
        rep.per_step_snr_db = [snr_db(s, n) for s, n in zip(rep.per_step_signal, rep.per_step_noise)]
    if float_ref is not None:
        if frac_bits is None:
            raise ValueError("float_ref: needs frac_bits to dequantize the integer outputs")
        ref = np.asarray(float_ref, dtype=np.float64)
        if ref.shape != shape:
            if ref.size != pk.size:
                raise ValueError(f"float_ref: shape {ref.shape} does not match the output {shape}")
            ref = ref.reshape(shape)
        if not np.all(np.isfinite(ref)):
            raise ValueError("float_ref: contains NaN or infinity")
        scale = math.ldexp(1.0, -int(frac_bits))
        rsig = float(np.sum(ref ** 2))
        rep.snr_firmware_vs_float_db = snr_db(rsig, float(np.sum((fw * scale - ref) ** 2)))
        rep.snr_package_vs_float_db = snr_db(rsig, float(np.sum((pk * scale - ref) ** 2)))
    return rep

"""The example's FBANK feature extractor (``au_fex::fbank_features``) in
float32 numpy, and the conversion of its features to the network's fx8 input.

Per 480-sample frame: samples / 2**15, times a periodic Hann window of 480,
zero padded to 512, real FFT (the unscaled DFT), power of bins 1..255, 13
triangular mel filters between 20 and 7600 Hz (peak 1, no normalisation),
natural log (an empty band gives log(FLT_MIN) = -87.336548).  No
pre-emphasis, dither, DCT or normalisation.  Every step is a binary32
operation in the order the example's C code performs it.

What may differ from the firmware's float arithmetic, and how much it matters
-------------------------------------------------------------------------
The firmware runs this on an ARC EM9D FPU with MetaWare's ``cosf``/``logf``
and dsplib's real FFT (closed source).  Here:

* the FFT is numpy's (pocketfft, float64) of the float32 frame, its real and
  imaginary parts rounded to float32: ulp-level differences from dsplib's
  float32 FFT, relatively larger in weak bands;
* ``cosf`` and ``logf`` are the float64 ``math.cos``/``math.log`` of the
  float32 argument, rounded once to float32 (correctly rounded in practice,
  and the same on every machine, unlike numpy's float32 SIMD paths); a
  target libm may round differently by one ulp: glibc's ``cosf``/``logf``,
  used by the x86 build of the example's C code, change 2 of the 480 window
  values and 3 of the 438 filter weights (by 1-5 ulps after the
  subtractions that follow them);
* no fused multiply-add (MetaWare may contract ``re*re + im*im`` and
  ``acc + p*w``).

These differences are around 1e-7 relative (spec.md measured at most
1.5e-5 in log units between FFT and FMA variants on the example's
test.wav) and reach the network only where a feature lies that close to a
rounding boundary of the fx8 conversion (a multiple of 1/8 plus 1/16).  On
test.wav all 346 x 13 fx8 features equal those of the example's own C code
built on x86; the float features are within 1e-6 of it (within 1 ulp when
given its window and filter weights).  For other recordings a single-LSB
feature difference next to such a boundary is a float-side difference, not
a network error; it can move a detection by one inference or a percentage
in its last digit.
"""
import math

import numpy as np

from ...tensor import Tensor

SAMPLE_RATE = 16000
FRAME_LENGTH = 480        # samples per feature vector (30 ms)
FRAME_STRIDE = 240        # samples per process call (15 ms)
NUM_BINS = 13             # mel filters
FEATURE_FRAC_BITS = 3     # the network input's fx8 format
LOW_HZ = 20.0
HIGH_HZ = 7600.0
FLT_MIN = np.float32(1.17549435e-38)


def _f32(x):
    """x rounded to binary32 (one IEEE rounding)."""
    return np.float32(x)


def fft_size(frame_length=FRAME_LENGTH):
    """The smallest power of two >= `frame_length` (512 for 480)."""
    n = 1
    while n < frame_length:
        n *= 2
    return n


def _cosf(x):
    return _f32(math.cos(float(x)))


def _logf(x):
    return _f32(math.log(float(x)))


def hann_window(length=FRAME_LENGTH):
    """``create_hann_window``: w[n] = 0.5 - 0.5 cos(2 pi n / length) in
    binary32 (periodic: divisor `length`, not length - 1), float32 [length]."""
    two_pi = _f32(2.0 * math.pi)
    w = np.empty(length, np.float32)
    for n in range(length):
        a = _f32(_f32(two_pi * _f32(n)) / _f32(length))
        w[n] = _f32(_f32(0.5) - _f32(_f32(0.5) * _cosf(a)))
    return w


def mel(f):
    """``freq_to_mel``: 1127 ln(1 + f / 700), every step in binary32."""
    return _f32(_f32(1127.0) * _logf(_f32(_f32(1.0) + _f32(_f32(f) / _f32(700.0)))))


def mel_filters(num_bins=NUM_BINS, n_fft=None, rate=SAMPLE_RATE, low=LOW_HZ, high=HIGH_HZ):
    """``create_mel_triangle_filters``: the triangular filters as a list of
    (first FFT bin, float32 weights of the bins first, first+1, ...).

    Filter j spans mel points j .. j+2 of num_bins + 2 points equally spaced
    from mel(low) to mel(high); FFT bin i (frequency i * rate / n_fft, only
    bins below n_fft / 2 are considered) belongs to it when its mel value lies
    strictly between the outer points; its weight rises from 0 at the left
    point to 1 at the centre and falls to 0 at the right one (binary32, no
    area normalisation)."""
    n_fft = fft_size() if n_fft is None else n_fft
    width = _f32(_f32(rate) / _f32(n_fft))
    lo, hi = mel(low), mel(high)
    delta = _f32(_f32(hi - lo) / _f32(num_bins + 1))
    bin_mel = [mel(_f32(width * _f32(i))) for i in range(n_fft // 2)]
    filters = []
    for j in range(num_bins):
        left, center, right = (_f32(lo + _f32(_f32(j + k) * delta)) for k in range(3))
        first, weights = None, []
        for i, m in enumerate(bin_mel):
            if m > right:
                break
            if not left < m < right:
                continue
            if first is None:
                first = i
            if m <= center:
                weights.append(_f32(_f32(m - left) / _f32(center - left)))
            else:
                weights.append(_f32(_f32(right - m) / _f32(right - center)))
        if first is None:
            raise ValueError(f"mel filter {j} holds no FFT bin")  # not for the example's parameters
        filters.append((first, np.array(weights, np.float32)))
    return filters


class FbankExtractor:
    """The example's feature extractor: tables built once
    (``create_fbank_fex_module``), then :meth:`compute` per frame.

    Attributes
    ----------
    window : ndarray of float32 [480]
    filters : list of (int, ndarray of float32)
        First FFT bin and weights of each mel filter (:func:`mel_filters`).
    n_fft : int
        512.
    """

    def __init__(self, num_bins=NUM_BINS, frame_length=FRAME_LENGTH, rate=SAMPLE_RATE, low=LOW_HZ, high=HIGH_HZ):
        self.frame_length = frame_length
        self.n_fft = fft_size(frame_length)
        self.window = hann_window(frame_length)
        self.filters = mel_filters(num_bins, self.n_fft, rate, low, high)

    @property
    def num_bins(self):
        return len(self.filters)

    def power_spectrum(self, frames):
        """Steps 1-4 of ``fbank_features::compute`` for frames [F, 480] of
        int16 samples: float32 power [F, n_fft // 2 + 1] (bins 0 and n_fft/2
        included, although no filter uses them)."""
        x = np.asarray(frames)
        if x.ndim != 2 or x.shape[1] != self.frame_length:
            raise ValueError(f"frames: expected [F, {self.frame_length}] samples, got {list(x.shape)}")
        u = x.astype(np.float32) * _f32(2.0 ** -15)                 # exact
        v = np.zeros((x.shape[0], self.n_fft), np.float32)
        v[:, :self.frame_length] = u * self.window                  # float32 products
        spec = np.fft.rfft(v.astype(np.float64), axis=1)            # unscaled DFT, accurate
        re = spec.real.astype(np.float32)
        im = spec.imag.astype(np.float32)
        return re * re + im * im                                    # f32(f32(re*re) + f32(im*im))

    def filter_bank(self, power):
        """Step 5: filter energies [F, num_bins], float32 sums from 0.0 in
        increasing bin order, an exact 0.0 replaced by FLT_MIN."""
        p = np.asarray(power, np.float32)
        out = np.empty((p.shape[0], self.num_bins), np.float32)
        for j, (first, weights) in enumerate(self.filters):
            acc = np.zeros(p.shape[0], np.float32)
            for k, wt in enumerate(weights):
                acc = acc + p[:, first + k] * wt
            out[:, j] = np.where(acc == 0.0, FLT_MIN, acc)
        return out

    def compute(self, frames):
        """Log mel filter-bank features of frames [F, 480] (int16 samples):
        float32 [F, 13], natural log of :meth:`filter_bank`."""
        e = self.filter_bank(self.power_spectrum(frames))
        flat = e.astype(np.float64).ravel()
        logs = np.fromiter(map(math.log, flat), np.float64, count=flat.size)
        return logs.astype(np.float32).reshape(e.shape)


def to_fx8(features, frac_bits=FEATURE_FRAC_BITS):
    """The features as the network's fx8 input, as ``mli_hlp_float_to_fx_tensor``
    converts them: 8x rounded half away from zero in float32, saturated to
    int8 (an empty band, -87.3, gives -128).  int8 array of the same shape."""
    f = np.asarray(features, np.float32)
    return Tensor.from_float(f, "fx8", frac_bits, saturate=True).numpy().copy()

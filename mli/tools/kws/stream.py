"""The example's streaming schedule (``kws_dsconv_lstm_nn::process`` and
``get_result``), and the features of a whole WAV file along it.

The firmware's main loop hands the module 240 samples (15 ms) per
``process`` call, zero padded past the end of the file; calls are numbered
c = 0, 1, ...

* Call c >= 1 computes feature vector k = c - 1 from the 480 samples
  s[240k : 240k + 480] (the previous and the current call's samples).
* Inference n runs during call 65 + 16n, on the feature vectors
  16n .. 16n + 64 (oldest first: row 0 of the network input).
* Its result carries the timestamps start = 16n and end = 65 + 16n in 15 ms
  units (the firmware writes start as ``end - 65 if end > 65 else 0``).
* The loop stops after the call whose read reached the end of the file
  (the first read with fewer than 240 samples left, so one all-zero call
  follows a file of a whole number of calls) once at least one result has
  been produced: a file shorter than 65 calls is padded with zero calls up to
  the first inference at call 65.

test.wav (83200 samples): 347 calls, 346 feature vectors, 18 inferences.
"""
from dataclasses import dataclass

import numpy as np

from .features import FRAME_LENGTH, FRAME_STRIDE, FbankExtractor, to_fx8
from .wav import read_wav

SAMPLES_PER_CALL = FRAME_STRIDE            # 240
FEATURES_PER_INFERENCE = 65
FEATURE_STRIDE_PER_INFERENCE = 16
TIMESTAMP_MS = SAMPLES_PER_CALL * 1000 // 16000   # 15 ms per call, integer arithmetic as the firmware
FIRST_INFERENCE_CALL = FEATURES_PER_INFERENCE     # call 65 stores feature 64
CHUNK_FRAMES = 2048                        # frames per FFT batch (bounds the memory of long files)


def process_calls(num_samples):
    """How many ``process`` calls the firmware makes for a file of
    `num_samples` samples: max(num_samples // 240, 65) + 1."""
    n = int(num_samples)
    if n < 0:
        raise ValueError(f"num_samples: expected >= 0, got {n}")
    return max(n // SAMPLES_PER_CALL, FIRST_INFERENCE_CALL) + 1


def inference_count(calls):
    """Inferences run in `calls` process calls (at calls 65, 81, ...)."""
    last = int(calls) - 1
    return 0 if last < FIRST_INFERENCE_CALL else (last - FIRST_INFERENCE_CALL) // FEATURE_STRIDE_PER_INFERENCE + 1


def inference_call(n):
    """The process call that runs inference `n`: 65 + 16n."""
    return FIRST_INFERENCE_CALL + FEATURE_STRIDE_PER_INFERENCE * int(n)


def inference_features(n):
    """The feature vectors inference `n` reads: ``slice(16n, 16n + 65)``."""
    first = FEATURE_STRIDE_PER_INFERENCE * int(n)
    return slice(first, first + FEATURES_PER_INFERENCE)


def timestamps(n):
    """(start, end) of inference `n`'s result, in 15 ms units, as ``get_result``."""
    end = inference_call(n)
    return (end - FEATURES_PER_INFERENCE if end > FEATURES_PER_INFERENCE else 0), end


def frames(samples, first, count):
    """Frames ``first .. first + count - 1`` as int16 [count, 480]: frame k is
    s[240k : 240k + 480], zeros past the end of `samples`."""
    s = np.asarray(samples, np.int16).reshape(-1)
    lo, hi = FRAME_STRIDE * first, FRAME_STRIDE * (first + count - 1) + FRAME_LENGTH
    span = np.zeros(max(hi - lo, 0), np.int16)
    avail = s[lo:hi]
    span[:avail.size] = avail
    idx = FRAME_STRIDE * np.arange(count)[:, None] + np.arange(FRAME_LENGTH)[None, :]
    return span[idx] if count else np.zeros((0, FRAME_LENGTH), np.int16)


@dataclass
class FeatureStream:
    """A file's samples and the features the firmware computes from them.

    Attributes
    ----------
    samples : ndarray of int16
    calls : int
        ``process`` calls of the run (:func:`process_calls`).
    features : ndarray of float32 [calls - 1, 13]
        The FBANK features (:class:`~mli.tools.kws.features.FbankExtractor`).
    features_fx8 : ndarray of int8 [calls - 1, 13]
        Converted to the network's fx8 input (frac bits 3).
    """

    samples: np.ndarray
    calls: int
    features: np.ndarray
    features_fx8: np.ndarray

    @property
    def inferences(self):
        """Number of inferences of the run."""
        return inference_count(self.calls)

    def network_input(self, n):
        """The network input of inference `n`: int8 [65, 13] (rows = time,
        oldest first; the tensor is [1, 65, 13] CHW, frac bits 3)."""
        if not 0 <= int(n) < self.inferences:
            raise IndexError(f"inference {n}: the run has {self.inferences} (0..{self.inferences - 1})")
        return self.features_fx8[inference_features(n)]


def features_of_samples(samples, extractor=None):
    """The features of a whole recording along the firmware's schedule.

    Parameters
    ----------
    samples : array_like of int16
        16 kHz mono samples.
    extractor : FbankExtractor, optional
        Reused tables (built when not given).

    Returns
    -------
    FeatureStream
    """
    s = np.asarray(samples)
    if s.dtype != np.int16 or s.ndim != 1:
        raise ValueError(f"samples: expected a 1-D int16 array, got {s.dtype}{list(s.shape)}")
    fex = extractor if extractor is not None else FbankExtractor()
    calls = process_calls(s.size)
    k_total = calls - 1
    feats = np.empty((k_total, fex.num_bins), np.float32)
    for k0 in range(0, k_total, CHUNK_FRAMES):
        m = min(CHUNK_FRAMES, k_total - k0)
        feats[k0:k0 + m] = fex.compute(frames(s, k0, m))
    return FeatureStream(s, calls, feats, to_fx8(feats))


def features_of_wav(path, strict=True, extractor=None):
    """:func:`features_of_samples` of a WAV file read by
    :func:`~mli.tools.kws.wav.read_wav` (`strict` as there)."""
    return features_of_samples(read_wav(path, strict), extractor)

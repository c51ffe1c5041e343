"""The example's post-processor (``simple_kws_postprocess``) and its printed
lines (``print_keyword_info``).

For each result (12 probabilities, start, end) in order: b = the first
index of the maximum; a silence result (b = 0) counts one more silence;
any other result replaces the stored keyword when the last result was a
silence or when its top probability is strictly above the stored keyword's
probability in the stored vector, and resets the silence count.  The stored
keyword is reported when the silence count becomes 1 (the first silence
after it) and, at :meth:`PostProcessor.finalize`, when the last result was
not a silence.  So of a run of keyword results the one with the highest
top probability (the earliest of equals) is printed once, when silence
follows or the stream ends.
"""
import numpy as np

CLASSES = ("_silence_", "_unknown_", "yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
SILENCE_ID = 0
TIMESTAMP_MS = 15


def probabilities(softmax_q15, frac_bits=15):
    """``mli_hlp_fx_tensor_to_float`` of the softmax output: float32
    q * 2**-frac_bits (exact)."""
    q = np.asarray(softmax_q15)
    return np.float32(2.0 ** -int(frac_bits)) * q.astype(np.float32)


def arg_max(p):
    """First index of the maximum (scan from 0, replace only on strictly greater)."""
    best = 0
    for i in range(1, len(p)):
        if p[i] > p[best]:
            best = i
    return best


def format_detection(p, start, end, classes=CLASSES):
    """One printed line, without its newline: C format
    ``"%.3f\\t%.3f\\t\\"%s\\"(%.3f%%)"`` of start and end in seconds (15 ms
    units / 1000 in float32), the class name and its probability * 100 in
    float32 (printf rounds the exact binary value, as Python does)."""
    b = arg_max(p)
    pct = np.float32(np.float32(p[b]) * np.float32(100.0))
    start_s = np.float32(np.float32(int(start) * TIMESTAMP_MS) / np.float32(1000.0))
    end_s = np.float32(np.float32(int(end) * TIMESTAMP_MS) / np.float32(1000.0))
    return "%.3f\t%.3f\t\"%s\"(%.3f%%)" % (float(start_s), float(end_s), classes[b], float(pct))


class PostProcessor:
    """``simple_kws_postprocess(classes, silence_id=0, silence_to_finalize=1)``.

    :meth:`process` takes each result in order and returns the line to print
    (or None); :meth:`finalize` returns the last one, if any.
    """

    def __init__(self, num_classes=len(CLASSES), silence_id=SILENCE_ID, silences_to_report=1, classes=CLASSES):
        if len(classes) != num_classes:
            raise ValueError(f"classes: {len(classes)} names for {num_classes} classes")
        self.num_classes = num_classes
        self.silence_id = silence_id
        self.silences_to_report = silences_to_report
        self.classes = tuple(classes)
        self.keyword = silence_id
        self.stored = None          # (probabilities, start, end)
        self.silences = silences_to_report

    def process(self, p, start, end):
        """Take one result: `p` the class probabilities (float32 [12]),
        `start`/`end` its timestamps in 15 ms units.  Returns the line to
        print now, or None."""
        p = np.asarray(p, np.float32)
        if p.shape != (self.num_classes,):
            raise ValueError(f"p: expected {self.num_classes} probabilities, got shape {list(p.shape)}")
        b = arg_max(p)
        if b == self.silence_id:
            self.silences += 1
        else:
            if self.silences >= self.silences_to_report or self.stored[0][self.keyword] < p[b]:
                self.keyword = b
                self.stored = (p.copy(), int(start), int(end))
            self.silences = 0
        if self.silences == self.silences_to_report and self.keyword != self.silence_id:
            return self.line()
        return None

    def finalize(self):
        """The stored keyword's line when the last result was not a silence, else None."""
        if self.silences < self.silences_to_report:
            self.silences = self.silences_to_report
            return self.line()
        return None

    def line(self):
        """The stored keyword's line (:func:`format_detection`)."""
        p, start, end = self.stored
        return format_detection(p, start, end, self.classes)


def detections(softmax_q15, starts, ends, frac_bits=15, classes=CLASSES):
    """The lines the example prints for a series of softmax outputs.

    Parameters
    ----------
    softmax_q15 : array_like of int16 [N, 12]
        One softmax output per inference, in order.
    starts, ends : sequences of int [N]
        Their timestamps in 15 ms units (:func:`mli.tools.kws.stream.timestamps`).

    Returns
    -------
    list of str
        The printed lines, without newlines.
    """
    q = np.asarray(softmax_q15)
    if q.ndim != 2 or q.shape[1] != len(classes) or len(starts) != len(q) or len(ends) != len(q):
        raise ValueError(f"softmax_q15: expected [N, {len(classes)}] with N starts and ends, got "
                         f"{list(q.shape)}, {len(starts)}, {len(ends)}")
    pp = PostProcessor(len(classes), classes=classes)
    lines = [pp.process(p, s, e) for p, s, e in zip(probabilities(q, frac_bits), starts, ends)]
    lines.append(pp.finalize())
    return [ln for ln in lines if ln is not None]

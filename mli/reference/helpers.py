"""Conversion helpers (SPEC section 11 and shared/data/har/README.md)."""

import numpy as np

from .fxmath import asr16, check_rounding, dtype_of_bits, sat, to_container


def convert_tensor(x, f_in, out_kind_bits, f_out, rounding="convergent"):
    """``mli_hlp_convert_tensor``: re-quantise to another frac / container.

    Each value is ``ASR16(x, f_in - f_out)`` (SHIFT family rounding; a
    negative shift is a left shift saturated to 16 bits), then saturated to
    8 bits for an 8-bit output.

    Parameters
    ----------
    x : array_like of int
        Input values (int8 or int16), frac `f_in`.
    f_in : int
    out_kind_bits : {8, 16}
        Output container.
    f_out : int
    rounding : {"convergent", "up"}

    Returns
    -------
    numpy.ndarray
        Same shape as `x`, int8 or int16.
    """
    check_rounding(rounding)
    if out_kind_bits not in (8, 16):
        raise ValueError(f"out_kind_bits must be 8 or 16, got {out_kind_bits!r}")
    y = asr16(x, int(f_in) - int(f_out), rounding)
    return to_container(sat(y, out_kind_bits), out_kind_bits).reshape(np.shape(x))


def float_to_fx(xf32, el_bits, frac):
    """``mli_hlp_float_to_fx_tensor`` of the MLI examples (float32 arithmetic).

    ``t = float32(2**frac) * x + (0.5 if x > 0 else -0.5)`` evaluated in
    float32, truncated toward zero, clamped to the container.  (In C the
    truncation to int32 is undefined for out-of-range values; here they
    saturate, and NaN raises ``ValueError``.)

    Parameters
    ----------
    xf32 : array_like of float
        Converted to float32 first.
    el_bits : {8, 16}
    frac : int

    Returns
    -------
    numpy.ndarray
        int8 or int16, same shape as `xf32`.
    """
    if el_bits not in (8, 16):
        raise ValueError(f"el_bits must be 8 or 16, got {el_bits!r}")
    x = np.asarray(xf32, dtype=np.float32)
    if np.isnan(x).any():
        raise ValueError("float_to_fx: NaN input")
    scale = np.float32(2.0 ** int(frac))
    with np.errstate(over="ignore"):
        t = scale * x + np.where(x > 0, np.float32(0.5), np.float32(-0.5))
    info = np.iinfo(dtype_of_bits(el_bits))
    t = np.clip(np.trunc(t.astype(np.float64)), info.min, info.max)
    return t.astype(dtype_of_bits(el_bits))


def fx_to_float(x, frac):
    """``mli_hlp_fx_tensor_to_float`` of the MLI examples.

    Returns ``float32(1 / 2**frac) * x`` computed in float32 (exact for
    container values and usual frac bits), same shape as `x`.
    """
    x = np.asarray(x)
    scale = np.float32(1.0 / 2.0 ** int(frac))
    return (scale * x.astype(np.float32)).astype(np.float32)

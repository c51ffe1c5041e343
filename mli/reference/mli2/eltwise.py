"""The element-wise steps of the cells (SPEC_MLI2 section 10): multiply and add in
the fx and sa8 families."""

import functools

from .fxmath import _arr, _i, add_sat, div_trunc, norm32, rshr, sat, shl, sub_sat


# Section 10: element-wise steps of the cells.  FX formats are frac bits,
# sa8 formats (zero point, scale, scale_frac_bits) triples.

def fx_mul(a, fa, b, fb, fo, rounding):
    return sat(rshr(_arr(a) * _arr(b), min(fa + fb - fo, 31), 64, rounding), 16)


def fx_add(a, fa, b, fb, fo, rounding, sub=False):
    # the coarser operand is left-shifted (saturating, 32 bits) to the finer format
    a32 = rshr(a, min(fa - fb, 0), 32, rounding)
    b32 = rshr(b, min(fb - fa, 0), 32, rounding)
    s = sub_sat(a32, b32, 32) if sub else add_sat(a32, b32, 32)
    return sat(rshr(s, min(max(fa, fb) - fo, 31), 64, rounding), 16)


@functools.lru_cache(maxsize=4096)
def _sa_factor(s, so, shift, cap, rounding):
    """Shared preparation of MUL / ADD: the 16-bit factor c and its shift (10.2).

    `cap` is 31 (MUL) or 23 (ADD): the largest shift kept after moving the
    excess into c."""
    n = _i(norm32(s))
    v = div_trunc(_i(shl(s, n, 32)), so)
    shift = shift + n
    nv = _i(norm32(v))
    c = _i(sat(rshr(v, 16 - nv, 32, rounding), 16))
    shift -= 16 - nv
    e = max(shift - cap, 0) + min(shift + 31, 0)
    return _i(rshr(c, e, 16, rounding)), shift - e


def sa_mul(a, fmt_a, b, fmt_b, fmt_o, rounding):
    (za, sa_, fa), (zb, sb, fb), (zo, so, fo) = fmt_a, fmt_b, fmt_o
    c, post = _sa_factor(sa_ * sb, so, fa + fb - fo, 31, rounding)
    p = sub_sat(a, za, 16) * sub_sat(b, zb, 16)
    pre = min(max(post - 21, 0), 3)
    t = sat(rshr(p, pre, 32, rounding), 16)
    t = sat(rshr(t * c, post - pre, 32, rounding), 16)
    return sat(add_sat(t, zo, 16), 8)


def sa_add(a, fmt_a, b, fmt_b, fmt_o, rounding, sub=False):
    (za, sa_, fa), (zb, sb, fb), (zo, so, fo) = fmt_a, fmt_b, fmt_o
    ca, pre_a = _sa_factor(sa_, so, fa - fo, 23, rounding)
    cb, pre_b = _sa_factor(sb, so, fb - fo, 23, rounding)
    x = rshr(sub_sat(a, za, 16) * ca, pre_a, 32, rounding)
    y = rshr(sub_sat(b, zb, 16) * cb, pre_b, 32, rounding)
    s = sub_sat(x, y, 32) if sub else add_sat(x, y, 32)
    return sat(add_sat(sat(s, 16), zo, 16), 8)


def elt_mul(a, fa, b, fb, fo, rounding):
    """MUL of either family, chosen by the format type."""
    if isinstance(fo, tuple):
        return sa_mul(a, fa, b, fb, fo, rounding)
    return fx_mul(a, fa, b, fb, fo, rounding)


def elt_add(a, fa, b, fb, fo, rounding, sub=False):
    if isinstance(fo, tuple):
        return sa_add(a, fa, b, fb, fo, rounding, sub)
    return fx_add(a, fa, b, fb, fo, rounding, sub)

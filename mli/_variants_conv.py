"""The convolution functions of the C core, as data (MLI 1.1's names).

The rows are those of the X-macro tables the C functions are generated from,
MLIPY_CONV2D_CHW_VARIANTS (csrc/include/mli_krn_conv2d_spec_api.h) and
MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS (mli_krn_depthwise_conv2d_spec_api.h),
in the order of the dispatchers' if-chains; tests/test_mli11_conv_oracle.py
checks that they agree with the headers and with the symbols of mli._core.
Stubs and wrappers of the Python layer can be generated from `functions()`.

A row: (suffix, kinds, kw, kh, ch, stride, pad, core_fx16, core_fx8)
  kinds       "ALL" (fx8, fx16, fx8w16d) or "FX16" (fx16 only)
  kw, kh, ch  the kernel width, height and input channels the function fixes
  stride      the stride it fixes in both directions (0: the call's)
  pad         "NOPAD" (all 0), "KRNPAD" (stride 1 with a fixed kernel: the
              'same' padding (kh-1)//2, kh//2, (kw-1)//2, kw//2 for top, bottom,
              left, right; otherwise the call's, which the dispatcher wants at
              most that), "NONE" (the call's)
  core_fx16 / core_fx8   MLI's loop nest for fx16 / for fx8 and fx8w16d:
              "ANY", "STR1", "K1X1_STR1" or "SIMPLE"
Every function takes (in, weights, bias, cfg: mli_conv2d_cfg, out) and
returns an mli_status; the mli_debug_krn_* twins of the dispatchers return a
char * (the name of the function the dispatcher would call).
"""

KINDS = ("fx8", "fx16", "fx8w16d")

CONV2D_CHW = (
    ("k7x7_ch1_str1_krnpad", "ALL", 7, 7, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k7x7_str1_krnpad", "ALL", 7, 7, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k6x6_ch1_str1_krnpad", "ALL", 6, 6, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k6x6_str1_krnpad", "ALL", 6, 6, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k5x5_ch1_str1_nopad", "FX16", 5, 5, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k5x5_ch1_str1_krnpad", "ALL", 5, 5, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k5x5_str1_nopad", "FX16", 5, 5, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k5x5_str1_krnpad", "ALL", 5, 5, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k4x4_ch1_str1_krnpad", "ALL", 4, 4, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k4x4_str1_krnpad", "ALL", 4, 4, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k3x3_ch1_str1_krnpad", "ALL", 3, 3, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k3x3_str1_krnpad", "ALL", 3, 3, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k3x1_str1_krnpad", "ALL", 3, 1, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k2x2_ch1_str1_krnpad", "ALL", 2, 2, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k2x2_str1_krnpad", "ALL", 2, 2, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k2x1_str1_krnpad", "ALL", 2, 1, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k1x3_str1_krnpad", "ALL", 1, 3, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k1x2_str1_krnpad", "ALL", 1, 2, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k1x1_ch4_str1_nopad", "ALL", 1, 1, 4, 1, "NOPAD", "K1X1_STR1", "K1X1_STR1"),
    ("k1x1_ch3_str1_nopad", "ALL", 1, 1, 3, 1, "NOPAD", "K1X1_STR1", "K1X1_STR1"),
    ("k1x1_ch1_str1_nopad", "ALL", 1, 1, 1, 1, "NOPAD", "K1X1_STR1", "K1X1_STR1"),
    ("k1x1_str1_nopad", "ALL", 1, 1, 0, 1, "NOPAD", "K1X1_STR1", "K1X1_STR1"),
    ("k1xn_str1", "ALL", 1, 0, 0, 1, "NONE", "STR1", "STR1"),
    ("knx1_str1", "ALL", 0, 1, 0, 1, "NONE", "STR1", "STR1"),
    ("ch1_str1", "ALL", 0, 0, 1, 1, "NONE", "STR1", "ANY"),
    ("str1", "ALL", 0, 0, 0, 1, "NONE", "ANY", "ANY"),
    ("k3x3_ch1_krnpad", "ALL", 3, 3, 1, 0, "KRNPAD", "ANY", "ANY"),
    ("k3x3_krnpad", "ALL", 3, 3, 0, 0, "KRNPAD", "ANY", "ANY"),
    ("k2x2_ch1_krnpad", "ALL", 2, 2, 1, 0, "KRNPAD", "ANY", "ANY"),
    ("k2x2_krnpad", "ALL", 2, 2, 0, 0, "KRNPAD", "ANY", "ANY"),
    ("k1x1_ch8_nopad", "ALL", 1, 1, 8, 0, "NOPAD", "SIMPLE", "SIMPLE"),
    ("k1x1_ch4_nopad", "ALL", 1, 1, 4, 0, "NOPAD", "SIMPLE", "SIMPLE"),
    ("k1x1_ch3_nopad", "ALL", 1, 1, 3, 0, "NOPAD", "SIMPLE", "SIMPLE"),
    ("k1x1_ch1_nopad", "ALL", 1, 1, 1, 0, "NOPAD", "SIMPLE", "SIMPLE"),
    ("k1x1_nopad", "ALL", 1, 1, 0, 0, "NOPAD", "SIMPLE", "SIMPLE"),
)

DEPTHWISE_CONV2D_CHW = (
    ("k7x7_ch1_str1_nopad", "ALL", 7, 7, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k7x7_ch1_str1_krnpad", "ALL", 7, 7, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k7x7_str1_nopad", "ALL", 7, 7, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k7x7_str1_krnpad", "ALL", 7, 7, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k6x6_ch1_str1_nopad", "ALL", 6, 6, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k6x6_ch1_str1_krnpad", "ALL", 6, 6, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k6x6_str1_nopad", "ALL", 6, 6, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k6x6_str1_krnpad", "ALL", 6, 6, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k5x5_ch1_str1_nopad", "ALL", 5, 5, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k5x5_ch1_str1_krnpad", "ALL", 5, 5, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k5x5_str1_nopad", "ALL", 5, 5, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k5x5_str1_krnpad", "ALL", 5, 5, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k4x4_ch1_str1_nopad", "ALL", 4, 4, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k4x4_ch1_str1_krnpad", "ALL", 4, 4, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k4x4_str1_nopad", "ALL", 4, 4, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k4x4_str1_krnpad", "ALL", 4, 4, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k3x3_ch1_str1_nopad", "ALL", 3, 3, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k3x3_ch1_str1_krnpad", "ALL", 3, 3, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k3x3_str1_nopad", "ALL", 3, 3, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k3x3_str1_krnpad", "ALL", 3, 3, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k2x2_ch1_str1_nopad", "ALL", 2, 2, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k2x2_ch1_str1_krnpad", "ALL", 2, 2, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k2x2_str1_nopad", "ALL", 2, 2, 0, 1, "NOPAD", "STR1", "STR1"),
    ("k2x2_str1_krnpad", "ALL", 2, 2, 0, 1, "KRNPAD", "STR1", "STR1"),
    ("k2x1_ch1_str1_nopad", "ALL", 2, 1, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k2x1_ch1_str1_krnpad", "ALL", 2, 1, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k1x2_ch1_str1_nopad", "ALL", 1, 2, 1, 1, "NOPAD", "STR1", "STR1"),
    ("k1x2_ch1_str1_krnpad", "ALL", 1, 2, 1, 1, "KRNPAD", "STR1", "STR1"),
    ("k1xn_str1", "ALL", 1, 0, 0, 1, "NONE", "STR1", "STR1"),
    ("knx1_str1", "ALL", 0, 1, 0, 1, "NONE", "STR1", "STR1"),
    ("ch1_str1", "ALL", 0, 0, 1, 1, "NONE", "STR1", "STR1"),
    ("str1_krnpad", "ALL", 0, 0, 0, 1, "KRNPAD", "STR1", "STR1"),
)

TABLES = {"conv2d_chw": CONV2D_CHW, "depthwise_conv2d_chw": DEPTHWISE_CONV2D_CHW}

# Layouts of the families (the last index varies fastest).
LAYOUTS = {
    "conv2d_chw": {"in": "CHW", "weights": "[OC, C, KH, KW]", "bias": "[OC]", "out": "CHW"},
    "depthwise_conv2d_chw": {"in": "CHW", "weights": "[C, 1, KH, KW]", "bias": "[C]", "out": "CHW"},
    "conv2d_hwc": {"in": "HWC", "weights": "[OC, KH, KW, C]", "bias": "[OC]", "out": "HWC"},
}


def same_padding(kw, kh):
    """(top, bottom, left, right) of the 'same' padding of a kh x kw kernel."""
    return ((kh - 1) // 2, kh // 2, (kw - 1) // 2, kw // 2)


def variants(family, kind):
    """The rows of `family` present in `kind`, in dispatch order, as dicts."""
    rows = []
    for sfx, kinds, kw, kh, ch, stride, pad, c16, c8 in TABLES[family]:
        if kinds == "FX16" and kind != "fx16":
            continue
        pins = pad == "NOPAD" or (pad == "KRNPAD" and stride == 1 and kw and kh)
        rows.append(dict(suffix=sfx, kw=kw, kh=kh, ch=ch, stride=stride, pad=pad,
                         core=c16 if kind == "fx16" else c8,
                         fixed_padding=(0, 0, 0, 0) if pad == "NOPAD" else same_padding(kw, kh) if pins else None))
    return rows


def functions():
    """Every convolution function of the C core: dicts with name, family,
    kind, variant ("" for a dispatcher, "generic", or a suffix), returns
    ("mli_status" or "char *"), and for specialisations their table row."""
    out = []
    for kind in KINDS:
        for family in ("conv2d_chw", "depthwise_conv2d_chw"):
            base = f"mli_krn_{family}_{kind}"
            out.append(dict(name=base, family=family, kind=kind, variant="", returns="mli_status"))
            out.append(dict(name=f"mli_debug_krn_{family}_{kind}", family=family, kind=kind, variant="",
                            returns="char *", debug=True))
            out.append(dict(name=base + "_generic", family=family, kind=kind, variant="generic", returns="mli_status"))
            for row in variants(family, kind):
                out.append(dict(name=f"{base}_{row['suffix']}", family=family, kind=kind, variant=row["suffix"],
                                returns="mli_status", row=row))
        out.append(dict(name=f"mli_krn_conv2d_hwc_{kind}", family="conv2d_hwc", kind=kind, variant="",
                        returns="mli_status"))
    return out

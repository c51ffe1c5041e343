/* The shape-specialised variants of MLI 1.1 (SPEC_MLI11_MORE 3): what a
 * variant fixes, its dispatcher's condition, and the loop it runs.  The
 * lists themselves are csrc/src/kernels/mli_krn_variants_more.h (generated
 * from mli/_variants_more.py); a family's template turns one into a table
 * of these descriptors and one thin entry point per row. */
#ifndef MLI_PRV_VARIANT_H
#define MLI_PRV_VARIANT_H

#include <stdbool.h>
#include <stdint.h>

/* the padding a variant uses */
#define MLI_PAD_ZERO 1 /* nopad: all four set to 0 */
#define MLI_PAD_CFG 0  /* the cfg's */
/* the dispatcher's condition on the padding */
#define MLI_WHEN_ANY 0
#define MLI_WHEN_ZERO 1 /* all four 0 */
#define MLI_WHEN_SAME 2 /* each at most the 'same' value of the fixed kernel */
/* the loop MLI runs */
#define MLI_CORE_NOPAD 0     /* whole windows over the whole output */
#define MLI_CORE_PAD 1       /* padding-free centre, then borders clipped on both sides */
#define MLI_CORE_PAD_SMALL 2 /* centre, then borders clipped by at most one column a side */
#define MLI_CORE_POINTWISE 3 /* the sa8 1x1 loop */

typedef struct {
    const char *name;           /* the C function, e.g. "mli_krn_maxpool_chw_fx8_k3x3_nopad" */
    uint8_t kw, kh, stride;     /* fixed kernel width, height and stride; 0 = the call's */
    uint8_t pad_zero;           /* MLI_PAD_* */
    uint8_t when;               /* MLI_WHEN_* */
    uint8_t core;               /* MLI_CORE_* */
} mli_prv_variant;

/* One row of a table built from an X-macro list, for the functions named
 * `prefix`_<suffix>. */
#define MLI_PRV_VARIANT_ROW(prefix, sfx, kw, kh, st, pad, when, core) \
    {prefix "_" #sfx, kw, kh, st, MLI_PAD_##pad, MLI_WHEN_##when, MLI_CORE_##core},

/* Whether the dispatcher takes variant v for this kernel size, stride and
 * padding (the kernel size is the cfg's for pools, the weights' for
 * convolutions). */
static inline bool mli_prv_variant_matches(const mli_prv_variant *v, int64_t kw, int64_t kh, int sw, int sh,
                                           int pt, int pb, int pl, int pr) {
    if (v->kw && v->kw != kw) return false;
    if (v->kh && v->kh != kh) return false;
    if (v->stride && (sw != v->stride || sh != v->stride)) return false;
    if (v->when == MLI_WHEN_ZERO) return !pt && !pb && !pl && !pr;
    if (v->when == MLI_WHEN_SAME)
        return pt <= (v->kh - 1) / 2 && pb <= v->kh / 2 && pl <= (v->kw - 1) / 2 && pr <= v->kw / 2;
    return true;
}

/* The first row of `table` (n rows, the generic one last) that matches. */
static inline const mli_prv_variant *mli_prv_variant_pick(const mli_prv_variant *table, int n, int64_t kw,
                                                          int64_t kh, int sw, int sh, int pt, int pb, int pl,
                                                          int pr) {
    for (int i = 0; i < n - 1; i++)
        if (mli_prv_variant_matches(&table[i], kw, kh, sw, sh, pt, pb, pl, pr)) return &table[i];
    return &table[n - 1];
}

#endif /* MLI_PRV_VARIANT_H */

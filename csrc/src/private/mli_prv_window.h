/* Window geometry of MLI 1.1's pooling and convolution loops
 * (SPEC_MLI11_MORE 2): the output size, the split of the output into a
 * padding-free centre and up to four border areas, and the input window
 * each loop kind reads for an output position.
 *
 * MLI runs its loops on a variant's effective values (a specialisation's
 * fixed kernel, stride and padding, the cfg's otherwise).  The kernels here
 * run the same areas in the same order with the same windows; this header
 * also gives the bounds of what those loops read and write, which are
 * checked before anything is written (every window coordinate is monotone
 * in the output row and column, so an area's extremes are at its corners). */
#ifndef MLI_PRV_WINDOW_H
#define MLI_PRV_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "mli_check.h"

/* MLI's CEIL_DIV in C int: (num + den - 1) / den, truncating (so that a
 * non-positive num gives 0 or a negative count, as MLI's output sizes). */
static inline int64_t mli_prv_ceil_div(int64_t num, int64_t den) { return (num + den - 1) / den; }

/* The effective geometry of one call. */
typedef struct {
    int64_t in_h, in_w;          /* input height and width */
    int64_t kh, kw, sh, sw;      /* kernel and stride */
    int64_t pt, pb, pl, pr;      /* padding top, bottom, left, right */
    int64_t out_h, out_w;        /* output size, from the values above */
} mli_prv_geom;

static inline void mli_prv_geom_out(mli_prv_geom *g) {
    g->out_h = mli_prv_ceil_div(g->in_h + g->pt + g->pb - g->kh + 1, g->sh);
    g->out_w = mli_prv_ceil_div(g->in_w + g->pl + g->pr - g->kw + 1, g->sw);
}

/* The loops whose windows are computed here (SPEC_MLI11_MORE 2):
 * FULL: the padding-free loop, a whole kernel at (r*sh - pt, c*sw - pl);
 * CLIP: the border loop, the window clipped to the input on both sides;
 * CLIP_SMALL: the border loop of maxpool chw k2x2/k3x3 krnpad, rows clipped
 * on both sides, columns by at most one on each side. */
typedef enum { MLI_WIN_FULL = 0, MLI_WIN_CLIP, MLI_WIN_CLIP_SMALL } mli_prv_win_kind;

typedef struct {
    int64_t y, x;        /* first input row and column read */
    int64_t rows, cols;  /* rows and columns read */
    int64_t ky, kx;      /* first kernel row and column (the clipped-off part) */
} mli_prv_win;

static inline int64_t mli_prv_max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t mli_prv_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The element offsets i * stride for i in [first, last], added to the
 * lowest (*lo) and highest (*hi) offset so far: a stride of any sign
 * (mem_stride entries may be negative) puts the extremes at either end. */
static inline void mli_prv_span_add(int64_t *lo, int64_t *hi, int64_t first, int64_t last, int64_t stride) {
    const int64_t a = first * stride, b = last * stride;
    *lo += mli_prv_min64(a, b);
    *hi += mli_prv_max64(a, b);
}

static inline mli_prv_win mli_prv_window(const mli_prv_geom *g, mli_prv_win_kind kind, int64_t r, int64_t c) {
    mli_prv_win w;
    const int64_t y0 = r * g->sh - g->pt, x0 = c * g->sw - g->pl;
    if (kind == MLI_WIN_FULL) {
        w.y = y0; w.x = x0; w.rows = g->kh; w.cols = g->kw; w.ky = 0; w.kx = 0;
        return w;
    }
    const int64_t top = mli_prv_max64(-y0, 0), bottom = mli_prv_max64(y0 + g->kh - g->in_h, 0);
    int64_t left, right;
    if (kind == MLI_WIN_CLIP) {
        left = mli_prv_max64(-x0, 0);
        right = mli_prv_max64(x0 + g->kw - g->in_w, 0);
    } else { /* one column at most: exact for paddings up to 1 only */
        left = c * g->sw < g->pl ? 1 : 0;
        right = g->in_w + g->pl - g->kw < c * g->sw ? 1 : 0;
    }
    w.y = y0 + top; w.rows = g->kh - top - bottom; w.ky = top;
    w.x = x0 + left; w.cols = g->kw - left - right; w.kx = left;
    return w;
}

/* One area of output positions and the window kind its loop uses. */
typedef struct {
    int64_t row_beg, row_end, clmn_beg, clmn_end;
    mli_prv_win_kind kind;
} mli_prv_area;

static inline bool mli_prv_area_empty(const mli_prv_area *a) {
    return a->row_end <= a->row_beg || a->clmn_end <= a->clmn_beg;
}

/* MLI's split, in its order: the centre [ceil(pt/sh), out_h - ceil(pb/sh)) x
 * [ceil(pl/sw), out_w - ceil(pr/sw)) with whole windows (when `centre`), then
 * for each nonzero padding its border: top and bottom rows over the whole
 * width, then left and right columns over the centre rows.  Areas that
 * cover no position are left out (MLI's loops do nothing there).  Returns
 * how many were written to `a` (at most 5). */
static inline int mli_prv_pad_areas(const mli_prv_geom *g, bool centre, mli_prv_win_kind border, mli_prv_area a[5]) {
    const int64_t rb = mli_prv_ceil_div(g->pt, g->sh), re = g->out_h - mli_prv_ceil_div(g->pb, g->sh);
    const int64_t cb = mli_prv_ceil_div(g->pl, g->sw), ce = g->out_w - mli_prv_ceil_div(g->pr, g->sw);
    const mli_prv_area all[5] = {
        {rb, re, cb, ce, MLI_WIN_FULL},
        {0, g->pt ? rb : 0, 0, g->out_w, border},
        {g->pb ? re : 0, g->pb ? g->out_h : 0, 0, g->out_w, border},
        {rb, re, 0, g->pl ? cb : 0, border},
        {rb, re, g->pr ? ce : 0, g->pr ? g->out_w : 0, border},
    };
    int n = 0;
    for (int i = centre ? 0 : 1; i < 5; i++)
        if (!mli_prv_area_empty(&all[i])) a[n++] = all[i];
    return n;
}

/* The single area of a loop run on the whole output with whole windows. */
static inline int mli_prv_full_area(const mli_prv_geom *g, mli_prv_area a[5]) {
    const mli_prv_area all = {0, g->out_h, 0, g->out_w, MLI_WIN_FULL};
    if (mli_prv_area_empty(&all)) return 0;
    a[0] = all;
    return 1;
}

/* The extremes of the windows of an area: the smallest and largest input
 * row/column read and kernel row/column used (from its four corners). */
typedef struct {
    int64_t y_min, y_max, x_min, x_max;     /* input rows and columns */
    int64_t ky_min, ky_max, kx_min, kx_max; /* kernel rows and columns */
} mli_prv_extent;

static inline void mli_prv_extent_init(mli_prv_extent *e) {
    e->y_min = e->x_min = e->ky_min = e->kx_min = INT64_MAX;
    e->y_max = e->x_max = e->ky_max = e->kx_max = INT64_MIN;
}

static inline void mli_prv_extent_add(mli_prv_extent *e, const mli_prv_geom *g, const mli_prv_area *a) {
    const int64_t rs[2] = {a->row_beg, a->row_end - 1}, cs[2] = {a->clmn_beg, a->clmn_end - 1};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            const mli_prv_win w = mli_prv_window(g, a->kind, rs[i], cs[j]);
            e->y_min = mli_prv_min64(e->y_min, w.y);
            e->y_max = mli_prv_max64(e->y_max, w.y + w.rows - 1);
            e->x_min = mli_prv_min64(e->x_min, w.x);
            e->x_max = mli_prv_max64(e->x_max, w.x + w.cols - 1);
            e->ky_min = mli_prv_min64(e->ky_min, w.ky);
            e->ky_max = mli_prv_max64(e->ky_max, w.ky + w.rows - 1);
            e->kx_min = mli_prv_min64(e->kx_min, w.kx);
            e->kx_max = mli_prv_max64(e->kx_max, w.kx + w.cols - 1);
        }
}

/* Whether every window of the loops is an ordinary one: the input at least
 * as large as the kernel and each padding smaller than the kernel.  Outside
 * this, MLI's border loops produce windows of no or negative size, leave
 * outputs unwritten or reach outside the buffers (SPEC_MLI11_MORE 2). */
static inline bool mli_prv_geom_regular(const mli_prv_geom *g) {
    return g->in_h >= g->kh && g->in_w >= g->kw && g->pt < g->kh && g->pb < g->kh && g->pl < g->kw &&
           g->pr < g->kw && g->kh > 0 && g->kw > 0 && g->sh > 0 && g->sw > 0;
}

/* The safety refusal of a call whose geometry mli_prv_geom_regular rejects
 * (pooling and the sa8 convolutions): which argument is at fault and why. */
static inline mli_status mli_prv_refuse_geometry(const mli_prv_geom *g) {
    if (g->in_h < g->kh || g->in_w < g->kw)
        return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "in", "shape",
                                "is smaller than the kernel: MLI's border loops clip one side only, read and "
                                "write outside the buffers or leave outputs unwritten (SPEC_MLI11_MORE 2)");
    return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "padding",
                            "is not smaller than this variant's fixed kernel: MLI's border windows have no "
                            "or negative size (SPEC_MLI11_MORE 3.5)");
}

#endif /* MLI_PRV_WINDOW_H */

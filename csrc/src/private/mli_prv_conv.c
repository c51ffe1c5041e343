/* The loop nests of MLI 1.1's fx convolutions (see mli_prv_conv.h), the
 * reach of their reads and writes, and the per-type computations
 * (mli_prv_conv_impl.h, included once per type below).
 *
 * Each walk restates the order in which one of MLI's loop nests visits its
 * outputs, where each window starts and how much of it is read.  The border
 * code clips a window on the side it was written for only; that is what MLI
 * computes, so it is what the walks describe (calls whose input is smaller
 * than the kernel, where that goes wrong, are refused before the walk). */
#include <string.h>

#include "mli_prv_conv.h"
#include "mli_check.h"

#define RETURN_IF_BAD(expr) do { const mli_status st_ = (expr); if (st_ != MLI_STATUS_OK) return st_; } while (0)

static inline int imin(int a, int b) { return a > b ? b : a; }
static inline int imax(int a, int b) { return a > b ? a : b; }
/* MLI's CEIL_DIV in C int: (num + den - 1) / den, truncating. */
static inline int ceil_div(int num, int den) { return (num + den - 1) / den; }

typedef struct {
    const mli_conv_geom *g;
    mli_conv_visit visit;
    void *ctx;
} walker;

static void emit(const walker *k, mli_conv_pat pat, int64_t in, int64_t w, int64_t out, int clmns, int rows,
                 int nch, int bias) {
    const mli_conv_point p = {pat, in, w, out, clmns, rows, nch, bias};
    k->visit(k->ctx, &p);
}

/* ------------------------------------------------------------ any stride -- */
/* One output row: the left border columns (clipped on the left, one product
 * per step), the full ones (pairs), the right border (clipped on the right). */
static void row_any(const walker *k, int oc, int ics, int icn, int H, int top, int rows, int left_comp,
                    int right_comp) {
    const mli_conv_geom *g = k->g;
    const int64_t plane = (int64_t)g->in_w * g->in_h;
    int64_t in = plane * ics + (int64_t)g->in_w * ((int64_t)H * g->sh - g->pt + top) + (left_comp - g->pl);
    const int64_t w = (int64_t)oc * icn * g->kw * g->kh + (int64_t)top * g->kw;
    int64_t o = (int64_t)oc * g->out_w * g->out_h + (int64_t)H * g->out_w;
    int W = 0, Win = 0, wo = left_comp;
    if (g->pl > 0)
        for (; Win < left_comp; Win += g->sw) {
            emit(k, MLI_CONV_PAT_SINGLE, in, w + wo, o, g->kw - wo, rows, icn, oc);
            wo = imax(wo - g->sw, 0);
            W++;
            o++;
        }
    in += (int64_t)W * g->sw - g->pl;
    for (; Win < g->out_w * g->sw - right_comp; Win += g->sw) {
        emit(k, MLI_CONV_PAT_PAIRS, in, w, o, g->kw, rows, icn, oc);
        o++;
        in += g->sw;
    }
    if (g->pr > 0)
        for (; Win < g->out_w * g->sw; Win += g->sw) {
            const int clmns = g->kw - imax(Win + g->kw - g->pl - g->in_w, 0);
            emit(k, MLI_CONV_PAT_SINGLE, in, w, o, clmns, rows, icn, oc);
            o++;
            in += g->sw;
        }
}

static void walk_any(const walker *k) {
    const mli_conv_geom *g = k->g;
    const int top_comp = -imin(-g->pt, 0);
    const int bottom_comp = -imin(g->in_h - (g->out_h * g->sh - 1 - g->pt + g->kh), 0);
    const int left_comp = -imin(-g->pl, 0);
    const int right_comp = -imin(g->in_w - (g->out_w * g->sw - g->pl + g->kw - 1), 0);
    for (int oc = 0; oc < g->out_ch; oc++) {
        const int ics = g->depthwise ? oc : 0, icn = g->depthwise ? 1 : g->in_ch;
        int H = 0, Hin = 0, wro = top_comp;
        if (g->pt > 0)
            for (; Hin < top_comp; Hin += g->sh) {
                row_any(k, oc, ics, icn, H, wro, g->kh - wro, left_comp, right_comp);
                wro = imax(wro - g->sh, 0);
                H++;
            }
        for (; Hin < g->out_h * g->sh - bottom_comp; Hin += g->sh)
            row_any(k, oc, ics, icn, H++, 0, g->kh, left_comp, right_comp);
        if (g->pb > 0)
            for (; Hin < g->out_h * g->sh; Hin += g->sh)
                row_any(k, oc, ics, icn, H++, 0, g->kh - imax(Hin + g->kh - g->pt - g->in_h, 0), left_comp,
                        right_comp);
    }
}

/* -------------------------------------------------------------- stride 1 -- */
/* One output row.  With fixed padding of at most 2 the border columns are
 * written out one by one (kernel width - 2, - 1, one product per step; the
 * right ones last column first); otherwise a loop over them, each as ODDEVEN.
 * The interior goes two outputs at a time in lanes, an odd last one alone. */
static void row_str1(const walker *k, int oc, int ics, int icn, int H, int top, int rows, int left_comp,
                     int right_comp) {
    const mli_conv_geom *g = k->g;
    const int64_t plane = (int64_t)g->in_w * g->in_h;
    int64_t in = plane * ics + (int64_t)g->in_w * ((int64_t)H * g->sh - g->pt + top) + (left_comp - g->pl);
    const int64_t w = (int64_t)oc * icn * g->kw * g->kh + (int64_t)top * g->kw;
    int64_t o = (int64_t)oc * g->out_w * g->out_h + (int64_t)H * g->out_w;
    const int cols = g->out_w - ceil_div(g->pl, g->sw) - ceil_div(g->pr, g->sw);
    int pairs = cols >> 1, odd = cols - (cols >> 1) * 2;
    int l_comp = g->pl, lr_comp = left_comp;
    const int loop = g->fixed_padding == 0 || g->pl > 2 || g->pr > 2;
    const int pad2 = !loop && (g->pl > 1 || g->pr > 1), pad1 = !loop && (g->pl > 0 || g->pr > 0);
    for (int side = 0; side < 2; side++) {
        if (pad2 && ((left_comp > 1 && side == 0) || (right_comp > 1 && side == 1))) {
            emit(k, MLI_CONV_PAT_SINGLE, in, w + l_comp, o, g->kw - 2, rows, icn, oc);
            if (side == 0) {
                l_comp--;
                o++;
            } else {
                in--;
                o--;
            }
        }
        if (pad1 && ((left_comp > 0 && side == 0) || (right_comp > 0 && side == 1))) {
            emit(k, MLI_CONV_PAT_SINGLE, in, w + l_comp, o, g->kw - 1, rows, icn, oc);
            o++;
            if (side == 0) l_comp--;
        }
        if (loop)
            for (int j = 0; j < lr_comp; j++) {
                const int comp = side == 0 ? left_comp - j : j + 1;
                emit(k, MLI_CONV_PAT_ODDEVEN, in, w + (side == 0 ? comp : 0), o, g->kw - comp, rows, icn, oc);
                o++;
                if (side == 1) in++;
            }
        for (int j = 0; j < pairs; j++) {
            emit(k, MLI_CONV_PAT_LANES, in, w, o, g->kw, rows, icn, oc);
            o += 2;
            in += 2;
        }
        if (odd) {
            emit(k, MLI_CONV_PAT_SINGLE, in, w, o, g->kw, rows, icn, oc);
            o++;
            in++;
        }
        if (pad2 && right_comp > 1) {
            o++;
            in++;
        }
        pairs = 0;
        odd = 0;
        lr_comp = right_comp;
    }
}

static void walk_str1(const walker *k) {
    const mli_conv_geom *g = k->g;
    const int left_comp = -imin(-g->pl, 0);
    const int right_comp = -imin(g->in_w - (g->out_w * g->sw - g->pl + g->kw - 1), 0);
    const int top_border = ceil_div(g->pt, g->sh), bot_border = ceil_div(g->pb, g->sh);
    const int vloop = g->fixed_padding == 0 || g->pt > 2 || g->pb > 2;
    for (int oc = 0; oc < g->out_ch; oc++) {
        const int ics = g->depthwise ? oc : 0, icn = g->depthwise ? 1 : g->in_ch;
        int H = 0, tb_comp = -imin(-g->pt, 0);
        int top = tb_comp;
        int lines = imin(g->out_h - bot_border, g->out_h) - top_border;
        for (int side = 0; side < 2; side++) {
            if (vloop) {
                for (int j = 0; j < tb_comp; j++) {
                    const int comp = side == 0 ? tb_comp - j : j + 1;
                    top = side == 0 ? tb_comp - j : 0;
                    row_str1(k, oc, ics, icn, H++, top, g->kh - comp, left_comp, right_comp);
                }
            } else {
                if ((g->pt > 1 || g->pb > 1) && tb_comp > 1) {
                    if (side == 1) H++;
                    row_str1(k, oc, ics, icn, H, top, g->kh - 2, left_comp, right_comp);
                    if (side == 0) {
                        H++;
                        top--;
                    } else {
                        H--;
                    }
                }
                if ((g->pt > 0 || g->pb > 0) && tb_comp > 0) row_str1(k, oc, ics, icn, H++, top, g->kh - 1, left_comp, right_comp);
            }
            for (int j = 0; j < lines; j++) row_str1(k, oc, ics, icn, H++, 0, g->kh, left_comp, right_comp);
            tb_comp = -imin(g->in_h - (g->out_h * g->sh - 1 - g->pt + g->kh), 0);
            top = 0;
            lines = 0;
        }
    }
}

/* ------------------------------------------------- 1x1, stride 1, lanes -- */
static void walk_k1x1(const walker *k) {
    const mli_conv_geom *g = k->g;
    const int64_t kk = (int64_t)g->kw * g->kh;
    for (int oc = 0; oc < g->out_ch; oc++)
        for (int H = 0; H < g->out_h; H++) {
            const int64_t row = (int64_t)g->in_w * ((int64_t)H * g->sh - g->pt);
            int64_t o = (int64_t)oc * g->out_w * g->out_h + (int64_t)H * g->out_w;
            int W = 0;
            for (; W < g->out_w - 1; W += 2, o += 2)
                emit(k, MLI_CONV_PAT_LANES, row + ((int64_t)W * g->sw - g->pl), (int64_t)oc * g->in_ch * kk, o,
                     g->kw, g->kh, g->in_ch, oc);
            if (g->out_w & 1)
                emit(k, MLI_CONV_PAT_SINGLE, row + ((int64_t)W * g->sw - g->pl), (int64_t)oc * g->in_ch * kk, o,
                     g->kw, g->kh, g->in_ch, oc);
        }
}

/* -------------------------------------------- one clipped output at a time -- */
static void walk_simple(const walker *k) {
    const mli_conv_geom *g = k->g;
    for (int oc = 0; oc < g->out_ch; oc++)
        for (int H = 0; H < g->out_h; H++)
            for (int W = 0; W < g->out_w; W++) {
                const int top = -imin(H * g->sh - g->pt, 0), left = -imin(W * g->sw - g->pl, 0);
                const int right = -imin(g->in_w - (W * g->sw - g->pl + g->kw), 0);
                const int bottom = -imin(g->in_h - (H * g->sh - g->pt + g->kh), 0);
                const int64_t in = (int64_t)g->in_w * ((int64_t)H * g->sh - g->pt + top) + (int64_t)W * g->sw - g->pl + left;
                const int64_t w = (int64_t)oc * g->in_ch * g->kw * g->kh + (int64_t)top * g->kw + left;
                const int64_t o = (int64_t)oc * g->out_w * g->out_h + (int64_t)H * g->out_w + W;
                emit(k, MLI_CONV_PAT_SINGLE, in, w, o, g->kw - right - left, g->kh - top - bottom, g->in_ch, oc);
            }
}

void mli_prv_conv_chw_walk(mli_conv_core core, const mli_conv_geom *g, mli_conv_visit visit, void *ctx) {
    const walker k = {g, visit, ctx};
    switch (core) {
    case MLI_CONV_CORE_STR1: walk_str1(&k); break;
    case MLI_CONV_CORE_K1X1_STR1: walk_k1x1(&k); break;
    case MLI_CONV_CORE_SIMPLE: walk_simple(&k); break;
    default: walk_any(&k); break;
    }
}

/* ------------------------------------------------------------------- hwc -- */
typedef struct {
    const mli_conv_hwc_geom *g;
    mli_conv_visit visit;
    void *ctx;
} hwc_walker;

static void hwc_emit(const hwc_walker *k, mli_conv_pat pat, int64_t in, int64_t w, int64_t out, int clmns,
                     int rows, int oc) {
    const mli_conv_point p = {pat, in, w, out, clmns, rows, k->g->ch, oc};
    k->visit(k->ctx, &p);
}

/* A full window (the central part). */
static void hwc_full(const hwc_walker *k, int oc, int H, int W) {
    const mli_conv_hwc_geom *g = k->g;
    hwc_emit(k, MLI_CONV_PAT_HWC, g->in_rs * ((int64_t)H * g->sh - g->pt) + g->in_cs * ((int64_t)W * g->sw - g->pl),
             g->w_os * oc, g->out_rs * H + g->out_cs * W + oc, g->kw, g->kh, oc);
}

/* A window clipped on every side (the border areas). */
static void hwc_clipped(const hwc_walker *k, int oc, int H, int W) {
    const mli_conv_hwc_geom *g = k->g;
    const int top = -imin(H * g->sh - g->pt, 0), left = -imin(W * g->sw - g->pl, 0);
    const int right = -imin(g->in_w - (W * g->sw - g->pl + g->kw), 0);
    const int bottom = -imin(g->in_h - (H * g->sh - g->pt + g->kh), 0);
    hwc_emit(k, MLI_CONV_PAT_HWC,
             g->in_cs * ((int64_t)W * g->sw - g->pl + left) + g->in_rs * ((int64_t)H * g->sh - g->pt + top),
             g->w_cs * left + g->w_rs * top + g->w_os * oc, g->out_cs * W + g->out_rs * H + oc,
             g->kw - right - left, g->kh - top - bottom, oc);
}

void mli_prv_conv_hwc_walk(mli_conv_hwc_path path, const mli_conv_hwc_geom *g, mli_conv_visit visit,
                           void *ctx) {
    const hwc_walker k = {g, visit, ctx};
    if (path == MLI_CONV_HWC_FX16_1X1) {
        for (int H = 0; H < g->out_h; H++)
            for (int W = 0; W < g->out_w; W++)
                for (int oc = 0; oc < g->out_ch; oc++)
                    hwc_emit(&k, MLI_CONV_PAT_HWC_1X1, g->in_rs * H + g->in_cs * W, g->w_os * oc,
                             g->out_rs * H + g->out_cs * W + oc, 1, 1, oc);
        return;
    }
    /* the central part (windows inside the input), when the input holds a kernel */
    const int rb = ceil_div(g->pt, g->sh), re = g->out_h - ceil_div(g->pb, g->sh);
    const int cb = ceil_div(g->pl, g->sw), ce = g->out_w - ceil_div(g->pr, g->sw);
    if (g->in_h >= g->kh && g->in_w >= g->kw) {
        if (path == MLI_CONV_HWC_FX16) {
            for (int H = rb; H < re; H++)
                for (int W = cb; W < ce; W++)
                    for (int oc = 0; oc < g->out_ch; oc++) hwc_full(&k, oc, H, W);
        } else {
            for (int oc = 0; oc < g->out_ch; oc++)
                for (int H = rb; H < re; H++)
                    for (int W = cb; W < ce; W++) hwc_full(&k, oc, H, W);
        }
    }
    /* the border areas, in MLI's order: top, bottom, left, right */
    int area[4][4], n = 0; /* row begin, row end, column begin, column end */
    if (g->pt) { area[n][0] = 0; area[n][1] = rb; area[n][2] = 0; area[n++][3] = g->out_w; }
    if (g->pb) { area[n][0] = re; area[n][1] = g->out_h; area[n][2] = 0; area[n++][3] = g->out_w; }
    if (g->pl) { area[n][0] = rb; area[n][1] = re; area[n][2] = 0; area[n++][3] = cb; }
    if (g->pr) { area[n][0] = rb; area[n][1] = re; area[n][2] = ce; area[n++][3] = g->out_w; }
    for (int a = 0; a < n; a++)
        for (int oc = 0; oc < g->out_ch; oc++)
            for (int H = area[a][0]; H < area[a][1]; H++)
                for (int W = area[a][2]; W < area[a][3]; W++) hwc_clipped(&k, oc, H, W);
}

/* ----------------------------------------------------------------- reach -- */
typedef struct {
    int64_t lo, hi; /* elements touched: [lo, hi]; empty while lo > hi */
} span;

typedef struct {
    const mli_conv_geom *g;         /* chw */
    const mli_conv_hwc_geom *hg;    /* hwc */
    span in, w, bias, out;
} reach;

static void span_add(span *s, int64_t lo, int64_t hi) {
    if (lo < s->lo) s->lo = lo;
    if (hi > s->hi) s->hi = hi;
}

static void reach_chw(void *ctx, const mli_conv_point *p) {
    reach *r = (reach *)ctx;
    const mli_conv_geom *g = r->g;
    span_add(&r->bias, p->bias, p->bias);
    span_add(&r->out, p->out, p->out + (p->pat == MLI_CONV_PAT_LANES ? 1 : 0));
    const int n = mli_prv_conv_cols_read(p->pat, p->clmns);
    if (n <= 0 || p->rows <= 0 || p->nch <= 0) return;
    const int64_t plane = (int64_t)g->in_w * g->in_h, kk = (int64_t)g->kw * g->kh;
    const int64_t lanes = p->pat == MLI_CONV_PAT_LANES ? 1 : 0;
    span_add(&r->in, p->in, p->in + (p->nch - 1) * plane + (int64_t)(p->rows - 1) * g->in_w + n - 1 + lanes);
    span_add(&r->w, p->w, p->w + (p->nch - 1) * kk + (int64_t)(p->rows - 1) * g->kw + n - 1);
}

static void reach_hwc(void *ctx, const mli_conv_point *p) {
    reach *r = (reach *)ctx;
    const mli_conv_hwc_geom *g = r->hg;
    span_add(&r->bias, p->bias, p->bias);
    span_add(&r->out, p->out, p->out);
    if (p->rows <= 0 || p->clmns <= 0 || g->ch <= 0) return;
    span_add(&r->in, p->in, p->in + (p->rows - 1) * g->in_rs + (p->clmns - 1) * g->in_cs + g->ch - 1);
    span_add(&r->w, p->w, p->w + (p->rows - 1) * g->w_rs + (p->clmns - 1) * g->w_cs + g->ch - 1);
}

static int outside(span s, int64_t cap) { return s.lo <= s.hi && (s.lo < 0 || s.hi >= cap); }

static mli_status judge(const reach *r, mli_conv_caps caps, int outside_domain) {
    static const char *const read_own = "is smaller than what MLI 1.1 reads here: it would read outside the buffer";
    static const char *const read_fix =
        "is smaller than what MLI 1.1 reads with the specialisation's fixed kernel size, channels, stride or "
        "padding: it would read outside the buffer";
    static const char *const write_own = "is smaller than what MLI 1.1 writes here: it would write outside the buffer";
    static const char *const write_fix =
        "is smaller than what MLI 1.1 writes with the specialisation's fixed kernel size, stride or padding "
        "(its own output shape): it would write outside the buffer";
    const char *rd = outside_domain ? read_fix : read_own, *wr = outside_domain ? write_fix : write_own;
    if (outside(r->in, caps.in)) return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "in", "capacity", rd);
    if (outside(r->w, caps.w)) return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "weights", "capacity", rd);
    if (outside(r->bias, caps.bias)) return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "bias", "capacity", rd);
    if (outside(r->out, caps.out)) return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "out", "capacity", wr);
    return MLI_STATUS_OK;
}

#define EMPTY_SPAN {INT64_MAX, INT64_MIN}

/* The reach depends on the loop nest and the geometry alone, and a walk visits
 * every output: each thread remembers the spans of the last few geometries it
 * walked (a network calls the same layers again and again).  The geometry
 * structs hold integers only (no padding bytes), so memcmp compares them. */
#define REACH_MEMOS 8
_Static_assert(sizeof(mli_conv_geom) == 16 * sizeof(int), "mli_conv_geom: integers only, no padding");
_Static_assert(sizeof(mli_conv_hwc_geom) == 14 * sizeof(int) + 7 * sizeof(int64_t),
               "mli_conv_hwc_geom: integers only, no padding");
typedef struct {
    int used, nest; /* nest: the chw core or the hwc path */
    unsigned char key[sizeof(mli_conv_hwc_geom)]; /* the geometry's bytes */
    span in, w, bias, out;
} reach_memo;
_Static_assert(sizeof(mli_conv_geom) <= sizeof(mli_conv_hwc_geom), "the key holds either geometry");
static MLIPY_THREAD_LOCAL reach_memo chw_memos[REACH_MEMOS], hwc_memos[REACH_MEMOS];
static MLIPY_THREAD_LOCAL unsigned chw_next, hwc_next;

static const reach_memo *memo_find(const reach_memo *m, int nest, const void *geom, size_t n) {
    for (int i = 0; i < REACH_MEMOS; i++)
        if (m[i].used && m[i].nest == nest && memcmp(m[i].key, geom, n) == 0) return &m[i];
    return NULL;
}

static void memo_keep(reach_memo *m, unsigned *next, int nest, const void *geom, size_t n, const reach *r) {
    reach_memo *e = &m[*next % REACH_MEMOS];
    *next += 1;
    memset(e, 0, sizeof *e);
    e->used = 1;
    e->nest = nest;
    memcpy(e->key, geom, n);
    e->in = r->in;
    e->w = r->w;
    e->bias = r->bias;
    e->out = r->out;
}

/* The spans of `r` (its geometry `geom`, n bytes, walked by `walk`), from the
 * memos when this thread walked the same nest and geometry before. */
static void reach_memoized(reach_memo *memos, unsigned *next, int nest, const void *geom, size_t n, reach *r,
                           void (*walk)(int nest, reach *r)) {
    const reach_memo *m = memo_find(memos, nest, geom, n);
    if (m) {
        r->in = m->in, r->w = m->w, r->bias = m->bias, r->out = m->out;
        return;
    }
    walk(nest, r);
    memo_keep(memos, next, nest, geom, n, r);
}

static void walk_chw(int nest, reach *r) { mli_prv_conv_chw_walk((mli_conv_core)nest, r->g, reach_chw, r); }
static void walk_hwc(int nest, reach *r) { mli_prv_conv_hwc_walk((mli_conv_hwc_path)nest, r->hg, reach_hwc, r); }

mli_status mli_prv_conv_chw_reach(mli_conv_core core, const mli_conv_geom *g, mli_conv_caps caps,
                                  int outside_domain) {
    reach r = {g, NULL, EMPTY_SPAN, EMPTY_SPAN, EMPTY_SPAN, EMPTY_SPAN};
    reach_memoized(chw_memos, &chw_next, (int)core, g, sizeof *g, &r, walk_chw);
    return judge(&r, caps, outside_domain);
}

mli_status mli_prv_conv_hwc_reach(mli_conv_hwc_path path, const mli_conv_hwc_geom *g, mli_conv_caps caps) {
    reach r = {NULL, g, EMPTY_SPAN, EMPTY_SPAN, EMPTY_SPAN, EMPTY_SPAN};
    reach_memoized(hwc_memos, &hwc_next, (int)path, g, sizeof *g, &r, walk_hwc);
    return judge(&r, caps, 0);
}

/* ------------------------------------------------------ specialisations -- */
/* The 'same' padding of a fixed kernel: (k-1)/2 before, k/2 after. */
static int fix_pins_padding(const mli_conv_fix *f) {
    return f->pad == MLI_CONV_PAD_NOPAD || (f->pad == MLI_CONV_PAD_KRNPAD && f->stride == 1 && f->kw && f->kh);
}

int mli_prv_conv_fix_matches(const mli_conv_fix *f, const mli_conv2d_cfg *cfg, int kernel_w, int kernel_h,
                             int channels) {
    const int pt = cfg->padding_top, pb = cfg->padding_bottom, pl = cfg->padding_left, pr = cfg->padding_right;
    if (f->stride && (cfg->stride_width != f->stride || cfg->stride_height != f->stride)) return 0;
    if (f->kw && kernel_w != f->kw) return 0;
    if (f->kh && kernel_h != f->kh) return 0;
    if (f->ch && channels != f->ch) return 0;
    if (f->pad == MLI_CONV_PAD_NOPAD) return pt == 0 && pb == 0 && pl == 0 && pr == 0;
    if (f->pad == MLI_CONV_PAD_KRNPAD && f->kw && f->kh) {
        const int t = (f->kh - 1) / 2, b = f->kh / 2, l = (f->kw - 1) / 2, r = f->kw / 2;
        if (f->stride == 1) return pt == t && pb == b && pl == l && pr == r;
        if (f->stride == 0) return pt <= t && pb <= b && pl <= l && pr <= r;
    }
    return 1;
}

int mli_prv_conv_chw_geom(mli_conv_geom *g, const mli_conv_fix *f, const mli_tensor *in,
                          const mli_tensor *weights, const mli_conv2d_cfg *cfg, int depthwise) {
    const int call_ch = (int)in->shape[0], call_kh = (int)weights->shape[2], call_kw = (int)weights->shape[3];
    int pt = cfg->padding_top, pb = cfg->padding_bottom, pl = cfg->padding_left, pr = cfg->padding_right;
    if (fix_pins_padding(f)) {
        const int pin = f->pad == MLI_CONV_PAD_KRNPAD;
        pt = pin ? (f->kh - 1) / 2 : 0;
        pb = pin ? f->kh / 2 : 0;
        pl = pin ? (f->kw - 1) / 2 : 0;
        pr = pin ? f->kw / 2 : 0;
    }
    const int sw = f->stride ? f->stride : cfg->stride_width, sh = f->stride ? f->stride : cfg->stride_height;
    const int kw = f->kw ? f->kw : call_kw, kh = f->kh ? f->kh : call_kh, ch = f->ch ? f->ch : call_ch;
    g->in_w = (int)in->shape[2];
    g->in_h = (int)in->shape[1];
    g->in_ch = depthwise ? 1 : ch;
    g->out_ch = depthwise ? ch : (int)weights->shape[0];
    g->kh = kh;
    g->kw = kw;
    g->sh = sh;
    g->sw = sw;
    g->pt = pt;
    g->pb = pb;
    g->pl = pl;
    g->pr = pr;
    g->out_w = ceil_div(g->in_w + pl + pr - kw + 1, sw);
    g->out_h = ceil_div(g->in_h + pt + pb - kh + 1, sh);
    g->fixed_padding = depthwise ? 1 : fix_pins_padding(f);
    g->depthwise = depthwise;
    return kw != call_kw || kh != call_kh || ch != call_ch || sw != cfg->stride_width || sh != cfg->stride_height ||
           pt != cfg->padding_top || pb != cfg->padding_bottom || pl != cfg->padding_left ||
           pr != cfg->padding_right;
}

/* mli-py safety: MLI indexes rows and columns in C int (input position =
 * output position * stride - padding, and so on); sizes at which that
 * overflows (inputs of millions of rows or columns) are refused. */
static mli_status safe_int_geometry(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w, int64_t sh, int64_t sw,
                                    int64_t kh, int64_t kw) {
    const int64_t lim = INT32_MAX / 2;
    if ((out_h + 1) * sh + kh >= lim || (out_w + 1) * sw + kw >= lim || in_h + 2 * kh >= lim || in_w + 2 * kw >= lim)
        return mlipy_err_safety(MLI_STATUS_NOT_ENGH_MEM, "in", "shape",
                                "is so large that MLI 1.1's int row and column arithmetic would overflow");
    return MLI_STATUS_OK;
}

mli_status mli_prv_conv_hwc_safe(const mli_conv_hwc_geom *g) {
    RETURN_IF_BAD(safe_int_geometry(g->in_h, g->in_w, g->out_h, g->out_w, g->sh, g->sw, g->kh, g->kw));
    if (g->in_h < g->kh || g->in_w < g->kw)
        return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "shape",
                                "is smaller than the kernel: MLI 1.1's border areas then miss or overlap outputs "
                                "(unsigned loop bounds for fx8) and can write outside the buffers");
    return MLI_STATUS_OK;
}

static void count_points(void *ctx, const mli_conv_point *p) {
    (void)p;
    ++*(long *)ctx;
}

mli_status mli_prv_conv_chw_safe(mli_conv_core core, const mli_conv_geom *g, mli_conv_caps caps, int outside_domain) {
    RETURN_IF_BAD(safe_int_geometry(g->in_h, g->in_w, g->out_h, g->out_w, g->sh, g->sw, g->kh, g->kw));
    long points = 0;
    if (g->in_h < g->kh || g->in_w < g->kw) mli_prv_conv_chw_walk(core, g, count_points, &points);
    if (points) /* (with no output row at all MLI computes nothing, in bounds) */
        return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, "in", "shape",
                                outside_domain
                                    ? "is smaller than the specialisation's fixed kernel: MLI 1.1's border loops "
                                      "then clip one side only (other values, reads and writes outside the buffers)"
                                    : "is smaller than the kernel: MLI 1.1's border loops then clip one side only "
                                      "(other values, reads and writes outside the buffers)");
    return mli_prv_conv_chw_reach(core, g, caps, outside_domain);
}

const mli_conv_entry *mli_prv_conv_pick(const mli_conv_entry *table, size_t n, const mli_tensor *in,
                                        const mli_tensor *weights, const mli_conv2d_cfg *cfg) {
    const int kw = (int)weights->shape[3], kh = (int)weights->shape[2], ch = (int)in->shape[0];
    for (size_t i = 0; i < n; i++)
        if (mli_prv_conv_fix_matches(&table[i].fix, cfg, kw, kh, ch)) return &table[i];
    return NULL;
}

mli_status mli_prv_conv_dispatch_null(const mli_conv2d_cfg *cfg, const mli_tensor *in) {
    static const char *const why = "is NULL; MLI 1.1's dispatcher reads it before any check (it crashes)";
    if (!cfg) return mlipy_err_safety(MLI_STATUS_BAD_FUNC_CFG, "cfg", "", why);
    return mlipy_err_safety(MLI_STATUS_BAD_TENSOR, in ? "weights" : "in", "", why);
}

/* --------------------------------------------------- the computations -- */
#define CONV_SFX fx8
#define CONV_IO_T int8_t
#define CONV_W_T int8_t
#define CONV_ACC40 0
#include "mli_prv_conv_impl.h"

#define CONV_SFX fx16
#define CONV_IO_T int16_t
#define CONV_W_T int16_t
#define CONV_ACC40 1
#include "mli_prv_conv_impl.h"

#define CONV_SFX fx8w16d
#define CONV_IO_T int16_t
#define CONV_W_T int8_t
#define CONV_ACC40 0
#include "mli_prv_conv_impl.h"

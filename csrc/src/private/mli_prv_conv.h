/* The loop nests of MLI 1.1's fx convolutions (SPEC_MLI11_MORE.md 2-4).
 *
 * MLI computes the same convolution with four loop nests (its "cores"),
 * which differ in how they group the products of one output into MAC steps
 * (one product, or two added together) and in which outputs they compute two
 * at a time in separate 32-bit lanes.  Inside the accumulator limits all give
 * the zero-padded convolution; at the limits, and when a specialisation is
 * called outside its domain, each gives its own bits.  So mli-py walks the
 * same nests: a walk visits the outputs in MLI's order and hands each to a
 * visitor as a "point" (where its window starts in each buffer, how many
 * rows and columns of it are read, and the step pattern).  One visitor
 * computes (mli_prv_conv_impl.h, per type); another only records how far
 * the reads and writes reach, so that calls on which MLI would leave its
 * buffers are refused before anything is written.
 *
 * Offsets are in elements from the start of each buffer.  The geometry is
 * the one MLI's loop nest receives: for a specialisation, its fixed kernel
 * size, channels, stride and padding in place of the call's. */
#ifndef MLI_PRV_CONV_H
#define MLI_PRV_CONV_H

#include <stddef.h>
#include <stdint.h>
#include "mli_types.h"

/* MLI's argument list of a chw loop nest. */
typedef struct {
    int in_ch, in_w, in_h;    /* in_ch: channels summed into one output (1 for depthwise) */
    int out_ch, out_w, out_h; /* out_ch: output channels computed */
    int kh, kw, sh, sw, pt, pb, pl, pr;
    int fixed_padding; /* MLI's "the padding is a compile-time constant" flag (border code) */
    int depthwise;     /* output channel c reads input channel c */
} mli_conv_geom;

typedef enum {
    MLI_CONV_CORE_ANY,       /* any stride: clipped border columns, full ones grouped in pairs */
    MLI_CONV_CORE_STR1,      /* stride 1: borders, then two outputs at a time in lanes */
    MLI_CONV_CORE_K1X1_STR1, /* 1x1, stride 1: two outputs at a time in lanes */
    MLI_CONV_CORE_SIMPLE     /* one clipped output at a time, one product per step */
} mli_conv_core;

/* How the products of one output are grouped into MAC steps.  Each pattern
 * runs over the point's channels (outermost), then rows, then columns:
 *   SINGLE   one product per step;
 *   PAIRS    per row, columns (0,1), (2,3), ... two per step, an odd last alone;
 *   ODDEVEN  with an odd column count, first column 0 of every row of every
 *            channel alone, then the rest in pairs per row; with an even one,
 *            pairs only (a negative odd count still reads column 0);
 *   LANES    two outputs (this window and the one a column to the right),
 *            one product per step each, in separate lanes;
 *   HWC      (hwc) channels (0,1), (2,3), ... two per step over the window,
 *            then an odd last channel one product per step;
 *   HWC_1X1  (hwc, 1x1 kernel) channels in pairs up to a multiple of 4,
 *            then the rest one per step. */
typedef enum {
    MLI_CONV_PAT_SINGLE,
    MLI_CONV_PAT_PAIRS,
    MLI_CONV_PAT_ODDEVEN,
    MLI_CONV_PAT_LANES,
    MLI_CONV_PAT_HWC,
    MLI_CONV_PAT_HWC_1X1
} mli_conv_pat;

typedef struct {
    mli_conv_pat pat;
    int64_t in, w, out; /* first element of the window in `in` and `weights`; the output */
    int clmns, rows;    /* the window's extent (may be <= 0: nothing read) */
    int nch;            /* channels summed (chw) */
    int bias;           /* the bias element (= the output channel) */
} mli_conv_point;

typedef void (*mli_conv_visit)(void *ctx, const mli_conv_point *p);

/* The columns [0, n) of a chw point's window that its pattern reads (LANES:
 * and, for the second output, [1, n]). */
static inline int mli_prv_conv_cols_read(mli_conv_pat pat, int clmns) {
    if (clmns > 0) return clmns;
    if (pat == MLI_CONV_PAT_ODDEVEN && (clmns & 1)) return 1; /* column 0 alone, then no pairs */
    return 0;
}

/* Visit every output of a chw call in MLI's order. */
void mli_prv_conv_chw_walk(mli_conv_core core, const mli_conv_geom *g, mli_conv_visit visit, void *ctx);

/* MLI's view of an hwc call (conv2d_hwc): sizes, and the strides in elements
 * of the input (rows, columns), the weights (output channels, rows,
 * columns) and the output (rows, columns); channels are contiguous. */
typedef struct {
    int ch, in_w, in_h, out_ch, out_w, out_h;
    int kh, kw, sh, sw, pt, pb, pl, pr;
    int64_t in_rs, in_cs, w_os, w_rs, w_cs, out_rs, out_cs;
} mli_conv_hwc_geom;

/* Which of MLI's hwc functions runs: fx16 (central part row by row), its 1x1
 * stride-1 unpadded path, or fx8 / fx8w16d (output channel outermost). */
typedef enum { MLI_CONV_HWC_FX16, MLI_CONV_HWC_FX16_1X1, MLI_CONV_HWC_FX8 } mli_conv_hwc_path;

void mli_prv_conv_hwc_walk(mli_conv_hwc_path path, const mli_conv_hwc_geom *g, mli_conv_visit visit,
                           void *ctx);

/* Element capacities of the four buffers (capacity / element size). */
typedef struct {
    int64_t in, w, bias, out;
} mli_conv_caps;

/* mli-py safety (no MLI status of its own): MLI_STATUS_OK when every read and
 * write of the walk stays inside its buffer, else an error flagged
 * mlipy_safety that names the buffer.  `outside_domain` words the reason
 * (a specialisation's fixed values, or the call's own). */
mli_status mli_prv_conv_chw_reach(mli_conv_core core, const mli_conv_geom *g, mli_conv_caps caps,
                                  int outside_domain);
/* mli-py safety for a checked hwc call: sizes MLI's int arithmetic cannot
 * index, and an input smaller than the kernel. */
mli_status mli_prv_conv_hwc_safe(const mli_conv_hwc_geom *g);
mli_status mli_prv_conv_hwc_reach(mli_conv_hwc_path path, const mli_conv_hwc_geom *g, mli_conv_caps caps);

/* The per-type computations (mli_prv_conv_impl.h): the loop nest of `core`
 * over the buffers, with MLI's accumulators, read-out and ReLU limits. */
typedef struct {
    int bias_shift, out_shift;
    int16_t lo, hi; /* ReLU limits */
} mli_conv_out_fmt;

/* `caps`: the buffers' element capacities, which every access of the call
 * stays inside (checked by the reach). */
#define MLI_PRV_CONV_RUN_DECL(sfx, io_t, w_t)                                                        \
    void mli_prv_conv_chw_##sfx(mli_conv_core core, const mli_conv_geom *g, mli_conv_out_fmt fmt,   \
                                const io_t *in, const w_t *w, const w_t *b, io_t *out, mli_conv_caps caps); \
    void mli_prv_conv_hwc_##sfx(mli_conv_hwc_path path, const mli_conv_hwc_geom *g, mli_conv_out_fmt fmt, \
                                const io_t *in, const w_t *w, const w_t *b, io_t *out, mli_conv_caps caps);
MLI_PRV_CONV_RUN_DECL(fx8, int8_t, int8_t)
MLI_PRV_CONV_RUN_DECL(fx16, int16_t, int16_t)
MLI_PRV_CONV_RUN_DECL(fx8w16d, int16_t, int8_t)

/* ----------------------------------------------- specialisations -- */
/* A row of MLIPY_CONV2D_CHW_VARIANTS / MLIPY_DEPTHWISE_CONV2D_CHW_VARIANTS
 * (0 = not fixed); the generic function is {0, 0, 0, 0, NONE, ANY}. */
typedef enum { MLI_CONV_PAD_NONE, MLI_CONV_PAD_KRNPAD, MLI_CONV_PAD_NOPAD } mli_conv_padmode;
typedef struct {
    int kw, kh, ch, stride;
    mli_conv_padmode pad;
    mli_conv_core core;
} mli_conv_fix;

/* The dispatcher's condition of `f` for a call's cfg, kernel width and
 * height and input channels (MLI reads them before any check). */
int mli_prv_conv_fix_matches(const mli_conv_fix *f, const mli_conv2d_cfg *cfg, int kernel_w, int kernel_h,
                             int channels);

/* The geometry MLI's chw loop nest receives for a checked call: the call's
 * values with those `f` fixes in their place.  `depthwise`: the depthwise
 * function's arguments (one channel per output channel, fixed-padding border
 * code always).  Returns 1 when a fixed value differs from the call's
 * (the specialisation runs outside its domain). */
int mli_prv_conv_chw_geom(mli_conv_geom *g, const mli_conv_fix *f, const mli_tensor *in,
                          const mli_tensor *weights, const mli_conv2d_cfg *cfg, int depthwise);

/* mli-py safety for a checked chw call with geometry g: refuses an input
 * smaller than the (effective) kernel unless MLI's loops then compute
 * nothing (no output row), then any read or write of the walk outside its
 * buffer. */
mli_status mli_prv_conv_chw_safe(mli_conv_core core, const mli_conv_geom *g, mli_conv_caps caps, int outside_domain);

/* The dispatchers: table rows with their functions, in if-chain order. */
typedef mli_status (*mli_conv_fn)(const mli_tensor *in, const mli_tensor *weights, const mli_tensor *bias,
                                  const mli_conv2d_cfg *cfg, mli_tensor *out);
typedef struct {
    mli_conv_fix fix;
    mli_conv_fn fn;
    const char *name;
} mli_conv_entry;
/* The first row whose condition a chw call meets, or NULL (the generic). */
const mli_conv_entry *mli_prv_conv_pick(const mli_conv_entry *table, size_t n, const mli_tensor *in,
                                        const mli_tensor *weights, const mli_conv2d_cfg *cfg);
/* mli-py safety: a dispatcher given a NULL cfg, in or weights (MLI reads them first). */
mli_status mli_prv_conv_dispatch_null(const mli_conv2d_cfg *cfg, const mli_tensor *in);
/* The table's core column for a kind: fx16 takes the first, fx8 and fx8w16d the second. */
#define MLI_CONV_CORE_OF_fx16(c16, c8) MLI_CONV_CORE_##c16
#define MLI_CONV_CORE_OF_fx8(c16, c8) MLI_CONV_CORE_##c8
#define MLI_CONV_CORE_OF_fx8w16d(c16, c8) MLI_CONV_CORE_##c8

#endif /* MLI_PRV_CONV_H */

/* Exact int16 dot products over packed weights, one version per ISA,
 * chosen at run time (mli_prv_dotprod.c).
 *
 * Packed layout (built by mli_prv_pack_*): rows in groups of 16; for group
 * g and column pair p, 32 int16 = rows 16g..16g+15, each (W[r][2p], W[r][2p+1]);
 * missing rows / columns are zero.  The vector x is passed as int32 pairs
 * (x[2p] in the low half, x[2p+1] in the high half).
 *
 * Exactness: products are summed in int32 lanes for at most
 * MLI_DOT_CHUNK_PAIRS column pairs and then widened to int64.  Callers
 * guarantee |x| <= 2^8 (the high/low byte split of fx16 data) or |w| <= 2^7
 * (int8 weights), so a lane gets at most 2 * 2^8 * 2^15 = 2^24 per pair and a
 * chunk stays below 2^31: no wrap-around and no saturating instruction. */
#ifndef MLI_PRV_DOTPROD_H
#define MLI_PRV_DOTPROD_H

#include <stddef.h>
#include <stdint.h>

#define MLI_DOT_GROUP 16
#define MLI_DOT_CHUNK_PAIRS 64

/* The split form (int16 weights the direct form below cannot take):
 * sums[16*g + r] = sum_p (x-pair p) . (row r, pair p) of group g, for all
 * `groups` groups of `pairs` pairs; xlo (may be NULL) is a second vector
 * whose sums are added unscaled while x's sums are scaled by 2^x_shift. */
typedef void (*mli_dot_groups_fn)(const int16_t *w, int groups, int pairs, const int32_t *x, int x_shift,
                                  const int32_t *xlo, int64_t *sums);

/* Row-wise form, with no packing: sums[k] = sum_{j<n} x[j] * W[k*row_stride + j]
 * for k < K.  x is int16, zero-padded to a multiple of MLI_DOT_ROW_PAD; with
 * xlo (the low bytes of a split vector) the sums are x . w * 2^x_shift + xlo . w.
 * The same exactness rule holds (|x| <= 2^8 or |w| <= 2^7 per product). */
#define MLI_DOT_ROW_PAD 32
typedef void (*mli_dot_rows16_fn)(const int16_t *W, long row_stride, int K, int n, const int16_t *x, int x_shift,
                                  const int16_t *xlo, int64_t *sums);
typedef void (*mli_dot_rows8_fn)(const int8_t *W, long row_stride, int K, int n, const int16_t *x, int x_shift,
                                 const int16_t *xlo, int64_t *sums);
mli_dot_rows16_fn mli_prv_dot_rows16(void); /* NULL on the scalar path */
mli_dot_rows8_fn mli_prv_dot_rows8(void);

/* Packing into the group/pair layout (see mli_prv_dense_impl.h for the plain
 * C version): columns [c0, c0+n) of K rows; NULL where no faster version
 * exists.  The int16 one also builds the chunk table when `chunks` is given
 * (returning what mli_chunks16_fn would); 8-bit weights are packed as int8. */
typedef int (*mli_pack_fn)(const int16_t *W, long row_stride, int K, int c0, int n, int16_t *dst, int32_t *chunks);
typedef void (*mli_pack8_fn)(const int8_t *W, long row_stride, int K, int c0, int n, int8_t *dst);
mli_pack_fn mli_prv_pack16(void);
mli_pack8_fn mli_prv_pack8(void);

/* Direct form (int16 data times int16 weights with no high/low split):
 * the int32 lanes are summed over column-pair chunks chosen from the weights
 * so that every row's sum of |w| over a chunk is at most 65535; then
 * |x . w| <= 2^15 * 65535 < 2^31 for any int16 x, and the modular int32 sum
 * of the chunk is its exact value.  chunks: per group g, at
 * chunks + g * (pairs + 1), the number of chunks n, then their n end pairs.
 * mli_chunks16_fn builds that table from packed weights; it returns 0 (and
 * sets chunks[0] = -1) when some row has a pair with |w0| + |w1| > 65535
 * (both -32768), which only the split form can take.  8-bit weights have
 * their own versions below. */
#define MLI_DOT_CHUNK_MAX_ABS 65535
typedef void (*mli_dot_chunked_fn)(const int16_t *w, int groups, int pairs, const int32_t *x, const int32_t *chunks,
                                   int64_t *sums);
/* (the scalar table builder is the definition; an AVX2 one serves the plain
 * C packing of the SIMD paths, where a scalar pass costs a third of a
 * 512x256 sequence; the AVX-512 packing builds the table on the way) */
typedef int (*mli_chunks16_fn)(const int16_t *w, int groups, int pairs, int32_t *chunks);
mli_dot_chunked_fn mli_prv_dot_chunked(void);

/* The direct form for nv vectors at once (the input part of a whole
 * sequence, hoisted out of the time loop): each weight load serves every
 * vector.  Vector v is x + v * x_stride; its sums go to sums + v * s_stride. */
typedef void (*mli_dot_chunked_multi_fn)(const int16_t *w, int groups, int pairs, const int32_t *x, long x_stride,
                                         int nv, const int32_t *chunks, int64_t *sums, long s_stride);
mli_dot_chunked_multi_fn mli_prv_dot_chunked_multi(void);
/* The same where whole rows are one chunk: computes the sums and returns 1
 * when max|x| over the nv vectors times l1 (the largest sum of |w| of a
 * row) is below 2^31, else returns 0 and writes nothing.  Only where it pays
 * (AVX-512 VNNI); NULL otherwise. */
typedef int (*mli_dot_multi16_whole_fn)(const int16_t *w, int groups, int pairs, const int32_t *x, long x_stride,
                                        int nv, int64_t l1, int64_t *sums, long s_stride);
mli_dot_multi16_whole_fn mli_prv_dot_multi16_whole(void);

/* The same over 8-bit packed weights (the layout with int8 elements), whose
 * chunk table is fixed: chunks of MLI_DOT_CHUNK_PAIRS8 pairs. */
#define MLI_DOT_CHUNK_PAIRS8 255
typedef void (*mli_dot_chunked8_fn)(const int8_t *w, int groups, int pairs, const int32_t *x, const int32_t *chunks,
                                    int64_t *sums);
typedef void (*mli_dot_chunked_multi8_fn)(const int8_t *w, int groups, int pairs, const int32_t *x, long x_stride,
                                          int nv, const int32_t *chunks, int64_t *sums, long s_stride);
/* mli_dot_multi16_whole_fn over 8-bit packed weights (widened on each load). */
typedef int (*mli_dot_multi8_whole_fn)(const int8_t *w, int groups, int pairs, const int32_t *x, long x_stride,
                                       int nv, int64_t l1, int64_t *sums, long s_stride);
mli_dot_multi8_whole_fn mli_prv_dot_multi8_whole(void);
mli_dot_chunked8_fn mli_prv_dot_chunked8(void);
mli_dot_chunked_multi8_fn mli_prv_dot_chunked_multi8(void);
void mli_prv_chunks_fixed8(int groups, int pairs, int32_t *chunks);
mli_chunks16_fn mli_prv_chunks16(void);

/* acc += vpdpwssd(x, w) on zmm (AVX-512 VNNI code only), accumulating in
 * place: with the intrinsic, GCC copies accumulators kept in arrays into a
 * new register and back around every multiply-add.  MLI_VPDPWSSD takes w in
 * a register, MLI_VPDPWSSD_AT the 64 bytes at q (any alignment) as the
 * instruction's memory operand. */
#define MLI_VPDPWSSD(acc, x, w) __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w))
#define MLI_VPDPWSSD_AT(acc, x, q) \
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(x), "m"(*(const __m512i_u *)(const void *)(q)))

typedef enum { MLIPY_ISA_SCALAR = 0, MLIPY_ISA_AVX2 = 1, MLIPY_ISA_AVX512_VNNI = 2 } mlipy_isa_id;

mli_dot_groups_fn mli_prv_dot_groups(void);

#endif

/* The ISA versions of the packed dot product and the run-time dispatch.
 * Portable build: every SIMD function carries its own target attribute and
 * runs only when the CPU (and OS) support it; nothing is compiled for the
 * build machine.  The scalar version is the definition. */
#include <stdlib.h>
#include <string.h>
#include "mli_prv_dotprod.h"
#include "mlipy_ext.h"

static void dot_groups_scalar(const int16_t *w, int groups, int pairs, const int32_t *x, int x_shift,
                              const int32_t *xlo, int64_t *sums) {
    for (int g = 0; g < groups; g++) {
        int64_t acc[MLI_DOT_GROUP] = {0}, lo[MLI_DOT_GROUP] = {0};
        for (int p = 0; p < pairs; p++) {
            const int16_t *blk = w + ((size_t)g * (size_t)pairs + (size_t)p) * 2 * MLI_DOT_GROUP;
            const int32_t a0 = (int16_t)(x[p] & 0xFFFF), a1 = (int16_t)((uint32_t)x[p] >> 16);
            for (int r = 0; r < MLI_DOT_GROUP; r++) acc[r] += (int64_t)a0 * blk[2 * r] + (int64_t)a1 * blk[2 * r + 1];
            if (xlo) {
                const int32_t l0 = (int16_t)(xlo[p] & 0xFFFF), l1 = (int16_t)((uint32_t)xlo[p] >> 16);
                for (int r = 0; r < MLI_DOT_GROUP; r++) lo[r] += (int64_t)l0 * blk[2 * r] + (int64_t)l1 * blk[2 * r + 1];
            }
        }
        for (int r = 0; r < MLI_DOT_GROUP; r++) sums[g * MLI_DOT_GROUP + r] = acc[r] * ((int64_t)1 << x_shift) + lo[r];
    }
}

/* The definitions of the direct form (see mli_prv_dotprod.h). */
static int chunks16_scalar(const int16_t *w, int groups, int pairs, int32_t *chunks) {
    for (int g = 0; g < groups; g++) {
        int32_t *ch = chunks + (size_t)g * ((size_t)pairs + 1);
        int32_t run[MLI_DOT_GROUP] = {0};
        int n = 0;
        for (int p = 0; p < pairs; p++) {
            const int16_t *blk = w + ((size_t)g * (size_t)pairs + (size_t)p) * 2 * MLI_DOT_GROUP;
            int32_t s[MLI_DOT_GROUP];
            int over = 0;
            for (int r = 0; r < MLI_DOT_GROUP; r++) {
                s[r] = abs((int32_t)blk[2 * r]) + abs((int32_t)blk[2 * r + 1]);
                if (s[r] > MLI_DOT_CHUNK_MAX_ABS) {
                    chunks[0] = -1;
                    return 0;
                }
                over |= run[r] + s[r] > MLI_DOT_CHUNK_MAX_ABS;
            }
            if (over) ch[1 + n++] = p;
            for (int r = 0; r < MLI_DOT_GROUP; r++) run[r] = over ? s[r] : run[r] + s[r];
        }
        ch[1 + n++] = pairs;
        ch[0] = n;
    }
    return 1;
}

/* WT: the packed weights' element type (int16, or int8 for 8-bit weights). */
#define SCALAR_CHUNKED(SFX, WT)                                                                             \
    static void dot_chunked##SFX##_scalar(const WT *w, int groups, int pairs, const int32_t *x,             \
                                          const int32_t *chunks, int64_t *sums) {                           \
        (void)chunks; /* int64 sums are exact without chunks */                                            \
        for (int g = 0; g < groups; g++) {                                                                  \
            int64_t acc[MLI_DOT_GROUP] = {0};                                                               \
            for (int p = 0; p < pairs; p++) {                                                               \
                const WT *blk = w + ((size_t)g * (size_t)pairs + (size_t)p) * 2 * MLI_DOT_GROUP;             \
                const int32_t a0 = (int16_t)(x[p] & 0xFFFF), a1 = (int16_t)((uint32_t)x[p] >> 16);         \
                for (int r = 0; r < MLI_DOT_GROUP; r++)                                                     \
                    acc[r] += (int64_t)a0 * blk[2 * r] + (int64_t)a1 * blk[2 * r + 1];                      \
            }                                                                                               \
            for (int r = 0; r < MLI_DOT_GROUP; r++) sums[g * MLI_DOT_GROUP + r] = acc[r];                   \
        }                                                                                                   \
    }                                                                                                       \
    static void dot_chunked_multi##SFX##_scalar(const WT *w, int groups, int pairs, const int32_t *x,       \
                                                long x_stride, int nv, const int32_t *chunks, int64_t *sums, \
                                                long s_stride) {                                            \
        for (int v = 0; v < nv; v++)                                                                        \
            dot_chunked##SFX##_scalar(w, groups, pairs, x + v * x_stride, chunks, sums + v * s_stride);     \
    }
SCALAR_CHUNKED(, int16_t)
SCALAR_CHUNKED(8, int8_t)

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MLIPY_X86_SIMD 1
#include <immintrin.h>

__attribute__((target("avx2"))) static void dot_groups_avx2(const int16_t *w, int groups, int pairs,
                                                            const int32_t *x, int x_shift, const int32_t *xlo,
                                                            int64_t *sums) {
    for (int g = 0; g < groups; g++) {
        __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()}; /* int64 sums of rows 0-3, 4-7, 8-11, 12-15 */
        const int16_t *wg = w + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;
        for (int p0 = 0; p0 < pairs; p0 += MLI_DOT_CHUNK_PAIRS) {
            const int pend = p0 + MLI_DOT_CHUNK_PAIRS < pairs ? p0 + MLI_DOT_CHUNK_PAIRS : pairs;
            __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
            __m256i l0 = _mm256_setzero_si256(), l1 = _mm256_setzero_si256();
            for (int p = p0; p < pend; p++) {
                const __m256i w0 = _mm256_loadu_si256((const __m256i *)(wg + (size_t)p * 32));
                const __m256i w1 = _mm256_loadu_si256((const __m256i *)(wg + (size_t)p * 32 + 16));
                const __m256i xv = _mm256_set1_epi32(x[p]);
                a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(xv, w0));
                a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(xv, w1));
                if (xlo) {
                    const __m256i lv = _mm256_set1_epi32(xlo[p]);
                    l0 = _mm256_add_epi32(l0, _mm256_madd_epi16(lv, w0));
                    l1 = _mm256_add_epi32(l1, _mm256_madd_epi16(lv, w1));
                }
            }
            const __m128i sh = _mm_cvtsi32_si128(x_shift);
            const __m256i h0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a0));
            const __m256i h1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a0, 1));
            const __m256i h2 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a1));
            const __m256i h3 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a1, 1));
            s[0] = _mm256_add_epi64(s[0], _mm256_sll_epi64(h0, sh));
            s[1] = _mm256_add_epi64(s[1], _mm256_sll_epi64(h1, sh));
            s[2] = _mm256_add_epi64(s[2], _mm256_sll_epi64(h2, sh));
            s[3] = _mm256_add_epi64(s[3], _mm256_sll_epi64(h3, sh));
            if (xlo) {
                s[0] = _mm256_add_epi64(s[0], _mm256_cvtepi32_epi64(_mm256_castsi256_si128(l0)));
                s[1] = _mm256_add_epi64(s[1], _mm256_cvtepi32_epi64(_mm256_extracti128_si256(l0, 1)));
                s[2] = _mm256_add_epi64(s[2], _mm256_cvtepi32_epi64(_mm256_castsi256_si128(l1)));
                s[3] = _mm256_add_epi64(s[3], _mm256_cvtepi32_epi64(_mm256_extracti128_si256(l1, 1)));
            }
        }
        for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)(sums + g * MLI_DOT_GROUP + 4 * q), s[q]);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void dot_groups_vnni(
    const int16_t *w, int groups, int pairs, const int32_t *x, int x_shift, const int32_t *xlo, int64_t *sums) {
    const __m128i sh = _mm_cvtsi32_si128(x_shift);
    for (int g = 0; g < groups; g++) {
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512(); /* int64 rows 0-7, 8-15 */
        const int16_t *wg = w + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;
        for (int p0 = 0; p0 < pairs; p0 += MLI_DOT_CHUNK_PAIRS) {
            const int pend = p0 + MLI_DOT_CHUNK_PAIRS < pairs ? p0 + MLI_DOT_CHUNK_PAIRS : pairs;
            __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
            __m512i l = _mm512_setzero_si512(), m = _mm512_setzero_si512();
            int p = p0;
            /* two accumulators per vector hide the latency of vpdpwssd;
             * modular int32 sums, exact because each chunk stays below 2^31 */
            for (; p + 1 < pend; p += 2) {
                const __m512i w0 = _mm512_loadu_si512((const void *)(wg + (size_t)p * 32));
                const __m512i w1 = _mm512_loadu_si512((const void *)(wg + (size_t)(p + 1) * 32));
                a = _mm512_dpwssd_epi32(a, _mm512_set1_epi32(x[p]), w0);
                b = _mm512_dpwssd_epi32(b, _mm512_set1_epi32(x[p + 1]), w1);
                if (xlo) {
                    l = _mm512_dpwssd_epi32(l, _mm512_set1_epi32(xlo[p]), w0);
                    m = _mm512_dpwssd_epi32(m, _mm512_set1_epi32(xlo[p + 1]), w1);
                }
            }
            if (p < pend) {
                const __m512i w0 = _mm512_loadu_si512((const void *)(wg + (size_t)p * 32));
                a = _mm512_dpwssd_epi32(a, _mm512_set1_epi32(x[p]), w0);
                if (xlo) l = _mm512_dpwssd_epi32(l, _mm512_set1_epi32(xlo[p]), w0);
            }
            l = _mm512_add_epi32(l, m);
            /* a + b < 2^31 too: both halves of the same chunk bound */
            a = _mm512_add_epi32(a, b);
            s0 = _mm512_add_epi64(s0, _mm512_sll_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(a)), sh));
            s1 = _mm512_add_epi64(s1, _mm512_sll_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1)), sh));
            if (xlo) {
                s0 = _mm512_add_epi64(s0, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(l)));
                s1 = _mm512_add_epi64(s1, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(l, 1)));
            }
        }
        _mm512_storeu_si512((void *)(sums + g * MLI_DOT_GROUP), s0);
        _mm512_storeu_si512((void *)(sums + g * MLI_DOT_GROUP + 8), s1);
    }
}

/* ---------------------------------------------------- row-wise versions */
/* Four rows at a time: eight independent accumulator chains (high and low
 * parts) share each load of the vector. */
#define VNNI_ROWS_BODY(LOADW)                                                                               \
    const __m128i sh = _mm_cvtsi32_si128(x_shift), nosh = _mm_setzero_si128();                              \
    const int chunk = 2 * MLI_DOT_CHUNK_PAIRS * 16;                                                         \
    int k = 0;                                                                                              \
    for (; k < K; k += 4) {                                                                                 \
        const int R = K - k < 4 ? K - k : 4;                                                                \
        const char *rows[4];                                                                                \
        for (int r = 0; r < 4; r++) rows[r] = (const char *)(W + (long)(k + (r < R ? r : 0)) * row_stride); \
        __m512i s0[4], s1[4];                                                                               \
        for (int r = 0; r < 4; r++) s0[r] = s1[r] = _mm512_setzero_si512();                                 \
        for (int j0 = 0; j0 < n; j0 += chunk) {                                                             \
            const int jend = j0 + chunk < n ? j0 + chunk : n;                                               \
            __m512i a[4], l[4];                                                                             \
            for (int r = 0; r < 4; r++) a[r] = l[r] = _mm512_setzero_si512();                               \
            for (int j = j0; j < jend; j += 32) {                                                           \
                const int rem = jend - j;                                                                   \
                const __mmask32 m = rem >= 32 ? 0xFFFFFFFFu : ((1u << rem) - 1u);                            \
                const __m512i xv = _mm512_loadu_si512((const void *)(x + j));                               \
                const __m512i lv = xlo ? _mm512_loadu_si512((const void *)(xlo + j)) : xv;                   \
                for (int r = 0; r < 4; r++) {                                                               \
                    const __m512i w = LOADW(m, rows[r], j);                                                 \
                    a[r] = _mm512_dpwssd_epi32(a[r], xv, w);                                                \
                    if (xlo) l[r] = _mm512_dpwssd_epi32(l[r], lv, w);                                       \
                }                                                                                           \
            }                                                                                               \
            for (int r = 0; r < 4; r++) {                                                                   \
                VNNI_ROWS_WIDEN(s0[r], s1[r], a[r], sh);                                                    \
                if (xlo) VNNI_ROWS_WIDEN(s0[r], s1[r], l[r], nosh);                                         \
            }                                                                                               \
        }                                                                                                   \
        for (int r = 0; r < R; r++) sums[k + r] = _mm512_reduce_add_epi64(_mm512_add_epi64(s0[r], s1[r]));  \
    }

#define VNNI_ROWS_WIDEN(s0, s1, acc, shv)                                                                   \
    do {                                                                                                    \
        s0 = _mm512_add_epi64(s0, _mm512_sll_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc)), shv)); \
        s1 = _mm512_add_epi64(s1, _mm512_sll_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc, 1)), shv)); \
    } while (0)
#define LOAD_W16(m, row, j) _mm512_maskz_loadu_epi16(m, (const int16_t *)(row) + (j))
#define LOAD_W8(m, row, j) _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, (const int8_t *)(row) + (j)))

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void dot_rows16_vnni(
    const int16_t *W, long row_stride, int K, int n, const int16_t *x, int x_shift, const int16_t *xlo,
    int64_t *sums) {
    VNNI_ROWS_BODY(LOAD_W16)
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) static void dot_rows8_vnni(
    const int8_t *W, long row_stride, int K, int n, const int16_t *x, int x_shift, const int16_t *xlo,
    int64_t *sums) {
    VNNI_ROWS_BODY(LOAD_W8)
}

/* AVX2: 16 columns a step; a last partial block is copied into a zeroed buffer. */
#define AVX2_ROWS_BODY(WT, LOADW)                                                                           \
    const __m128i sh = _mm_cvtsi32_si128(x_shift);                                                          \
    for (int k = 0; k < K; k++) {                                                                           \
        const WT *row = W + (long)k * row_stride;                                                           \
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();                                   \
        for (int j0 = 0; j0 < n; j0 += 2 * MLI_DOT_CHUNK_PAIRS * 8) {                                       \
            const int jend = j0 + 2 * MLI_DOT_CHUNK_PAIRS * 8 < n ? j0 + 2 * MLI_DOT_CHUNK_PAIRS * 8 : n;    \
            __m256i a = _mm256_setzero_si256(), l = _mm256_setzero_si256();                                 \
            for (int j = j0; j < jend; j += 16) {                                                           \
                WT tail[16] = {0};                                                                          \
                const WT *src = row + j;                                                                    \
                if (jend - j < 16) {                                                                        \
                    for (int e = 0; e < jend - j; e++) tail[e] = src[e];                                    \
                    src = tail;                                                                             \
                }                                                                                           \
                const __m256i w = LOADW(src);                                                               \
                a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(x + j)), w)); \
                if (xlo) l = _mm256_add_epi32(l, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(xlo + j)), w)); \
            }                                                                                               \
            s0 = _mm256_add_epi64(s0, _mm256_sll_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(a)), sh));  \
            s1 = _mm256_add_epi64(s1, _mm256_sll_epi64(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(a, 1)), sh)); \
            if (xlo) {                                                                                      \
                s0 = _mm256_add_epi64(s0, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(l)));                \
                s1 = _mm256_add_epi64(s1, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(l, 1)));           \
            }                                                                                               \
        }                                                                                                   \
        int64_t lanes[4];                                                                                   \
        _mm256_storeu_si256((__m256i *)lanes, _mm256_add_epi64(s0, s1));                                    \
        sums[k] = lanes[0] + lanes[1] + lanes[2] + lanes[3];                                                \
    }
#define AVX2_W16(p) _mm256_loadu_si256((const __m256i *)(p))
#define AVX2_W8(p) _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p)))

__attribute__((target("avx2"))) static void dot_rows16_avx2(const int16_t *W, long row_stride, int K, int n,
                                                            const int16_t *x, int x_shift, const int16_t *xlo,
                                                            int64_t *sums) {
    AVX2_ROWS_BODY(int16_t, AVX2_W16)
}
__attribute__((target("avx2"))) static void dot_rows8_avx2(const int8_t *W, long row_stride, int K, int n,
                                                           const int16_t *x, int x_shift, const int16_t *xlo,
                                                           int64_t *sums) {
    AVX2_ROWS_BODY(int8_t, AVX2_W8)
}

/* ------------------------------------------------- direct (chunked) form */
/* The chunk table: per pair, |w0| + |w1| of the 16 rows as int32 lanes
 * (vpabsw makes -32768 0x8000, read as unsigned). */
__attribute__((target("avx2"))) static int chunks16_avx2(const int16_t *w, int groups, int pairs, int32_t *chunks) {
    const __m256i lo16 = _mm256_set1_epi32(0xFFFF), lim = _mm256_set1_epi32(MLI_DOT_CHUNK_MAX_ABS);
    for (int g = 0; g < groups; g++) {
        int32_t *ch = chunks + (size_t)g * ((size_t)pairs + 1);
        const int16_t *wg = w + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;
        __m256i run0 = _mm256_setzero_si256(), run1 = _mm256_setzero_si256();
        int n = 0;
        for (int p = 0; p < pairs; p++) {
            const __m256i v0 = _mm256_abs_epi16(_mm256_loadu_si256((const __m256i *)(wg + (size_t)p * 32)));
            const __m256i v1 = _mm256_abs_epi16(_mm256_loadu_si256((const __m256i *)(wg + (size_t)p * 32 + 16)));
            const __m256i s0 = _mm256_add_epi32(_mm256_and_si256(v0, lo16), _mm256_srli_epi32(v0, 16));
            const __m256i s1 = _mm256_add_epi32(_mm256_and_si256(v1, lo16), _mm256_srli_epi32(v1, 16));
            if (!_mm256_testz_si256(_mm256_or_si256(_mm256_cmpgt_epi32(s0, lim), _mm256_cmpgt_epi32(s1, lim)),
                                    _mm256_set1_epi32(-1))) {
                chunks[0] = -1;
                return 0;
            }
            const __m256i t0 = _mm256_add_epi32(run0, s0), t1 = _mm256_add_epi32(run1, s1);
            if (!_mm256_testz_si256(_mm256_or_si256(_mm256_cmpgt_epi32(t0, lim), _mm256_cmpgt_epi32(t1, lim)),
                                    _mm256_set1_epi32(-1))) {
                ch[1 + n++] = p;
                run0 = s0;
                run1 = s1;
            } else {
                run0 = t0;
                run1 = t1;
            }
        }
        ch[1 + n++] = pairs;
        ch[0] = n;
    }
    return 1;
}

/* Rows 0-7 / 8-15 of pair q (element pointer) as int16 lanes. */
#define W16_256(q, half) _mm256_loadu_si256((const __m256i *)((q) + 16 * (half)))
#define W8_256(q, half) _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)((q) + 16 * (half))))
#define W16_512(q) _mm512_loadu_si512((const void *)(q))
#define W8_512(q) _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(q)))

#define AVX2_CHUNKED(SFX, WT, LOADW)                                                                        \
    __attribute__((target("avx2"), aligned(64))) static void dot_chunked##SFX##_avx2(                       \
        const WT *w, int groups, int pairs, const int32_t *x, const int32_t *chunks, int64_t *sums) {        \
        for (int g = 0; g < groups; g++) {                                                                  \
            const int32_t *ch = chunks + (size_t)g * ((size_t)pairs + 1);                                   \
            const WT *wg = w + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;                                \
            __m256i s[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),         \
                            _mm256_setzero_si256()};                                                        \
            int p = 0;                                                                                      \
            for (int c = 1; c <= ch[0]; c++) {                                                              \
                const int pend = ch[c];                                                                     \
                __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();                           \
                __m256i b0 = _mm256_setzero_si256(), b1 = _mm256_setzero_si256();                           \
                for (; p + 1 < pend; p += 2) {                                                              \
                    const __m256i x0 = _mm256_set1_epi32(x[p]), x1 = _mm256_set1_epi32(x[p + 1]);           \
                    const WT *q = wg + (size_t)p * 32;                                                      \
                    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(x0, LOADW(q, 0)));                          \
                    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(x0, LOADW(q, 1)));                          \
                    b0 = _mm256_add_epi32(b0, _mm256_madd_epi16(x1, LOADW(q + 32, 0)));                     \
                    b1 = _mm256_add_epi32(b1, _mm256_madd_epi16(x1, LOADW(q + 32, 1)));                     \
                }                                                                                           \
                if (p < pend) {                                                                             \
                    const __m256i x0 = _mm256_set1_epi32(x[p]);                                             \
                    const WT *q = wg + (size_t)p * 32;                                                      \
                    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(x0, LOADW(q, 0)));                          \
                    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(x0, LOADW(q, 1)));                          \
                    p = pend;                                                                               \
                }                                                                                           \
                a0 = _mm256_add_epi32(a0, b0); /* modular: exact for the whole chunk */                    \
                a1 = _mm256_add_epi32(a1, b1);                                                              \
                s[0] = _mm256_add_epi64(s[0], _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a0)));           \
                s[1] = _mm256_add_epi64(s[1], _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a0, 1)));      \
                s[2] = _mm256_add_epi64(s[2], _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a1)));           \
                s[3] = _mm256_add_epi64(s[3], _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a1, 1)));      \
            }                                                                                               \
            for (int q = 0; q < 4; q++) _mm256_storeu_si256((__m256i *)(sums + g * MLI_DOT_GROUP + 4 * q), s[q]); \
        }                                                                                                   \
    }                                                                                                       \
    /* 16 ymm registers hold no block of vectors: one vector at a time */                                  \
    __attribute__((target("avx2"))) static void dot_chunked_multi##SFX##_avx2(                              \
        const WT *w, int groups, int pairs, const int32_t *x, long x_stride, int nv, const int32_t *chunks,  \
        int64_t *sums, long s_stride) {                                                                     \
        for (int v = 0; v < nv; v++)                                                                        \
            dot_chunked##SFX##_avx2(w, groups, pairs, x + v * x_stride, chunks, sums + v * s_stride);       \
    }
AVX2_CHUNKED(, int16_t, W16_256)
AVX2_CHUNKED(8, int8_t, W8_256)

/* Four accumulator chains hide the latency of vpdpwssd.  (The per-step sums
 * of the recurrent cells: these and the AVX2 ones start on a cache line, so
 * that their loops' placement, and speed, do not move with unrelated code;
 * seen as 2-3 % between builds.) */
#define VNNI_CHUNKED(SFX, WT, LOADW)                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512vnni"), aligned(64))) static void dot_chunked##SFX##_vnni( \
        const WT *w, int groups, int pairs, const int32_t *x, const int32_t *chunks, int64_t *sums) {        \
        for (int g = 0; g < groups; g++) {                                                                  \
            const int32_t *ch = chunks + (size_t)g * ((size_t)pairs + 1);                                   \
            const WT *wg = w + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;                                \
            __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();                               \
            int p = 0;                                                                                      \
            for (int c = 1; c <= ch[0]; c++) {                                                              \
                const int pend = ch[c];                                                                     \
                __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();                             \
                __m512i d = _mm512_setzero_si512(), e = _mm512_setzero_si512();                             \
                for (; p + 3 < pend; p += 4) {                                                              \
                    const WT *q = wg + (size_t)p * 32;                                                      \
                    a = _mm512_dpwssd_epi32(a, _mm512_set1_epi32(x[p]), LOADW(q));                          \
                    b = _mm512_dpwssd_epi32(b, _mm512_set1_epi32(x[p + 1]), LOADW(q + 32));                 \
                    d = _mm512_dpwssd_epi32(d, _mm512_set1_epi32(x[p + 2]), LOADW(q + 64));                 \
                    e = _mm512_dpwssd_epi32(e, _mm512_set1_epi32(x[p + 3]), LOADW(q + 96));                 \
                }                                                                                           \
                for (; p < pend; p++) a = _mm512_dpwssd_epi32(a, _mm512_set1_epi32(x[p]), LOADW(wg + (size_t)p * 32)); \
                a = _mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_add_epi32(d, e)); /* modular: exact per chunk */ \
                s0 = _mm512_add_epi64(s0, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a)));                \
                s1 = _mm512_add_epi64(s1, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a, 1)));          \
            }                                                                                               \
            _mm512_storeu_si512((void *)(sums + g * MLI_DOT_GROUP), s0);                                    \
            _mm512_storeu_si512((void *)(sums + g * MLI_DOT_GROUP + 8), s1);                                \
        }                                                                                                   \
    }
VNNI_CHUNKED(, int16_t, W16_512)
VNNI_CHUNKED(8, int8_t, W8_512)

/* V vectors of one group: V int32 chains (one per vector) per chunk, widened
 * into 2V int64 sums; V = 8 keeps 24 of the 32 zmm registers busy. */
#define VNNI_MULTI(SFX, WT, LOADW, V)                                                                       \
    __attribute__((target("avx512f,avx512bw,avx512vnni"))) static void dot_multi##V##SFX##_vnni(            \
        const WT *wg, const int32_t *ch, const int32_t *x, long xs, int64_t *out, long os) {                \
        __m512i s0[V], s1[V], a[V];                                                                         \
        for (int v = 0; v < V; v++) s0[v] = s1[v] = _mm512_setzero_si512();                                \
        int p = 0;                                                                                          \
        for (int c = 1; c <= ch[0]; c++) {                                                                  \
            const int pend = ch[c];                                                                         \
            for (int v = 0; v < V; v++) a[v] = _mm512_setzero_si512();                                      \
            for (; p < pend; p++) {                                                                         \
                const __m512i wv = LOADW(wg + (size_t)p * 32);                                              \
                for (int v = 0; v < V; v++) MLI_VPDPWSSD(a[v], _mm512_set1_epi32(x[v * xs + p]), wv);       \
            }                                                                                               \
            for (int v = 0; v < V; v++) {                                                                   \
                s0[v] = _mm512_add_epi64(s0[v], _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a[v])));       \
                s1[v] = _mm512_add_epi64(s1[v], _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a[v], 1))); \
            }                                                                                               \
        }                                                                                                   \
        for (int v = 0; v < V; v++) {                                                                       \
            _mm512_storeu_si512((void *)(out + v * os), s0[v]);                                             \
            _mm512_storeu_si512((void *)(out + v * os + 8), s1[v]);                                         \
        }                                                                                                   \
    }
#define VNNI_MULTI_ALL(SFX, WT, LOADW)                                                                      \
    VNNI_MULTI(SFX, WT, LOADW, 8)                                                                           \
    VNNI_MULTI(SFX, WT, LOADW, 4)                                                                           \
    VNNI_MULTI(SFX, WT, LOADW, 2)                                                                           \
    VNNI_MULTI(SFX, WT, LOADW, 1)                                                                           \
    __attribute__((target("avx512f,avx512bw,avx512vnni"))) static void dot_chunked_multi##SFX##_vnni(       \
        const WT *w, int groups, int pairs, const int32_t *x, long x_stride, int nv, const int32_t *chunks,  \
        int64_t *sums, long s_stride) {                                                                     \
        for (int g = 0; g < groups; g++) {                                                                  \
            const int32_t *ch = chunks + (size_t)g * ((size_t)pairs + 1);                                   \
            const WT *wg = w + (size_t)g * (size_t)pairs * 2 * MLI_DOT_GROUP;                                \
            int64_t *out = sums + g * MLI_DOT_GROUP;                                                        \
            int v = 0;                                                                                      \
            for (; v + 8 <= nv; v += 8)                                                                     \
                dot_multi8##SFX##_vnni(wg, ch, x + v * x_stride, x_stride, out + v * s_stride, s_stride);   \
            if (v + 4 <= nv) {                                                                              \
                dot_multi4##SFX##_vnni(wg, ch, x + v * x_stride, x_stride, out + v * s_stride, s_stride);   \
                v += 4;                                                                                     \
            }                                                                                               \
            if (v + 2 <= nv) {                                                                              \
                dot_multi2##SFX##_vnni(wg, ch, x + v * x_stride, x_stride, out + v * s_stride, s_stride);   \
                v += 2;                                                                                     \
            }                                                                                               \
            if (v < nv) dot_multi1##SFX##_vnni(wg, ch, x + v * x_stride, x_stride, out + v * s_stride, s_stride); \
        }                                                                                                   \
    }
VNNI_MULTI_ALL(, int16_t, W16_512)
VNNI_MULTI_ALL(8, int8_t, W8_512)

/* Whole rows as one chunk (mli_dot_multi16_whole_fn, and with w8 over 8-bit
 * packed weights widened on each load, mli_dot_multi8_whole_fn): G groups
 * (1 or 2) times V vectors (1 to 8) per pass, so that each weight load
 * serves V vectors and each broadcast of an x pair G groups; the G * V int32
 * chains are widened once, at the end.  glen: a group's elements. */
__attribute__((always_inline, target("avx512f,avx512bw,avx512vnni"))) static inline void whole_pass_vnni(
    const void *w, size_t glen, const int32_t *x, long xs, int pairs, int64_t *out, long os, const int G,
    const int V, const int w8) {
    const int16_t *w16 = (const int16_t *)w;
    const int8_t *w8p = (const int8_t *)w;
    __m512i a[2][8];
#pragma GCC unroll 2
    for (int g = 0; g < G; g++)
#pragma GCC unroll 8
        for (int v = 0; v < V; v++) a[g][v] = _mm512_setzero_si512();
    for (int p = 0; p < pairs; p++) {
        const size_t o = (size_t)p * 32;
        const __m512i w0 = w8 ? W8_512(w8p + o) : W16_512(w16 + o);
        const __m512i w1 = G < 2 ? w0 : (w8 ? W8_512(w8p + glen + o) : W16_512(w16 + glen + o));
#pragma GCC unroll 8
        for (int v = 0; v < V; v++) {
            const __m512i xb = _mm512_set1_epi32(x[v * xs + p]);
            MLI_VPDPWSSD(a[0][v], xb, w0);
            if (G > 1) MLI_VPDPWSSD(a[1][v], xb, w1);
        }
    }
#pragma GCC unroll 2
    for (int g = 0; g < G; g++)
#pragma GCC unroll 8
        for (int v = 0; v < V; v++) {
            int64_t *o = out + v * os + g * MLI_DOT_GROUP;
            _mm512_storeu_si512((void *)o, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(a[g][v])));
            _mm512_storeu_si512((void *)(o + 8), _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(a[g][v], 1)));
        }
}
#define WHOLE_PASS(G, V, SFX, W8)                                                                          \
    __attribute__((target("avx512f,avx512bw,avx512vnni"))) static void whole_pass##G##x##V##SFX##_vnni(   \
        const void *wg, size_t glen, const int32_t *x, long xs, int pairs, int64_t *out, long os) {         \
        whole_pass_vnni(wg, glen, x, xs, pairs, out, os, G, V, W8);                                         \
    }
#define WHOLE_PASS_ALL(SFX, W8)                                                                            \
    WHOLE_PASS(2, 8, SFX, W8)                                                                              \
    WHOLE_PASS(2, 4, SFX, W8)                                                                              \
    WHOLE_PASS(2, 2, SFX, W8)                                                                              \
    WHOLE_PASS(2, 1, SFX, W8)                                                                              \
    WHOLE_PASS(1, 8, SFX, W8)                                                                              \
    WHOLE_PASS(1, 4, SFX, W8)                                                                              \
    WHOLE_PASS(1, 2, SFX, W8)                                                                              \
    WHOLE_PASS(1, 1, SFX, W8)
WHOLE_PASS_ALL(, 0)
WHOLE_PASS_ALL(_w8, 1)
typedef void (*whole_pass_fn)(const void *, size_t, const int32_t *, long, int, int64_t *, long);

/* max|x| over nv vectors of `pairs` int16 pairs */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int64_t multi_maxabs_vnni(const int32_t *x, long x_stride,
                                                                                       int nv, int pairs) {
    __m512i mx = _mm512_setzero_si512();
    for (int v = 0; v < nv; v++) {
        const int16_t *xv = (const int16_t *)(x + v * x_stride);
        int j = 0;
        for (; j + 32 <= 2 * pairs; j += 32)
            mx = _mm512_max_epu16(mx, _mm512_abs_epi16(_mm512_loadu_si512((const void *)(xv + j))));
        if (j < 2 * pairs) {
            const __mmask32 m = (__mmask32)((1ull << (2 * pairs - j)) - 1);
            mx = _mm512_max_epu16(mx, _mm512_abs_epi16(_mm512_maskz_loadu_epi16(m, (const void *)(xv + j))));
        }
    }
    /* (abs of -32768 is 0x8000: 32768 as unsigned) */
    return (int64_t)_mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_and_si512(mx, _mm512_set1_epi32(0xFFFF)),
                                                             _mm512_srli_epi32(mx, 16)));
}

/* The passes of mli_dot_multi16_whole_fn over el-byte weights (pass: the
 * width's table of whole_pass functions, [two groups][V = 8, 4, 2, 1]). */
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int multi_whole_vnni(
    const char *w, size_t el, const whole_pass_fn pass[2][4], int groups, int pairs, const int32_t *x, long x_stride,
    int nv, int64_t l1, int64_t *sums, long s_stride) {
    const int64_t m = multi_maxabs_vnni(x, x_stride, nv, pairs);
    if (l1 < 0 || m * l1 >= ((int64_t)1 << 31)) return 0;
    const size_t glen = (size_t)pairs * 2 * MLI_DOT_GROUP;
    for (int g = 0; g < groups; g += 2) {
        const int two = g + 1 < groups;
        int v = 0;
        for (int k = 0, V = 8; k < 4; k++, V /= 2)
            for (; v + V <= nv; v += V)
                pass[two][k](w + (size_t)g * glen * el, glen, x + v * x_stride, x_stride, pairs,
                             sums + v * s_stride + g * MLI_DOT_GROUP, s_stride);
    }
    return 1;
}

static const whole_pass_fn whole_pass16[2][4] = {
    {whole_pass1x8_vnni, whole_pass1x4_vnni, whole_pass1x2_vnni, whole_pass1x1_vnni},
    {whole_pass2x8_vnni, whole_pass2x4_vnni, whole_pass2x2_vnni, whole_pass2x1_vnni}};
static const whole_pass_fn whole_pass8[2][4] = {
    {whole_pass1x8_w8_vnni, whole_pass1x4_w8_vnni, whole_pass1x2_w8_vnni, whole_pass1x1_w8_vnni},
    {whole_pass2x8_w8_vnni, whole_pass2x4_w8_vnni, whole_pass2x2_w8_vnni, whole_pass2x1_w8_vnni}};

static int dot_multi16_whole_vnni(const int16_t *w, int groups, int pairs, const int32_t *x, long x_stride, int nv,
                                  int64_t l1, int64_t *sums, long s_stride) {
    return multi_whole_vnni((const char *)w, sizeof(int16_t), whole_pass16, groups, pairs, x, x_stride, nv, l1, sums,
                            s_stride);
}
static int dot_multi8_whole_vnni(const int8_t *w, int groups, int pairs, const int32_t *x, long x_stride, int nv,
                                 int64_t l1, int64_t *sums, long s_stride) {
    return multi_whole_vnni((const char *)w, 1, whole_pass8, groups, pairs, x, x_stride, nv, l1, sums, s_stride);
}

/* ------------------------------------------------------------- packing */
/* Transpose 16 rows x 16 column pairs (32-bit elements) in registers. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline void transpose16(__m512i r[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* rows 4i..4i+3 */
        u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int q = 0; q < 4; q++) { /* u[q + 4b] lane L holds column 4L+q of rows 4b..4b+3 */
        const __m512i a = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x44), b = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xEE);
        const __m512i c = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x44);
        const __m512i d = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xEE);
        r[q] = _mm512_shuffle_i32x4(a, c, 0x88);
        r[q + 4] = _mm512_shuffle_i32x4(a, c, 0xDD);
        r[q + 8] = _mm512_shuffle_i32x4(b, d, 0x88);
        r[q + 12] = _mm512_shuffle_i32x4(b, d, 0xDD);
    }
}

/* With CHUNKS (int16 weights, chunks != NULL) the chunk table of the direct
 * form is built on the way, from the transposed registers: the same greedy
 * rule as chunks16_scalar. */
#define PACK_BODY(LOADROW, STORE, CHUNKS)                                                                        \
    const int pairs = (n + 1) / 2, groups = (K + MLI_DOT_GROUP - 1) / MLI_DOT_GROUP;                       \
    const __m512i lo16 = _mm512_set1_epi32(0xFFFF), lim = _mm512_set1_epi32(MLI_DOT_CHUNK_MAX_ABS);         \
    int bad = 0;                                                                                          \
    (void)lo16, (void)lim, (void)bad;                                                                                \
    for (int g = 0; g < groups; g++) {                                                                    \
        int32_t *ch = CHUNKS ? chunks + (size_t)g * ((size_t)pairs + 1) : NULL;                            \
        __m512i run = _mm512_setzero_si512();                                                             \
        int nch = 0;                                                                                      \
        for (int p0 = 0; p0 < pairs; p0 += 16) {                                                          \
            const int cols = n - 2 * p0 < 32 ? n - 2 * p0 : 32; /* int16 columns in this block */         \
            const __mmask32 m = cols >= 32 ? 0xFFFFFFFFu : ((1u << cols) - 1u);                            \
            __m512i r[16];                                                                                \
            for (int i = 0; i < 16; i++) {                                                                \
                const int k = g * MLI_DOT_GROUP + i;                                                      \
                r[i] = k < K ? LOADROW(m, W + (long)k * row_stride + c0 + 2 * p0) : _mm512_setzero_si512(); \
            }                                                                                             \
            transpose16(r);                                                                               \
            const int np = pairs - p0 < 16 ? pairs - p0 : 16;                                            \
            for (int c = 0; c < np; c++) {                                                                \
                STORE(dst + ((size_t)g * (size_t)pairs + (size_t)(p0 + c)) * 2 * MLI_DOT_GROUP, r[c]);     \
                if (CHUNKS) {                                                                             \
                    const __m512i a = _mm512_abs_epi16(r[c]);                                             \
                    const __m512i sa = _mm512_add_epi32(_mm512_and_si512(a, lo16), _mm512_srli_epi32(a, 16)); \
                    const __m512i t = _mm512_add_epi32(run, sa);                                          \
                    bad |= _mm512_cmpgt_epi32_mask(sa, lim) != 0;                                         \
                    if (_mm512_cmpgt_epi32_mask(t, lim)) {                                                \
                        ch[1 + nch++] = p0 + c;                                                           \
                        run = sa;                                                                         \
                    } else {                                                                              \
                        run = t;                                                                          \
                    }                                                                                     \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
        if (CHUNKS) {                                                                                     \
            ch[1 + nch++] = pairs;                                                                        \
            ch[0] = nch;                                                                                  \
        }                                                                                                 \
    }                                                                                                     \
    if (CHUNKS && bad) chunks[0] = -1;                                                                    \
    ok = !(CHUNKS && bad);

#define PACK_STORE16(q, v) _mm512_storeu_si512((void *)(q), v)
#define PACK_STORE8(q, v) _mm256_storeu_si256((__m256i *)(void *)(q), _mm512_cvtepi16_epi8(v))
#define PACK_ROW16(m, p) _mm512_maskz_loadu_epi16(m, (const void *)(p))
#define PACK_ROW8(m, p) _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, (const void *)(p)))

__attribute__((target("avx512f,avx512bw,avx512vl"))) static int pack16_avx512(const int16_t *W, long row_stride,
                                                                            int K, int c0, int n, int16_t *dst,
                                                                            int32_t *chunks) {
    int ok;
    if (chunks) {
        PACK_BODY(PACK_ROW16, PACK_STORE16, 1)
    } else {
        PACK_BODY(PACK_ROW16, PACK_STORE16, 0)
    }
    return ok;
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void pack8_avx512(const int8_t *W, long row_stride,
                                                                            int K, int c0, int n, int8_t *dst) {
    int32_t *chunks = NULL;
    int ok;
    PACK_BODY(PACK_ROW8, PACK_STORE8, 0)
    (void)ok, (void)chunks;
}
#endif

/* ------------------------------------------------------------ dispatch */
static int isa_supported(mlipy_isa_id isa) {
#ifdef MLIPY_X86_SIMD
    __builtin_cpu_init();
    if (isa == MLIPY_ISA_AVX2) return __builtin_cpu_supports("avx2");
    if (isa == MLIPY_ISA_AVX512_VNNI)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
#endif
    return isa == MLIPY_ISA_SCALAR;
}

static int current_isa = -1; /* the dispatch table: one entry */

static int best_isa(void) {
    const char *env = getenv("MLIPY_ISA");
    if (env && *env) {
        int want = !strcmp(env, "scalar") ? 0 : !strcmp(env, "avx2") ? 1 : !strcmp(env, "avx512_vnni") ? 2 : -1;
        if (want >= 0 && isa_supported((mlipy_isa_id)want)) return want;
    }
    for (int i = MLIPY_ISA_AVX512_VNNI; i > 0; i--)
        if (isa_supported((mlipy_isa_id)i)) return i;
    return MLIPY_ISA_SCALAR;
}

int mlipy_isa_supported(int isa) { return isa >= 0 && isa <= 2 && isa_supported((mlipy_isa_id)isa); }

int mlipy_get_isa(void) {
    if (current_isa < 0) current_isa = best_isa();
    return current_isa;
}

int mlipy_set_isa(int isa) {
    if (isa < 0) {
        current_isa = best_isa();
        return current_isa;
    }
    if (!mlipy_isa_supported(isa)) return -1;
    current_isa = isa;
    return isa;
}

const char *mlipy_isa_name(int isa) {
    static const char *const names[] = {"scalar", "avx2", "avx512_vnni"};
    return isa >= 0 && isa <= 2 ? names[isa] : "unknown";
}

mli_dot_groups_fn mli_prv_dot_groups(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_groups_vnni;
    case MLIPY_ISA_AVX2: return dot_groups_avx2;
#endif
    default: return dot_groups_scalar;
    }
}

mli_dot_rows16_fn mli_prv_dot_rows16(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_rows16_vnni;
    case MLIPY_ISA_AVX2: return dot_rows16_avx2;
#endif
    default: return NULL;
    }
}

mli_dot_rows8_fn mli_prv_dot_rows8(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_rows8_vnni;
    case MLIPY_ISA_AVX2: return dot_rows8_avx2;
#endif
    default: return NULL;
    }
}

mli_pack_fn mli_prv_pack16(void) {
#ifdef MLIPY_X86_SIMD
    if (mlipy_get_isa() == MLIPY_ISA_AVX512_VNNI) return pack16_avx512;
#endif
    return NULL;
}

mli_pack8_fn mli_prv_pack8(void) {
#ifdef MLIPY_X86_SIMD
    if (mlipy_get_isa() == MLIPY_ISA_AVX512_VNNI) return pack8_avx512;
#endif
    return NULL;
}

mli_dot_chunked_fn mli_prv_dot_chunked(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_chunked_vnni;
    case MLIPY_ISA_AVX2: return dot_chunked_avx2;
#endif
    default: return dot_chunked_scalar;
    }
}

mli_chunks16_fn mli_prv_chunks16(void) {
#ifdef MLIPY_X86_SIMD
    if (mlipy_get_isa() != MLIPY_ISA_SCALAR) return chunks16_avx2;
#endif
    return chunks16_scalar;
}

mli_dot_chunked_multi_fn mli_prv_dot_chunked_multi(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_chunked_multi_vnni;
    case MLIPY_ISA_AVX2: return dot_chunked_multi_avx2;
#endif
    default: return dot_chunked_multi_scalar;
    }
}

mli_dot_multi16_whole_fn mli_prv_dot_multi16_whole(void) {
#ifdef MLIPY_X86_SIMD
    if (mlipy_get_isa() == MLIPY_ISA_AVX512_VNNI) return dot_multi16_whole_vnni;
#endif
    return NULL;
}

mli_dot_multi8_whole_fn mli_prv_dot_multi8_whole(void) {
#ifdef MLIPY_X86_SIMD
    if (mlipy_get_isa() == MLIPY_ISA_AVX512_VNNI) return dot_multi8_whole_vnni;
#endif
    return NULL;
}

mli_dot_chunked8_fn mli_prv_dot_chunked8(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_chunked8_vnni;
    case MLIPY_ISA_AVX2: return dot_chunked8_avx2;
#endif
    default: return dot_chunked8_scalar;
    }
}

mli_dot_chunked_multi8_fn mli_prv_dot_chunked_multi8(void) {
    switch (mlipy_get_isa()) {
#ifdef MLIPY_X86_SIMD
    case MLIPY_ISA_AVX512_VNNI: return dot_chunked_multi8_vnni;
    case MLIPY_ISA_AVX2: return dot_chunked_multi8_avx2;
#endif
    default: return dot_chunked_multi8_scalar;
    }
}

/* 8-bit weights: |w0| + |w1| <= 256 per pair, so fixed chunks of 255 pairs
 * (sum of |w| <= 65280) always hold. */
void mli_prv_chunks_fixed8(int groups, int pairs, int32_t *chunks) {
    for (int g = 0; g < groups; g++) {
        int32_t *ch = chunks + (size_t)g * ((size_t)pairs + 1);
        int n = 0;
        for (int p = MLI_DOT_CHUNK_PAIRS8; p < pairs; p += MLI_DOT_CHUNK_PAIRS8) ch[1 + n++] = p;
        ch[1 + n++] = pairs;
        ch[0] = n;
    }
}

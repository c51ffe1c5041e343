#!/usr/bin/env python
"""Multiply-adds per second of one core in AVX2's two dot-product forms.

Compiles (with the C compiler that builds the package) and runs a loop that
issues nothing but one form on registers, twelve independent accumulators:

- ``vpmaddwd`` + ``vpaddd`` on ymm: 16 int16 multiply-adds, the form of the
  avx2 path's dot products (MLI's fx16 and fx8w16d);
- ``vfmadd231ps`` on ymm: 8 float32 multiply-adds, the form a float32 library
  (PyTorch, OpenBLAS) computes with on an AVX2 machine;

and the rate at which one core reads 128 KB and 384 KB again and again (more
than L1 holds: the state weights of the 128x128 and 512x256 LSTMs, which a
step reads in full).

The ratio of the two is the most an int16 kernel can gain per multiply-add
over a float32 one on AVX2 when both run at the same share of their peak; a
kernel's GMAC/s (bench.py, section 2) over its form's figure is the share it
reaches.  Run from the project root::

    python benchmarks/bench_peak.py
"""
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

SOURCE = r"""
#include <stdio.h>
#include <time.h>
#include <immintrin.h>

static double ns_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}
static volatile long sink;
#define REP12(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11)

/* n rounds of 12 independent multiply-add instructions; multiply-adds per ns */
__attribute__((target("avx2"))) static double madd16(long n) {
    __m256i a[12], t;
    const __m256i x = _mm256_set1_epi16(3), w = _mm256_set1_epi16(5);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_epi32(i);
    const double t0 = ns_now();
    for (long k = 0; k < n; k++) {
#define ONE(i) __asm__ volatile("vpmaddwd %2, %3, %1\n\tvpaddd %1, %0, %0" : "+x"(a[i]), "=&x"(t) : "x"(w), "x"(x));
        REP12(ONE)
#undef ONE
    }
    const double dt = ns_now() - t0;
    for (int i = 0; i < 12; i++) sink += _mm256_extract_epi32(a[i], 0);
    return n * 12.0 * 16 / dt;
}

__attribute__((target("avx2,fma"))) static double fma32(long n) {
    __m256 a[12];
    const __m256 x = _mm256_set1_ps(1.0f), w = _mm256_set1_ps(0.0f);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
    const double t0 = ns_now();
    for (long k = 0; k < n; k++) {
#define ONE(i) __asm__ volatile("vfmadd231ps %2, %1, %0" : "+x"(a[i]) : "x"(x), "x"(w));
        REP12(ONE)
#undef ONE
    }
    const double dt = ns_now() - t0;
    for (int i = 0; i < 12; i++) sink += (long)_mm256_cvtss_f32(a[i]);
    return n * 12.0 * 8 / dt;
}

/* bytes per ns read from a buffer of `bytes` (larger than L1, inside L2: the
 * state weights a recurrent step reads again at every step), 32-byte loads */
static unsigned char buf[1 << 20] __attribute__((aligned(64)));
static long buf_bytes;
__attribute__((target("avx2"))) static double l2_read(long n) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    const double t0 = ns_now();
    for (long k = 0; k < n; k++)
        for (long o = 0; o < buf_bytes; o += 128) {
            s0 = _mm256_xor_si256(s0, _mm256_load_si256((const __m256i *)(buf + o)));
            s1 = _mm256_xor_si256(s1, _mm256_load_si256((const __m256i *)(buf + o + 32)));
            s2 = _mm256_xor_si256(s2, _mm256_load_si256((const __m256i *)(buf + o + 64)));
            s3 = _mm256_xor_si256(s3, _mm256_load_si256((const __m256i *)(buf + o + 96)));
        }
    const double dt = ns_now() - t0;
    sink += _mm256_extract_epi32(_mm256_xor_si256(_mm256_xor_si256(s0, s1), _mm256_xor_si256(s2, s3)), 0);
    return (double)n * buf_bytes / dt;
}

static double best_of(double (*f)(long)) {
    double b = 0;
    for (int r = 0; r < 7; r++) {
        const double v = f(10000000);
        b = v > b ? v : b;
    }
    return b;
}

int main(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        puts("no AVX2 and FMA on this CPU");
        return 0;
    }
    const double i16 = best_of(madd16), f32 = best_of(fma32);
    printf("| vpmaddwd + vpaddd, ymm (int16) | %.1f |\n| vfmadd231ps, ymm (float32) | %.1f |\n", i16, f32);
    printf("| int16 / float32 | %.2fx |\n", i16 / f32);
    for (int kb = 128; kb <= 384; kb += 256) {
        double b = 0;
        buf_bytes = (long)kb * 1024;
        for (int r = 0; r < 7; r++) {
            const double v = l2_read(20000000L / buf_bytes * 64);
            b = v > b ? v : b;
        }
        printf("| reading %d KB again and again (from L2), GB/s | %.1f |\n", kb, b);
    }
    return 0;
}
"""


def main() -> int:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    cc = shutil.which(cc) or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        print("no C compiler found")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "peak.c", Path(tmp) / "peak"
        src.write_text(SOURCE)
        subprocess.run([cc, "-O2", "-o", str(exe), str(src)], check=True)
        out = subprocess.run([str(exe)], check=True, stdout=subprocess.PIPE, text=True).stdout
    print("| form (one core, register operands, 12 chains) | GMAC/s |")
    print("|---|---:|")
    print(out, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

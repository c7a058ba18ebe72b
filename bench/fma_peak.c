// The CPU's fp32 FMA peak, measured (bench/run.py compiles this with
// `cc -O2 -march=native -pthread` and runs it once per run):
//
//     fma_peak THREADS SECONDS   ->  "<GFLOP/s> <ISA> <lanes>"
//
// Every thread runs ACC independent chains of fused multiply-adds on the
// widest vectors the compiler targets (AVX-512: 16 fp32 lanes, else AVX2 +
// FMA: 8, else scalar fmaf), enough chains to cover the FMA latency times
// the FMA ports; one FMA = 2 FLOPs per lane. GFLOP/s = all threads' FLOPs /
// wall time from the first thread's start to the last one's end. The chains'
// sum is printed to stderr so the compiler cannot drop the loop.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif
#include <math.h>

#define INNER 1024

#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define ISA "avx512"
#define SET1(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
static float hsum(vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__FMA__)
typedef __m256 vec;
#define LANES 8
#define ISA "avx2-fma"
#define SET1(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float hsum(vec v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
typedef float vec;
#define LANES 1
#define ISA "scalar"
#define SET1(x) (x)
#define FMA(a, b, c) fmaf(a, b, c)
static float hsum(vec v) { return v; }
#endif

// The chains: as many as the vector registers hold beside a and b (AVX2 has
// 16 ymm registers: 16 chains spill three of them to the stack, and their
// store-to-load latency then bounds the loop at about one FMA per cycle);
// at least the FMA latency times two FMA ports either way.
#define CHAINS14(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#if defined(__AVX512F__)
#define ACC 24
#define CHAINS(X) CHAINS14(X) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#else
#define ACC 14
#define CHAINS(X) CHAINS14(X)
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

struct job {
  long outer;
  float sum;
};

static void *run(void *p) {
  struct job *j = p;
  // ACC chains in named variables (an array indexed in a loop is kept in
  // memory by some compilers: one FMA per load/store, not the peak).
#define NNCC_DECL(i) vec c##i = SET1((i) * 1e-3f);
#define NNCC_STEP(i) c##i = FMA(c##i, a, b);
#define NNCC_SUM(i) +hsum(c##i)
  CHAINS(NNCC_DECL)
  const vec a = SET1(0.999999f), b = SET1(1e-7f);
  for (long o = 0; o < j->outer; ++o)
    for (int i = 0; i < INNER; ++i) {
      CHAINS(NNCC_STEP)
    }
  float s = 0.f CHAINS(NNCC_SUM);
  j->sum = s;
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  double seconds = argc > 2 ? atof(argv[2]) : 0.5;
  if (threads < 1 || threads > 1024 || !(seconds > 0)) {
    fprintf(stderr, "usage: fma_peak THREADS SECONDS\n");
    return 2;
  }
  // Calibrate the iteration count on one thread (doubling until a run takes
  // 20 ms: one descheduling would spoil a shorter one), then run all.
  struct job cal = {16, 0};
  double t0, dt;
  for (;;) {
    t0 = now();
    run(&cal);
    dt = now() - t0;
    if (dt >= 0.02 || cal.outer > (1L << 40)) break;
    cal.outer *= 2;
  }
  double per = dt / cal.outer;
  long outer = (long)(seconds / (per > 0 ? per : 1e-6));
  if (outer < 1) outer = 1;
  pthread_t *tid = malloc(sizeof(pthread_t) * threads);
  struct job *jobs = malloc(sizeof(struct job) * threads);
  t0 = now();
  for (int t = 0; t < threads; ++t) {
    jobs[t].outer = outer;
    pthread_create(&tid[t], NULL, run, &jobs[t]);
  }
  float s = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    s += jobs[t].sum;
  }
  double wall = now() - t0;
  double flops = 2.0 * LANES * ACC * INNER * (double)outer * threads;
  printf("%.1f %s %d\n", flops / wall / 1e9, ISA, LANES);
  fprintf(stderr, "checksum %g\n", s);
  return 0;
}

// Kernel evaluation shared by the compiled cores (_smo, _batched, _kernels): columns of
//
//     Q_si = y_s y_i k(x_s, x_i),
//     k(u, v) = u'v                                  (KIND_LINEAR)
//             = exp(-gamma ||u - v||^2)               (KIND_RBF)
//             = (gamma u'v + coef0)^degree            (KIND_POLY)
//     Q given in full (n x n, already y y' * K)       (KIND_MATRIX)
//
// The data are held transposed (XT: p x n, C order) so that the dot products of a block of rows
// with x_i run along contiguous rows of XT and vectorize. ||u - v||^2 = ||u||^2 + ||v||^2 - 2 u'v
// from the squared norms sqn (clipped at 0 against round-off).
//
// The arithmetic is that of the numba code it replaces (solvers/smo/core.py: _exp_parts,
// _fill_contiguous, _fill_gather, _fill): the same operations in the same order, with multiply-add
// contracted to FMA where the CPU has it (numba's "contract" flag; GCC's default -ffp-contract=fast
// in gnu++17 mode), so the columns agree bit for bit on a machine with FMA.
//
// Header-only and Python-free.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// The hot block loops are compiled three times (GCC function multi-versioning): for x86-64-v4
// (AVX-512, as numba uses on such a CPU: 0.0161 -> 0.0124 ms for a column of 4,000 RBF entries),
// x86-64-v3 (AVX2 + FMA) and the baseline, chosen at load time, so a portable wheel vectorizes.
// Every clone computes the same values where the CPU has FMA (v3, v4).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define OPTM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OPTM_CLONES
#endif
#ifdef _OPENMP
#define OPTM_SIMD _Pragma("omp simd")
#else
#define OPTM_SIMD
#endif
#define OPTM_INLINE inline __attribute__((always_inline))

// GCC if-converts (and so vectorizes) the selects of the RBF loop, e.g. q = v < EXP_MIN ? 0 : q,
// only when comparisons may not trap: -fno-trapping-math for this header's functions. It changes
// no value (no reassociation, no contraction beyond the default); numba / LLVM assume the same.
// Modules wrap their own loops that inline these functions in OPTM_NO_TRAP_BEGIN / _END.
#if defined(__GNUC__) && !defined(__clang__)
#define OPTM_NO_TRAP_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"no-trapping-math\")")
#define OPTM_NO_TRAP_END _Pragma("GCC pop_options")
#else
#define OPTM_NO_TRAP_BEGIN
#define OPTM_NO_TRAP_END
#endif
OPTM_NO_TRAP_BEGIN

namespace optmodels {

enum KernelKind : int { KIND_LINEAR = 0, KIND_RBF = 1, KIND_POLY = 2, KIND_MATRIX = 3 };

// Columns of at least PARALLEL_FROM entries are cut into blocks of FILL_BLOCK entries computed on
// all OpenMP threads (shorter ones stay serial: starting the threads costs more than it saves),
// when their work reaches PARALLEL_WORK (below). Values of solvers/smo/core.py, measured there.
constexpr long PARALLEL_FROM = 4096;
constexpr long FILL_BLOCK = 2048;

// When a parallel region pays. Work is counted in units of one multiply-add on one feature of a
// row: a kernel entry costs p + ENTRY_WORK units (the dot product's p, and the exp's polynomial
// and scaling, the norms, y y_i: about 8 more; measured, contiguous RBF columns took 0.12 ns x
// (p + 8) per entry for p = 2, 10 and 50), an entry gathered by index GATHER_FACTOR times that
// (measured 4-5x: the gathered loop does not vectorize as the contiguous one), a gradient entry
// g += q d or a copied entry 1.
//
// Every region (`#pragma omp parallel ... if (work >= PARALLEL_WORK)`) costs a fork and a join,
// ~5 us on two idle cores. On a machine with more runnable threads than cores (a CI runner, a
// laptop running other work) the join waits at a barrier for a thread the OS has descheduled,
// up to a time slice (milliseconds), while libgomp's default active wait spins against it (and
// an idle worker spins between regions against the serial work). KEEL's banana (5,300 x 2)
// computes a column of 5,300 RBF entries (~8-15 us of work) per pairwise SMO step: in two halves
// it took 3.9 s against 0.17 s on one thread under such load, where LIBSVM, serial, took 0.3 s
// (benchmarks/RESULTS.md, 2026-12-05). So a region goes parallel only from PARALLEL_WORK = 2^23
// units, ~1 ms of serial work here: 200x an idle fork / join, so that on a quiet machine two
// threads still save nearly half of it, and a time slice lost under load costs at most about
// what the region saves. Measured (work of the candidate regions, uncertified runs at tol 1e-3):
// banana's batched run has none above it (2^20 left 85 % of its work in 30 parallel regions, and
// two threads took 3x one under load; 2^22, 32 % and 1.3x), so small problems run serially, as
// LIBSVM; the batched loop's fused passes of clouds (p = 10) keep 89 % of the work parallel at
// n = 10^4 and 97 % at 5*10^4 (99 % and 100 % at 2^20). Single columns (the pairwise solver, the
// default up to 1,024 rows) are parallel only from 4.6e5 rows at p = 10 (1.2e5 gathered): at 5*10^4
// their two-thread gain was 12 % on a quiet machine (solvers/smo/core.py), lost here.
// The threshold decides only who computes: each block is computed the same way by any thread,
// so the results do not depend on it (nor on the thread count).
constexpr long PARALLEL_WORK = 1L << 23;
constexpr long ENTRY_WORK = 8;
constexpr long GATHER_FACTOR = 4;

// Work of cnt kernel entries on p features (units as above).
inline double entries_work(double cnt, long p, bool contiguous) {
    return cnt * static_cast<double>(p + ENTRY_WORK) * (contiguous ? 1.0 : GATHER_FACTOR);
}

// Whether a region of this much work goes parallel.
inline bool worth_parallel(double work) { return work >= static_cast<double>(PARALLEL_WORK); }

namespace detail {
constexpr double LOG2E = 1.4426950408889634;
constexpr double LN2_HI = 0.6931471803691238;     // ln 2 to 32 bits: e * LN2_HI exact, |e| < 2^21
constexpr double LN2_LO = 1.9082149292705877e-10;  // ln 2 - LN2_HI
constexpr double EXP_MIN = -708.0;                 // below: exp(v) returned as 0 (2^e normal)
constexpr double EXP_MIN_E = -1021.0;              // e of EXP_MIN, floor(EXP_MIN / ln 2 + 1/2)
// 1.5 * 2^52: t + ROUND_MAGIC (|t| < 2^51) is rounded to an integer, held in the low mantissa bits.
constexpr double ROUND_MAGIC = 6755399441055744.0;

// floor(t) for |t| < 2^51: rn = (t + M) - M is t rounded to an integer (exact), and
// floor(t) = rn - 1 if rn > t, else rn. Unlike std::floor, GCC vectorizes this without
// SSE4.1's roundpd (the baseline clone) and needs no libm call.
OPTM_INLINE double floor_small(double t) {
    const double rn = (t + ROUND_MAGIC) - ROUND_MAGIC;
    return rn - (rn > t ? 1.0 : 0.0);
}
}  // namespace detail

// exp(v) = q * 2^e for v <= 0, in plain arithmetic that vectorizes (no libm call):
//   e = floor(v / ln 2 + 1/2),  r = (v - e ln2_hi) - e ln2_lo   (Cody-Waite, r exact to ~1e-19,
//   |r| <= ln 2 / 2),  q = sum_{j=0..13} r^j / j!  by Horner (remainder < 5e-18 relative),
//   2^e built from its bits (e + 1023) << 52.  v < EXP_MIN gives q = 0 and 2^e = 2^-1021.
// At most 3.5e-16 relative (1.6 ulp) against libm's exp (measured in the numba version).
// e + 1023 (in [2, 2046]) is read from the low bits of e + 1023 + 1.5 * 2^52 rather than by a
// double -> int64 conversion, which AVX2 lacks; the integer is the same.
struct ExpParts {
    double q;
    double two_e;
};

OPTM_INLINE ExpParts exp_parts(double v) {
    using namespace detail;
    // e from v itself, clamped at floor(EXP_MIN / ln 2 + 1/2) = -1021 only where 2^e is built:
    // the same e, r and 2^e as clamping v at EXP_MIN first (e is nondecreasing in v; below
    // EXP_MIN q is 0 whatever r is). A clamp of v made the (constant) clamped path visible
    // to GCC's jump threading, which then computed the polynomial twice (for e = rn and
    // e = rn - 1 of floor_small) and blended: 1.5 -> 0.9 ns per entry.
    const double e = floor_small(v * LOG2E + 0.5);
    const double r = (v - e * LN2_HI) - e * LN2_LO;
    double q = 1.0 / 6227020800.0;
    q = q * r + 1.0 / 479001600.0;
    q = q * r + 1.0 / 39916800.0;
    q = q * r + 1.0 / 3628800.0;
    q = q * r + 1.0 / 362880.0;
    q = q * r + 1.0 / 40320.0;
    q = q * r + 1.0 / 5040.0;
    q = q * r + 1.0 / 720.0;
    q = q * r + 1.0 / 120.0;
    q = q * r + 1.0 / 24.0;
    q = q * r + 1.0 / 6.0;
    q = q * r + 0.5;
    q = q * r + 1.0;
    q = q * r + 1.0;
    q = v < EXP_MIN ? 0.0 : q;
    const double ec = e < EXP_MIN_E ? EXP_MIN_E : e;
    const double t = ec + (1023.0 + ROUND_MAGIC);
    std::int64_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    bits = static_cast<std::int64_t>(static_cast<std::uint64_t>(bits) << 52);
    double two_e;
    std::memcpy(&two_e, &bits, sizeof two_e);
    return {q, two_e};
}

// RBF value from a dot product: exp(-gamma max(||a||^2 + ||b||^2 - 2 a'b, 0)) as exp_parts.
OPTM_INLINE ExpParts rbf_parts(double gamma, double sa, double sb, double dot) {
    double d2 = sa + sb - 2.0 * dot;
    d2 = 0.0 > d2 ? 0.0 : d2;
    return exp_parts(-gamma * d2);
}

// The kernel of a QMatrix as the compiled code needs it (solvers/smo/qmatrix.py CompiledSpec).
// degree is a double, as in the spec: (.)^degree is libm's pow, as numba's float ** float.
struct KernelData {
    int kind = KIND_LINEAR;
    const double* XT = nullptr;   // p x n, C order (the data transposed)
    long p = 0, n = 0;
    const double* sqn = nullptr;  // ||x_s||^2, length n (RBF)
    double gamma = 0.0, coef0 = 0.0, degree = 1.0;
    const double* y = nullptr;    // labels (+-1, or any weights), length n
    const double* Q = nullptr;    // n x n, C order (KIND_MATRIX only)

    // out[s] = Q_si for s in idx[0..cnt) (s = 0..cnt-1 if contiguous); T = double or float.
    template <class T>
    void fill(long i, const std::int64_t* idx, long cnt, bool contiguous, T* out) const;
    // The whole column i: out[s] = Q_si, s = 0..n-1.
    template <class T>
    void column(long i, T* out) const { fill(i, nullptr, n, true, out); }
};

// Dot products buf[k] = sum_r XT[r, lo + k] xi[r * xs], k < hi - lo (r in order, FMA).
// The rows go in tiles of DOT_TILE whose sums stay in registers over all p features (one store
// per entry instead of a load and a store per feature and entry); each sum still adds the
// features 0..p-1 in order, so the values are unchanged. Measured (n = 4000, one thread, linear
// kernel, p = 10): AVX-512 1.38 -> 1.07 ns per entry, AVX2 1.38 -> 1.01 (tile 16) or 1.35 (32);
// 32 suits AVX-512 (4 registers; 16 was slower there) and many features (p = 64: fewer streams).
constexpr long DOT_TILE = 32;
OPTM_INLINE void dots_contiguous(const KernelData& kd, const long lo, const long hi,
                                 const double* xi, const long xs, double* buf) {
    const long m = hi - lo, p = kd.p, n = kd.n;
    const double* base = kd.XT + lo;
    long k0 = 0;
    for (; k0 + DOT_TILE <= m; k0 += DOT_TILE) {
        double acc[DOT_TILE];
        for (long j = 0; j < DOT_TILE; ++j) acc[j] = 0.0;
        for (long r = 0; r < p; ++r) {
            const double xr = xi[r * xs];
            const double* row = base + r * n + k0;
            for (long j = 0; j < DOT_TILE; ++j) acc[j] += row[j] * xr;
        }
        for (long j = 0; j < DOT_TILE; ++j) buf[k0 + j] = acc[j];
    }
    if (k0 == m) return;
    for (long k = k0; k < m; ++k) buf[k] = 0.0;
    for (long r = 0; r < p; ++r) {
        const double xr = xi[r * xs];
        const double* row = base + r * n;
        OPTM_SIMD
        for (long k = k0; k < m; ++k) buf[k] += row[k] * xr;
    }
}

// Dot products buf[k] = sum_r XT[r, ix[k]] xi[r * xs], k < m.
OPTM_INLINE void dots_gather(const KernelData& kd, const std::int64_t* ix, long m,
                             const double* xi, long xs, double* buf) {
    for (long k = 0; k < m; ++k) buf[k] = 0.0;
    for (long r = 0; r < kd.p; ++r) {
        const double xr = xi[r * xs];
        const double* row = kd.XT + r * kd.n;
        OPTM_SIMD
        for (long k = 0; k < m; ++k) buf[k] += row[ix[k]] * xr;
    }
}

// o[k] = y[lo + k] yi k(x_{lo+k}, x), k < hi - lo <= FILL_BLOCK, for any point x given by its
// coordinates xi[r * xs] and squared norm si (x_i itself: xi = XT + i, xs = n); o is relative to
// lo. For RBF, y yi q is rounded to T before the exact scaling by 2^e, as numba's two loops did.
// Always inlined: the body of fill_block_contiguous, and of callers' own cloned loops (kernel
// sums) that add the block into sums while it is in cache.
template <class T>
OPTM_INLINE void fill_rows(const KernelData& kd, long lo, long hi, double yi, const double* xi,
                           long xs, double si, T* o) {
    alignas(64) double buf[FILL_BLOCK];
    dots_contiguous(kd, lo, hi, xi, xs, buf);
    const long m = hi - lo;
    const double* y = kd.y + lo;
    if (kd.kind == KIND_RBF) {
        const double* sq = kd.sqn + lo;
        const double g = kd.gamma;
        OPTM_SIMD
        for (long k = 0; k < m; ++k) {
            const ExpParts ep = rbf_parts(g, sq[k], si, buf[k]);
            const T t = static_cast<T>(y[k] * yi * ep.q);
            o[k] = static_cast<T>(static_cast<double>(t) * ep.two_e);
        }
    } else if (kd.kind == KIND_POLY) {
        for (long k = 0; k < m; ++k)
            o[k] = static_cast<T>(y[k] * yi * std::pow(kd.gamma * buf[k] + kd.coef0, kd.degree));
    } else {
        OPTM_SIMD
        for (long k = 0; k < m; ++k) o[k] = static_cast<T>(y[k] * yi * buf[k]);
    }
}

// out[lo + k] = y[lo + k] yi k(x_{lo+k}, x), k < hi - lo <= FILL_BLOCK (x as in fill_rows).
template <class T>
OPTM_CLONES void fill_block_contiguous(const KernelData& kd, long lo, long hi, double yi,
                                       const double* xi, long xs, double si, T* out) {
    fill_rows(kd, lo, hi, yi, xi, xs, si, out + lo);
}

// out[ix[k]] = y[ix[k]] yi k(x_{ix[k]}, x), k < m <= FILL_BLOCK (x as above).
template <class T>
OPTM_CLONES void fill_block_gather(const KernelData& kd, const std::int64_t* ix, long m,
                                   double yi, const double* xi, long xs, double si, T* out) {
    alignas(64) double buf[FILL_BLOCK];
    dots_gather(kd, ix, m, xi, xs, buf);
    const double* y = kd.y;
    if (kd.kind == KIND_RBF) {
        const double g = kd.gamma;
        for (long k = 0; k < m; ++k) {
            const std::int64_t s = ix[k];
            const ExpParts ep = rbf_parts(g, kd.sqn[s], si, buf[k]);
            const T t = static_cast<T>(y[s] * yi * ep.q);
            out[s] = static_cast<T>(static_cast<double>(t) * ep.two_e);
        }
    } else if (kd.kind == KIND_POLY) {
        for (long k = 0; k < m; ++k) {
            const std::int64_t s = ix[k];
            out[s] = static_cast<T>(y[s] * yi * std::pow(kd.gamma * buf[k] + kd.coef0, kd.degree));
        }
    } else {
        for (long k = 0; k < m; ++k) {
            const std::int64_t s = ix[k];
            out[s] = static_cast<T>(y[s] * yi * buf[k]);
        }
    }
}

// The entries lo..hi-1 of KernelData::fill (any length), serially in blocks of FILL_BLOCK.
// KIND_MATRIX copies row i of Q (Q is symmetric).
template <class T>
void fill_range(const KernelData& kd, long i, const std::int64_t* idx, long lo, long hi,
                bool contiguous, T* out) {
    if (kd.kind == KIND_MATRIX) {
        const double* qi = kd.Q + i * kd.n;
        if (contiguous)
            for (long s = lo; s < hi; ++s) out[s] = static_cast<T>(qi[s]);
        else
            for (long k = lo; k < hi; ++k) out[idx[k]] = static_cast<T>(qi[idx[k]]);
        return;
    }
    const double yi = kd.y[i], si = kd.sqn ? kd.sqn[i] : 0.0;
    const double* xi = kd.XT + i;
    for (long b = lo; b < hi; b += FILL_BLOCK) {
        const long e = std::min(hi, b + FILL_BLOCK);
        if (contiguous)
            fill_block_contiguous(kd, b, e, yi, xi, kd.n, si, out);
        else
            fill_block_gather(kd, idx + b, e - b, yi, xi, kd.n, si, out);
    }
}

// out[s] = Q_si for s in idx[0..cnt) (s = 0..cnt-1 if contiguous): serial below PARALLEL_FROM
// entries or PARALLEL_WORK units of work, else one OpenMP task per block of FILL_BLOCK entries
// (each entry is computed the same way either way, so the result does not depend on the thread
// count).
template <class T>
void fill(const KernelData& kd, long i, const std::int64_t* idx, long cnt, bool contiguous,
          T* out) {
#ifdef _OPENMP
    if (cnt >= PARALLEL_FROM && kd.kind != KIND_MATRIX &&
        worth_parallel(entries_work(static_cast<double>(cnt), kd.p, contiguous))) {
        const long nb = (cnt + FILL_BLOCK - 1) / FILL_BLOCK;
#pragma omp parallel for schedule(static)
        for (long b = 0; b < nb; ++b)
            fill_range(kd, i, idx, b * FILL_BLOCK, std::min(cnt, (b + 1) * FILL_BLOCK),
                       contiguous, out);
        return;
    }
#endif
    fill_range(kd, i, idx, 0, cnt, contiguous, out);
}

template <class T>
void KernelData::fill(long i, const std::int64_t* idx, long cnt, bool contiguous, T* out) const {
    optmodels::fill(*this, i, idx, cnt, contiguous, out);
}

}  // namespace optmodels

OPTM_NO_TRAP_END

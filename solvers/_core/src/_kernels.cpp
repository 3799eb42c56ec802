// _kernels: kernel sums K(A, B) w, the full Q matrix, and a column entry point for tests.
// The kernel values are those of optmodels/kernel.hpp (the SMO cache's own column loops).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <vector>

#include "optmodels/kernel.hpp"

namespace nb = nanobind;
using namespace optmodels;

template <class T, class... Extra>
using Arr = nb::ndarray<T, nb::c_contig, nb::device::cpu, Extra...>;
using Vec = Arr<const double, nb::ndim<1>>;
using Mat = Arr<const double, nb::ndim<2>>;
using IVec = Arr<const std::int64_t, nb::ndim<1>>;
template <class T>
using OutVec = Arr<T, nb::ndim<1>>;
using NpMat = nb::ndarray<nb::numpy, double, nb::ndim<2>>;

namespace {

// The kernel of a spec (XT: p x n data transposed; Q: n x n for KIND_MATRIX).
KernelData kernel_data(int kind, const Mat& XT, const Vec& sqn, double gamma, double coef0,
                       double degree, const Vec& y, const double* Q) {
    KernelData kd;
    kd.kind = kind;
    kd.XT = XT.data();
    kd.p = static_cast<long>(XT.shape(0));
    kd.n = static_cast<long>(y.shape(0));
    kd.sqn = sqn.data();
    kd.gamma = gamma;
    kd.coef0 = coef0;
    kd.degree = degree;
    kd.y = y.data();
    kd.Q = Q;
    return kd;
}

// out[s] = Q_si for s in idx[:cnt] (s < cnt if contiguous): KernelData::fill (the cache's loop).
template <class T>
void fill_column(int kind, const Mat& XT, const Vec& sqn, double gamma, double coef0,
                 double degree, const Vec& y, const Mat& Q, long i, const IVec& idx, long cnt,
                 bool contiguous, OutVec<T> out) {
    const KernelData kd = kernel_data(kind, XT, sqn, gamma, coef0, degree, y, Q.data());
    nb::gil_scoped_release release;
    kd.fill(i, idx.data(), cnt, contiguous, out.data());
}

OPTM_NO_TRAP_BEGIN  // the RBF loops inlined below vectorize only so (see kernel.hpp)

// RBF: out[lo + j] += sum_t w_t k(a_{lo+j}, b_t) for a tile of SUM_TILE rows of A, t = 0..nb-1 in
// order. The tile's dot products, kernel values and sums stay in registers: per b_t, p
// multiply-adds per row (features in order), exp_parts, and acc += w_t k. The same operations in
// the same order as fill_rows (y = 1) followed by the weighted sum of sums_block, without
// storing the column and reloading it (the column loop wrote each value and sum to memory).
constexpr long SUM_TILE = 32;
OPTM_INLINE void rbf_sums_tile(const KernelData& ka, long lo, const double* B, long nb,
                               const double* sqb, const double* w, double* out) {
    const long p = ka.p, n = ka.n;
    const double* base = ka.XT + lo;
    const double* sq = ka.sqn + lo;
    const double g = ka.gamma;
    double acc[SUM_TILE];
    for (long j = 0; j < SUM_TILE; ++j) acc[j] = 0.0;
    for (long t = 0; t < nb; ++t) {
        const double* b = B + t * p;
        double d[SUM_TILE];
        for (long j = 0; j < SUM_TILE; ++j) d[j] = 0.0;
        for (long r = 0; r < p; ++r) {
            const double xr = b[r];
            const double* row = base + r * n;
            for (long j = 0; j < SUM_TILE; ++j) d[j] += row[j] * xr;
        }
        const double wt = w[t], st = sqb[t];
        for (long j = 0; j < SUM_TILE; ++j) {
            const ExpParts ep = rbf_parts(g, sq[j], st, d[j]);
            const double k = (1.0 * 1.0 * ep.q) * ep.two_e;  // fill_rows' value with y = 1
            acc[j] += wt * k;
        }
    }
    for (long j = 0; j < SUM_TILE; ++j) out[lo + j] += acc[j];
}

// out[s] += sum_t w_t k(a_s, b_t) for the rows lo..hi-1 of A (hi - lo <= FILL_BLOCK), b_t the rows
// of B (n_b x p). RBF: in tiles of SUM_TILE rows (rbf_sums_tile). Otherwise, and for the last
// rows: the values k(a_s, b_t), s in the block, for one b_t at a time by the SMO cache's column
// loop (fill_rows, y = 1), added with weight w_t into the block's sums while in cache.
OPTM_CLONES void sums_block(const KernelData& ka, long lo, long hi, const double* B, long nb,
                            const double* sqb, const double* w, double* out) {
    if (ka.kind == KIND_RBF)
        for (; lo + SUM_TILE <= hi; lo += SUM_TILE) rbf_sums_tile(ka, lo, B, nb, sqb, w, out);
    if (lo == hi) return;
    alignas(64) double col[FILL_BLOCK];
    alignas(64) double acc[FILL_BLOCK];
    const long m = hi - lo;
    for (long k = 0; k < m; ++k) acc[k] = 0.0;
    for (long t = 0; t < nb; ++t) {
        fill_rows(ka, lo, hi, 1.0, B + t * ka.p, 1, sqb[t], col);
        const double wt = w[t];
        OPTM_SIMD
        for (long k = 0; k < m; ++k) acc[k] += wt * col[k];
    }
    for (long k = 0; k < m; ++k) out[lo + k] += acc[k];
}

// K(A, B) w added into out, out[s] += sum_t w_t k(a_s, b_t) (AT: A transposed, p x m, C order;
// B: n_b x p), in blocks of FILL_BLOCK rows of A, one OpenMP task each (each sum is formed by
// one task in a fixed order: the result does not depend on the thread count).
void kernel_sums(int kind, const Mat& AT, const Vec& sqa, const Mat& B, const Vec& sqb,
                 const Vec& w, double gamma, double coef0, double degree, OutVec<double> out) {
    const long m = static_cast<long>(AT.shape(1)), nb = static_cast<long>(B.shape(0));
    std::vector<double> ones(static_cast<size_t>(m), 1.0);
    KernelData ka;
    ka.kind = kind;
    ka.XT = AT.data();
    ka.p = static_cast<long>(AT.shape(0));
    ka.n = m;
    ka.sqn = sqa.data();
    ka.gamma = gamma;
    ka.coef0 = coef0;
    ka.degree = degree;
    ka.y = ones.data();
    const double *Bp = B.data(), *sqbp = sqb.data(), *wp = w.data();
    double* o = out.data();
    nb::gil_scoped_release release;
    const long nblk = (m + FILL_BLOCK - 1) / FILL_BLOCK;
    const double work = entries_work(static_cast<double>(m) * nb, ka.p, true);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nblk > 1 && worth_parallel(work))
#endif
    for (long b = 0; b < nblk; ++b)
        sums_block(ka, b * FILL_BLOCK, std::min(m, (b + 1) * FILL_BLOCK), Bp, nb, sqbp, wp, o);
}

// sum_t v[t] in LANES partial sums (t mod LANES), combined pairwise: an order fixed in the code,
// so the same on every CPU, that vectorizes without reassociation (numba's fastmath sum had its
// own, vector-width-dependent order).
constexpr long LANES = 8;
OPTM_INLINE double lane_sum(const double* v, long nt) {
    double part[LANES] = {};
    long t = 0;
    for (; t + LANES <= nt; t += LANES)
        for (long j = 0; j < LANES; ++j) part[j] += v[t + j];
    for (long j = 0; t < nt; ++t, ++j) part[j] += v[t];
    for (long h = LANES / 2; h > 0; h /= 2)
        for (long j = 0; j < h; ++j) part[j] += part[j + h];
    return part[0];
}

// out[s] += sum_t w_t k(a_s, b_t) for s in lo..hi-1 from the dot products G[s, t] = a_s'b_t
// (G: rows x nt, C order): the terms of a row in val (nt doubles), vectorized, then lane_sum.
OPTM_CLONES void gram_rows(int kind, const double* G, long lo, long hi, long nt,
                           const double* sqa, const double* sqb, const double* w, double gamma,
                           double coef0, double degree, double* val, double* out) {
    for (long s = lo; s < hi; ++s) {
        const double* g = G + s * nt;
        const double sa = sqa[s];
        if (kind == KIND_RBF) {
            OPTM_SIMD
            for (long t = 0; t < nt; ++t) {
                const ExpParts ep = rbf_parts(gamma, sa, sqb[t], g[t]);
                val[t] = (w[t] * ep.q) * ep.two_e;
            }
        } else {
            for (long t = 0; t < nt; ++t) val[t] = w[t] * std::pow(gamma * g[t] + coef0, degree);
        }
        out[s] += lane_sum(val, nt);
    }
}

OPTM_NO_TRAP_END

// K(A, B) w added into out from the dot products G = A B' (rows x n_b), in blocks of 64 rows of G,
// one OpenMP task each.
void sums_from_gram(int kind, const Mat& G, const Vec& sqa, const Vec& sqb, const Vec& w,
                    double gamma, double coef0, double degree, OutVec<double> out) {
    const long rows = static_cast<long>(G.shape(0)), nt = static_cast<long>(G.shape(1));
    const double *Gp = G.data(), *sqap = sqa.data(), *sqbp = sqb.data(), *wp = w.data();
    double* o = out.data();
    nb::gil_scoped_release release;
    const long nblk = (rows + 63) / 64;
    // per term the kernel's own work (the dot products are given): ENTRY_WORK units
    const double work = entries_work(static_cast<double>(rows) * nt, 0, true);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nblk > 1 && worth_parallel(work))
#endif
    for (long b = 0; b < nblk; ++b) {
        std::vector<double> val(static_cast<size_t>(nt));
        gram_rows(kind, Gp, b * 64, std::min(rows, (b + 1) * 64), nt, sqap, sqbp, wp, gamma, coef0,
                  degree, val.data(), o);
    }
}

// The full n x n Q = [y_s y_i k(x_s, x_i)], row i = column i (Q symmetric), rows in parallel.
NpMat q_matrix(int kind, const Mat& XT, const Vec& sqn, double gamma, double coef0,
               double degree, const Vec& y) {
    const KernelData kd = kernel_data(kind, XT, sqn, gamma, coef0, degree, y, nullptr);
    const long n = kd.n;
    double* Q = new double[static_cast<size_t>(n) * static_cast<size_t>(n)];
    nb::capsule owner(Q, [](void* p) noexcept { delete[] static_cast<double*>(p); });
    {
        nb::gil_scoped_release release;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16) \
    if (n * n >= PARALLEL_FROM && worth_parallel(entries_work(double(n) * n, kd.p, true)))
#endif
        for (long i = 0; i < n; ++i) fill_range(kd, i, nullptr, 0, n, true, Q + i * n);
    }
    return NpMat(Q, {static_cast<size_t>(n), static_cast<size_t>(n)}, owner);
}

}  // namespace

NB_MODULE(_kernels, m) {
    m.doc() = "optmodels compiled core: kernel sums K(A, B) w and the full Q matrix";
    m.attr("FILL_BLOCK") = FILL_BLOCK;
    m.attr("PARALLEL_FROM") = PARALLEL_FROM;
    m.attr("PARALLEL_WORK") = PARALLEL_WORK;
    m.def("fill_column", &fill_column<double>, "Q_si into out[s] (test entry of kernel.hpp).");
    m.def("fill_column", &fill_column<float>);
    m.def("q_matrix", &q_matrix, "The full n x n Q = [y_s y_i k(x_s, x_i)].");
    m.def("kernel_sums", &kernel_sums, "out += K(A, B) w from A' (p x m) and B (n_b x p).");
    m.def("sums_from_gram", &sums_from_gram, "out += K(A, B) w from G = A B'.");
}

// _aid: AID-LAD's one-loop chunk passes on Dask (solvers/aid/lad_kernels.py wraps them).
//
// On a chunk of rows (x_i, y_i, s_i) with cluster labels l_i and a fit (beta, b):
//   r_i = (y_i - x_i'beta) - b,
//   rho_tau(r) = max(2 tau r, 2 (tau - 1) r)   (|r| at tau = 1/2),   E = sum_i s_i rho_tau(r_i),
// and per-cluster tallies of r. Each pass computes r_i once (a sweep over x is the cost) and adds
// it into every tally; the GIL is released so Dask's threads run chunks side by side.
//
// The arithmetic is that of the numba code it replaces, operation for operation: no FMA
// contraction (numba without fastmath did not contract), sums left to right, E and the weight
// sums with Neumaier's compensation. x, y and s may be strided views and float64 or float32
// each (the wrapper converts other dtypes); a product of two float32 values is rounded to float32
// as numba's was.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace nb = nanobind;

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace {

using Any = nb::ndarray<nb::ro, nb::device::cpu>;  // any dtype and strides (checked below)
template <class T, class... Extra>
using Out = nb::ndarray<T, nb::c_contig, nb::device::cpu, Extra...>;
using Beta = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Labels = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A strided vector / matrix of T (strides in elements, as nanobind gives them).
template <class T>
struct Col {
    const T* p;
    std::int64_t st;
    T operator[](std::int64_t i) const { return p[i * st]; }
};
template <class T>
struct Rows {
    const T* p;
    std::int64_t s0, s1, n, m;
    T operator()(std::int64_t i, std::int64_t j) const { return p[i * s0 + j * s1]; }
};

bool is_f32(const Any& a) { return a.dtype() == nb::dtype<float>(); }
void check_float(const Any& a, size_t ndim, const char* name) {
    if (a.ndim() != ndim || !(is_f32(a) || a.dtype() == nb::dtype<double>()))
        throw std::invalid_argument(std::string(name) + ": a float64 or float32 array of " +
                                    std::to_string(ndim) + " dimension(s) is needed");
}

// f(view) with the view typed by the array's dtype (float32 or float64).
template <class F>
auto with_col(const Any& a, F&& f) {
    if (is_f32(a)) return f(Col<float>{static_cast<const float*>(a.data()), a.stride(0)});
    return f(Col<double>{static_cast<const double*>(a.data()), a.stride(0)});
}
template <class F>
auto with_rows(const Any& a, F&& f) {
    const std::int64_t n = static_cast<std::int64_t>(a.shape(0)),
                       m = static_cast<std::int64_t>(a.shape(1));
    if (is_f32(a))
        return f(Rows<float>{static_cast<const float*>(a.data()), a.stride(0), a.stride(1), n, m});
    return f(Rows<double>{static_cast<const double*>(a.data()), a.stride(0), a.stride(1), n, m});
}
// f(x, y, s) with all three typed.
template <class F>
auto with_xys(const Any& x, const Any& y, const Any& s, F&& f) {
    return with_rows(x, [&](auto X) {
        return with_col(y, [&](auto Y) { return with_col(s, [&](auto S) { return f(X, Y, S); }); });
    });
}

// r_i = (y_i - x_i'beta) - b, the dot product left to right (lad_residual's order).
template <class X, class Y>
inline double residual(const Rows<X>& x, const Col<Y>& y, const double* beta, double b,
                       std::int64_t i) {
    double d = 0.0;
    for (std::int64_t j = 0; j < x.m; ++j) d += x(i, j) * beta[j];
    return (y[i] - d) - b;
}

// One step of Neumaier's compensated sum: total += term, the lost low part added into comp
// (the sum is total + comp).
inline void neumaier(double& total, double& comp, double term) {
    const double t = total + term;
    if (std::abs(total) >= std::abs(term))
        comp += (total - t) + term;
    else
        comp += (term - t) + total;
    total = t;
}

// ---------------------------------------------------------------- evaluate
// r (out) and E = sum_i s_i rho_tau(r_i); the tallies per cluster k in row k of T (K x 4, or
// K x 6 with means): [#{r > tol}, #{r < -tol}, #{r <= 0}, #{r > 0}, (sum |r| over r <= 0,
// over r > 0)]. The residuals and E in a loop of their own: the tallies' scattered writes stall
// it by half when fused (measured in the numba version).
double evaluate_loop(const Any& x_, const Any& y_, const Any& s_, const Labels& lab_,
                     const Beta& beta_, double b, double tol, double tau, Out<double> r_,
                     Out<double, nb::ndim<2>> T_) {
    const std::int64_t n = static_cast<std::int64_t>(y_.shape(0));
    const std::int64_t K = static_cast<std::int64_t>(T_.shape(0)),
                       w = static_cast<std::int64_t>(T_.shape(1));
    const bool means = w == 6;
    const std::int64_t* lab = lab_.data();
    const double* beta = beta_.data();
    double* r = r_.data();
    double* T = T_.data();
    bool bad_label = false;
    const double total = with_xys(x_, y_, s_, [&](auto x, auto y, auto s) {
        nb::gil_scoped_release release;
        const double up = 2.0 * tau, down = 2.0 * (tau - 1.0);
        double sum = 0.0, comp = 0.0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double v = residual(x, y, beta, b, i);
            r[i] = v;
            const double a = up * v, c = down * v;
            neumaier(sum, comp, s[i] * (c > a ? c : a));  // numba's max(a, c)
        }
        for (std::int64_t i = 0; i < n; ++i) {
            const double v = r[i];
            const std::int64_t k = lab[i];
            if (k < 0 || k >= K) {
                bad_label = true;
                break;
            }
            double* Tk = T + k * w;
            if (v > tol)
                Tk[0] += 1.0;
            else if (v < -tol)
                Tk[1] += 1.0;
            const int side = v > 0 ? 1 : 0;
            Tk[2 + side] += 1.0;
            if (means) Tk[4 + side] += std::abs(v);
        }
        return sum + comp;
    });
    if (bad_label) throw std::invalid_argument("evaluate: a label is outside 0..K-1");
    return total;
}

// ---------------------------------------------------------------- pk band
// First pass of pk_band: r (out); code_i = 0 for r_i < a, 1 for r_i > z, 2 + the rank of the
// row among those with a <= r <= z; and per side (0 below, 1 above) [rows, W, SX, SY] =
// [count, sum s, sum s x (p), sum s y] into sides (2 x (p + 3), zeros). Returns the rows inside.
std::int64_t band_codes(const Any& x_, const Any& y_, const Any& s_, const Beta& beta_, double b,
                        double a, double z, Out<double> r_, Out<std::int64_t> code_,
                        Out<double, nb::ndim<2>> sides_) {
    const double* beta = beta_.data();
    double* r = r_.data();
    std::int64_t* code = code_.data();
    double* sides = sides_.data();
    return with_xys(x_, y_, s_, [&](auto x, auto y, auto s) {
        nb::gil_scoped_release release;
        const std::int64_t n = x.n, p = x.m, w = p + 3;
        std::int64_t n_in = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double v = residual(x, y, beta, b, i);
            r[i] = v;
            if (a <= v && v <= z) {
                code[i] = 2 + n_in++;
                continue;
            }
            const std::int64_t side = v > z ? 1 : 0;
            code[i] = side;
            const auto wi = s[i];
            double* sd = sides + side * w;
            sd[0] += 1.0;
            sd[1] += wi;
            for (std::int64_t j = 0; j < p; ++j) sd[2 + j] += wi * x(i, j);
            sd[2 + p] += wi * y[i];
        }
        return n_in;
    });
}

// Second pass: the rows with code >= 2, in row order, as [r, 1, s, s x (p), s y] into rows.
void band_rows(const Any& x_, const Any& y_, const Any& s_, const Out<const double>& r_,
               const Out<const std::int64_t>& code_, Out<double, nb::ndim<2>> rows_) {
    const double* r = r_.data();
    const std::int64_t* code = code_.data();
    double* rows = rows_.data();
    const std::int64_t n_in = static_cast<std::int64_t>(rows_.shape(0));
    with_xys(x_, y_, s_, [&](auto x, auto y, auto s) {
        nb::gil_scoped_release release;
        const std::int64_t n = x.n, p = x.m, w = p + 4;
        for (std::int64_t i = 0; i < n; ++i) {
            const std::int64_t c = code[i] - 2;
            if (c < 0 || c >= n_in) continue;
            const auto wi = s[i];
            double* row = rows + c * w;
            row[0] = r[i];
            row[1] = 1.0;
            row[2] = wi;
            for (std::int64_t j = 0; j < p; ++j) row[3 + j] = wi * x(i, j);
            row[3 + p] = wi * y[i];
        }
        return 0;
    });
}

// ---------------------------------------------------------------- chunk statistics
// bad[row, 0 | 1] = 1 when v is NaN | +-infinity (rows: x, y, s).
inline void flag(std::int64_t* bad, int row, double v) {
    if (v != v)
        bad[2 * row] = 1;
    else if (std::abs(v) == std::numeric_limits<double>::infinity())
        bad[2 * row + 1] = 1;
}

// One pass: the NaN / infinity flags of x, y, s into bad (3 x 2, zeros); over the rows with
// s_i > 0: acc = [kept, any s < 0, any s == 0, min s, max s, min y, max y] (acc holds the
// starting values), the column ranges of x into lo / hi (+inf / -inf to start), and the
// Neumaier sums (sum s_i, sum s_i |y_i|), returned. NaN never enters a min or max.
std::pair<double, double> stats_loop(const Any& x_, const Any& y_, const Any& s_,
                                     Out<std::int64_t, nb::ndim<2>> bad_, Out<double> acc_,
                                     Out<double> lo_, Out<double> hi_) {
    std::int64_t* bad = bad_.data();
    double* acc = acc_.data();
    double* lo = lo_.data();
    double* hi = hi_.data();
    return with_xys(x_, y_, s_, [&](auto x, auto y, auto s) {
        nb::gil_scoped_release release;
        const std::int64_t n = x.n, p = x.m;
        double ss = 0.0, cs = 0.0, sy = 0.0, cy = 0.0;
        for (std::int64_t i = 0; i < n; ++i) {
            const auto w = s[i];
            const auto v = y[i];
            flag(bad, 1, v);
            flag(bad, 2, w);
            const bool keep = w > 0;
            for (std::int64_t j = 0; j < p; ++j) {
                const double t = x(i, j);
                flag(bad, 0, t);
                if (keep) {  // numba's min / max: the new value only when strictly beyond
                    lo[j] = t < lo[j] ? t : lo[j];
                    hi[j] = t > hi[j] ? t : hi[j];
                }
            }
            if (!keep) {
                if (w < 0)
                    acc[1] = 1.0;
                else if (w == 0)
                    acc[2] = 1.0;
                continue;
            }
            acc[0] += 1.0;
            acc[3] = w < acc[3] ? w : acc[3];
            acc[4] = w > acc[4] ? w : acc[4];
            acc[5] = v < acc[5] ? v : acc[5];
            acc[6] = v > acc[6] ? v : acc[6];
            neumaier(ss, cs, w);
            neumaier(sy, cy, w * std::abs(v));  // float32 x float32 stays float32, as numba's
        }
        return std::pair<double, double>(ss + cs, sy + cy);
    });
}

// ---------------------------------------------------------------- bracket
// Whether y is inside the bracket [a, b) ([a, b] when last).
inline bool in_bracket(double v, double a, double b, bool last) {
    return a <= v && (v < b || (v == b && last));
}

// First pass: below the bracket (y < a) W_b = sum s, L_b = sum s (a - y), their count; above
// it (y > b, or y == b when not last) W_a = sum s, L_a = sum s (y - b): sums = [W_b, L_b, count,
// W_a, L_a] (zeros). Returns the number of rows inside.
std::int64_t bracket_sums(const Any& y_, const Any& s_, double a, double b, bool last,
                          Out<double> sums_) {
    double* sums = sums_.data();
    return with_col(y_, [&](auto y) {
        return with_col(s_, [&](auto s) {
            nb::gil_scoped_release release;
            const std::int64_t n = static_cast<std::int64_t>(y_.shape(0));
            std::int64_t inside = 0;
            for (std::int64_t i = 0; i < n; ++i) {
                const double v = y[i];
                const auto w = s[i];
                if (v < a) {
                    sums[0] += w;
                    sums[1] += w * (a - v);
                    sums[2] += 1.0;
                } else if (v > b || (v == b && !last)) {
                    sums[3] += w;
                    sums[4] += w * (v - b);
                } else {
                    ++inside;
                }
            }
            return inside;
        });
    });
}

// Second pass: the rows inside, in row order, as [y, 1 if unit else s, s].
void bracket_rows(const Any& y_, const Any& s_, double a, double b, bool last, bool unit,
                  Out<double, nb::ndim<2>> rows_) {
    double* rows = rows_.data();
    const std::int64_t cap = static_cast<std::int64_t>(rows_.shape(0));
    with_col(y_, [&](auto y) {
        return with_col(s_, [&](auto s) {
            nb::gil_scoped_release release;
            const std::int64_t n = static_cast<std::int64_t>(y_.shape(0));
            std::int64_t k = 0;
            for (std::int64_t i = 0; i < n && k < cap; ++i) {
                const double v = y[i];
                if (!in_bracket(v, a, b, last)) continue;
                const double w = s[i];
                rows[3 * k] = v;
                rows[3 * k + 1] = unit ? 1.0 : w;
                rows[3 * k + 2] = w;
                ++k;
            }
            return 0;
        });
    });
}

// Shapes at the boundary (the Python wrapper makes dtypes and contiguity right).
void check_chunk(const Any& x, const Any& y, const Any& s) {
    check_float(x, 2, "x");
    check_float(y, 1, "y");
    check_float(s, 1, "s");
    if (y.shape(0) != x.shape(0) || s.shape(0) != x.shape(0))
        throw std::invalid_argument("x, y and s need the same number of rows");
}

}  // namespace

NB_MODULE(_aid, m) {
    m.doc() = "optmodels compiled core: AID-LAD's chunk passes (residuals and tallies)";
    m.def("evaluate_loop",
          [](const Any& x, const Any& y, const Any& s, const Labels& lab, const Beta& beta,
             double b, double tol, double tau, Out<double> r, Out<double, nb::ndim<2>> T) {
              check_chunk(x, y, s);
              if (lab.shape(0) != y.shape(0) || r.shape(0) != y.shape(0) ||
                  beta.shape(0) != x.shape(1) || (T.shape(1) != 4 && T.shape(1) != 6))
                  throw std::invalid_argument("evaluate_loop: inconsistent shapes");
              return evaluate_loop(x, y, s, lab, beta, b, tol, tau, r, T);
          });
    m.def("band_codes",
          [](const Any& x, const Any& y, const Any& s, const Beta& beta, double b, double a,
             double z, Out<double> r, Out<std::int64_t> code, Out<double, nb::ndim<2>> sides) {
              check_chunk(x, y, s);
              if (beta.shape(0) != x.shape(1) || r.shape(0) != y.shape(0) ||
                  code.shape(0) != y.shape(0) || sides.shape(0) != 2 ||
                  sides.shape(1) != x.shape(1) + 3)
                  throw std::invalid_argument("band_codes: inconsistent shapes");
              return band_codes(x, y, s, beta, b, a, z, r, code, sides);
          });
    m.def("band_rows",
          [](const Any& x, const Any& y, const Any& s, const Out<const double>& r,
             const Out<const std::int64_t>& code, Out<double, nb::ndim<2>> rows) {
              check_chunk(x, y, s);
              if (r.shape(0) != y.shape(0) || code.shape(0) != y.shape(0) ||
                  rows.shape(1) != x.shape(1) + 4)
                  throw std::invalid_argument("band_rows: inconsistent shapes");
              band_rows(x, y, s, r, code, rows);
          });
    m.def("stats_loop",
          [](const Any& x, const Any& y, const Any& s, Out<std::int64_t, nb::ndim<2>> bad,
             Out<double> acc, Out<double> lo, Out<double> hi) {
              check_chunk(x, y, s);
              if (bad.shape(0) != 3 || bad.shape(1) != 2 || acc.shape(0) != 7 ||
                  lo.shape(0) != x.shape(1) || hi.shape(0) != x.shape(1))
                  throw std::invalid_argument("stats_loop: inconsistent shapes");
              return stats_loop(x, y, s, bad, acc, lo, hi);
          });
    m.def("bracket_sums",
          [](const Any& y, const Any& s, double a, double b, bool last, Out<double> sums) {
              check_float(y, 1, "y");
              check_float(s, 1, "s");
              if (s.shape(0) != y.shape(0) || sums.shape(0) != 5)
                  throw std::invalid_argument("bracket_sums: inconsistent shapes");
              return bracket_sums(y, s, a, b, last, sums);
          });
    m.def("bracket_rows",
          [](const Any& y, const Any& s, double a, double b, bool last, bool unit,
             Out<double, nb::ndim<2>> rows) {
              check_float(y, 1, "y");
              check_float(s, 1, "s");
              if (s.shape(0) != y.shape(0) || rows.shape(1) != 3)
                  throw std::invalid_argument("bracket_rows: inconsistent shapes");
              bracket_rows(y, s, a, b, last, unit, rows);
          });
}

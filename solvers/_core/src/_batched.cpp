// Batched working-set SMO (after ThunderSVM): q variables per outer step, their n x q block of Q
// in one pass over the data, the q-variable subproblem by pairwise SMO on Q_WW.
// Port of the numba code of solvers/smo/batched.py (same operations in the same order, so the
// runs take the same steps); the Python entry point solve_dual_batched stays there.
//
// Problem (as the pairwise Solver, dual_terms.hpp):
//
//     min_alpha  f(alpha) = 1/2 alpha' Q alpha + p' alpha + sum_i h_i(alpha_i)
//     s.t.       y' alpha = 0,   l_i <= alpha_i <= u_i,          Q_ij = y_i y_j K_ij
//
// with h = 0 (SVM) or the KLR entropy (beta = C - alpha carried separately).
// G = Q alpha + p + h'(alpha), m_t = -y_t G_t; violation v = max_{I_up} m - min_{I_low} m.
//
// Outer step k:
//   * W (|W| = q): the newest n_keep of the previous W stay; the rest is refilled alternately
//     by the next largest m_t in I_up and the next smallest m_t in I_low not yet in W
//     (Ranking, select). W holds argmax_{I_up} m and argmin_{I_low} m: the subproblem's first
//     violation is v.
//   * Q_WW from the cached columns, or for a column new in this step its q entries at W
//     computed directly, in the cache's precision (block_ww).
//   * Subproblem: the dual restricted to W with g_W = G_W, by the pairwise second-order SMO
//     (inner_smo) until its violation <= max(tol, inner_factor v) or inner_steps steps.
//   * G += Q_:W (alpha_W^new - alpha_W^old) (nonzero changes only) [+ the change of h' on W];
//     the missing columns of the variables that moved are computed in the same pass over X, in
//     row blocks of ROW_BLOCK rows (fill_and_update).
//   * Stop: v <= tol (converged); pair steps >= max_iter; a subproblem without a step (stalled);
//     KLR with gap_scale > 0: every GAP_EVERY outer steps the gap check (klr_gap_stop).
//
// Shrinking (LIBSVM's rule, not with Q given in full): the loop works on compacted copies of the
// active variables (index k <-> row act[k]); cached columns hold the active rows in that order.
// A shrunk row t keeps G_bar_t = sum_{s at a bound} alpha_s Q_ts and its gradient is rebuilt as
// G_t = G_bar_t + p_t [+ h'_t] + sum_{free s} alpha_s Q_ts (see batched.py's docstring).
//
// Floating point: the loops numba compiled with its FASTMATH flags (the fills, the gradient
// updates of fill_and_update and rows_times) contract a*b + c to FMA where the CPU has it: here
// they are compiled for x86-64-v3 as well (OPTM_CLONES) and GCC contracts (gnu++17 default).
// The subproblem and the bookkeeping were compiled by numba without fast-math: they are left to
// the baseline target, where no FMA exists, so nothing is contracted there either.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "optmodels/dual_terms.hpp"
#include "optmodels/kernel.hpp"
#include "optmodels/progress.hpp"
#include "optmodels/signals.hpp"

namespace nb = nanobind;

namespace optmodels {
namespace batched {

using i64 = std::int64_t;
constexpr double INF = std::numeric_limits<double>::infinity();

// Rows per parallel task of a block fill and of the gradient update (X's p x ROW_BLOCK rows stay
// in the L1 / L2 cache while every missing column is computed on them). <= FILL_BLOCK.
constexpr long ROW_BLOCK = 512;
// Outer steps between gap checks of a KLR run given gap_scale.
constexpr i64 GAP_EVERY = 10;
constexpr i64 SIGNAL_EVERY = 4;  // outer steps between Ctrl-C checks (signals.hpp)
enum Status : int { STATUS_CONVERGED = 0, STATUS_ITERATION_LIMIT = 1, STATUS_STALLED = 2,
                    STATUS_GAP = 3, STATUS_INTERRUPTED = 4 };

// ---------------------------------------------------------------- the n x q block
// XW[k p + r] = XT[r, cols[k]]: the rows x_t of the columns t = cols[k], contiguous.
static void columns_of(const KernelData& kd, const i64* cols, long ncols, std::vector<double>& XW) {
  XW.resize(static_cast<size_t>(ncols * kd.p));
  for (long k = 0; k < ncols; ++k)
    for (long r = 0; r < kd.p; ++r) XW[k * kd.p + r] = kd.XT[r * kd.n + cols[k]];
}

// g[t] += col[t] d, t < m (numba: contracted to FMA).
template <class T>
OPTM_CLONES void add_scaled(double* g, const T* col, double d, long m) {
  OPTM_SIMD
  for (long t = 0; t < m; ++t) g[t] += col[t] * d;
}

// Copy the rows lo..lo+m-1 of kd's data into tile (p x m) and return a KernelData over them.
static KernelData tile_of(const KernelData& kd, long lo, long m, std::vector<double>& tile) {
  tile.resize(static_cast<size_t>(kd.p * m));
  for (long r = 0; r < kd.p; ++r)
    std::copy(kd.XT + r * kd.n + lo, kd.XT + r * kd.n + lo + m, tile.data() + r * m);
  KernelData kt = kd;
  kt.XT = tile.data();
  kt.n = m;
  kt.sqn = kd.sqn + lo;
  kt.y = kd.y + lo;
  return kt;
}

// body(lo, m, tile) for the row blocks [lo, lo + m) of n rows (ROW_BLOCK each) with a scratch
// vector per thread: on all threads when the region's work (units of kernel.hpp's PARALLEL_WORK)
// pays for it, else serially. Blocks are independent: results do not depend on the threads.
template <class Body>
static void for_row_blocks(long n, double work, Body&& body) {
  const long nb = (n + ROW_BLOCK - 1) / ROW_BLOCK;
#pragma omp parallel if (nb > 1 && worth_parallel(work))
  {
    std::vector<double> tile;
#pragma omp for schedule(static)
    for (long b = 0; b < nb; ++b) body(b * ROW_BLOCK, std::min(n - b * ROW_BLOCK, ROW_BLOCK), tile);
  }
}

// Kc[slots[k]] = Q_:cols[k] (all rows of kd) for k < nfill, and G += sum_{k < nnz} d[k] Kc[gslots[k]],
// in one pass over X in row blocks of ROW_BLOCK rows on all threads. A block's rows of X stay in
// the CPU cache while every new column is computed on them, and the block's rows of the new
// columns are still there when they are added to G (read back from Kc, so G takes the entries
// exactly as cached). Rows are independent: the result does not depend on the thread count.
// Kc: slots of ld entries each.
template <class T>
static void fill_and_update(const KernelData& kd, const i64* cols, const i64* slots, long nfill,
                            T* Kc, long ld, double* grad, const i64* gslots, const double* d,
                            long nnz) {
  std::vector<double> XW;
  columns_of(kd, cols, nfill, XW);
  // per row: nfill kernel entries and nnz gradient terms
  const double work = entries_work(static_cast<double>(kd.n) * nfill, kd.p, true) +
                      static_cast<double>(kd.n) * nnz;
  for_row_blocks(kd.n, work, [&](long lo, long m, std::vector<double>& tile) {
    if (nfill > 0) {
      const KernelData kt = tile_of(kd, lo, m, tile);
      for (long k = 0; k < nfill; ++k) {
        const i64 i = cols[k];
        fill_block_contiguous<T>(kt, 0, m, kd.y[i], XW.data() + k * kd.p, 1, kd.sqn[i],
                                 Kc + slots[k] * ld + lo);
      }
    }
    for (long k = 0; k < nnz; ++k) add_scaled<T>(grad + lo, Kc + gslots[k] * ld + lo, d[k], m);
  });
}

// The LRU column cache: slot_of[t] (column t's slot or -1), col_in[s] (slot s's column or -1),
// tick[s] (last use of slot s).
struct ColumnSlots {
  std::vector<i64> slot_of, col_in, tick;
  i64 clock = 0;
};

// Slots for the columns of W[:nw] (least recently used evicted; W's cached columns are
// protected). The missing ones are returned in need / need_slot; returns their count.
static long cache_columns(const i64* W, long nw, ColumnSlots& c, i64* need, i64* need_slot) {
  const i64 now = ++c.clock;
  for (long k = 0; k < nw; ++k) {
    const i64 s = c.slot_of[W[k]];
    if (s >= 0) c.tick[s] = now;
  }
  long count = 0;
  const long n_slots = static_cast<long>(c.col_in.size());
  for (long k = 0; k < nw; ++k) {
    const i64 t = W[k];
    if (c.slot_of[t] >= 0) continue;
    long s = 0;
    i64 best = c.tick[0];
    for (long r = 1; r < n_slots; ++r)
      if (c.tick[r] < best) { best = c.tick[r]; s = r; }
    const i64 old = c.col_in[s];
    if (old >= 0) c.slot_of[old] = -1;
    c.col_in[s] = t;
    c.slot_of[t] = s;
    c.tick[s] = now;
    need[count] = t;
    need_slot[count] = s;
    ++count;
  }
  return count;
}

// Qw[k ldq + r] = Q_{W[k] W[r]}, k, r < nw: column r from its slot sl[r], or, when W[r]'s column
// is new in this outer step (fresh[W[r]] == outer), its nw entries at W computed here with the
// fill's code, rounded to the cache's precision T (wcol) as the column will hold them. XWT
// (p x ldx) / sqw receive W's rows of X and squared norms. Returns the kernel entries computed.
template <class T>
static i64 block_ww(const KernelData& kd, const double* yw, const i64* W, long nw, const i64* sl,
                    const i64* fresh, i64 outer, const T* Kc, long ld, double* Qw, long ldq,
                    double* XWT, long ldx, double* sqw, T* wcol) {
  i64 evals = 0;
  bool gathered = false;
  KernelData kw = kd;
  kw.XT = XWT;
  kw.n = ldx;
  kw.sqn = sqw;
  kw.y = yw;
  for (long r = 0; r < nw; ++r) {
    if (fresh[W[r]] == outer) {
      if (!gathered) {
        for (long i = 0; i < kd.p; ++i)
          for (long k = 0; k < nw; ++k) XWT[i * ldx + k] = kd.XT[i * kd.n + W[k]];
        for (long k = 0; k < nw; ++k) sqw[k] = kd.sqn[W[k]];
        gathered = true;
      }
      fill_range<T>(kw, r, nullptr, 0, nw, true, wcol);
      evals += nw;
      for (long k = 0; k < nw; ++k) Qw[k * ldq + r] = wcol[k];
    } else {
      const T* col = Kc + sl[r] * ld;
      for (long k = 0; k < nw; ++k) Qw[k * ldq + r] = col[W[k]];
    }
  }
  return evals;
}

// Keep in need / need_slot the new columns whose variable moved (only those are computed); the
// slot of one that did not move goes back to the cache, first in line for reuse. Returns count.
static long keep_moved(i64* need, i64* need_slot, long cnt, const std::vector<char>& moved,
                       ColumnSlots& c) {
  long count = 0;
  for (long k = 0; k < cnt; ++k) {
    const i64 t = need[k];
    if (moved[t]) {
      need[count] = t;
      need_slot[count] = need_slot[k];
      ++count;
    } else {
      c.slot_of[t] = -1;
      c.col_in[need_slot[k]] = -1;
      c.tick[need_slot[k]] = 0;
    }
  }
  return count;
}

// ---------------------------------------------------------------- working set
// (va, ia) ranks after (vb, ib): a smaller key, or the same key at a larger index.
static inline bool worse(double va, i64 ia, double vb, i64 ib) {
  return va < vb || (va == vb && ia > ib);
}

// Indices of the (at most) k largest keys above -inf, largest first (ties by index). One pass
// keeps the best k seen in a binary heap whose root is the worst of them (a key equal to the
// root's comes at a larger index, so it ranks after it and is skipped); the k kept are then
// sorted (the order is total: indices differ).
static void ranked(const double* key, long n, long k, std::vector<i64>& out) {
  out.clear();
  if (k <= 0) return;
  std::vector<double> hv(static_cast<size_t>(k));
  std::vector<i64> hi(static_cast<size_t>(k));
  long size = 0;
  for (long t = 0; t < n; ++t) {
    const double v = key[t];
    if (!(v > -INF)) continue;
    long pos;
    if (size < k) {  // insert at the end, sift up past better parents
      pos = size++;
      while (pos > 0) {
        const long parent = (pos - 1) >> 1;
        if (!worse(v, t, hv[parent], hi[parent])) break;
        hv[pos] = hv[parent];
        hi[pos] = hi[parent];
        pos = parent;
      }
    } else if (v > hv[0]) {  // replace the root, sift down past worse children
      pos = 0;
      for (;;) {
        long c = 2 * pos + 1;
        if (c >= size) break;
        if (c + 1 < size && worse(hv[c + 1], hi[c + 1], hv[c], hi[c])) ++c;
        if (!worse(hv[c], hi[c], v, t)) break;
        hv[pos] = hv[c];
        hi[pos] = hi[c];
        pos = c;
      }
    } else {
      continue;
    }
    hv[pos] = v;
    hi[pos] = t;
  }
  std::vector<long> order(static_cast<size_t>(size));
  for (long r = 0; r < size; ++r) order[r] = r;
  std::sort(order.begin(), order.end(),
            [&](long a, long b) { return worse(hv[b], hi[b], hv[a], hi[a]); });
  out.resize(static_cast<size_t>(size));
  for (long r = 0; r < size; ++r) out[r] = hi[order[r]];
}

// ---------------------------------------------------------------- the subproblem
// The subproblem's arrays (length nw, indices into W) and Q_WW (row stride ldq).
struct Subproblem {
  const double* Qw;
  long ldq, nw;
  double *y, *a, *b, *g;
  const double *lo, *up, *cent, *qd;
  double* hdd;  // h''(alpha_t) for KLR, else 0
  bool ent;
  // The most negative kernel curvature Q_ii + Q_tt - 2 y_i y_t Q_it (= K_ii + K_tt - 2 K_it)
  // the scans met: < 0 proves K indefinite (v = e_i - e_t has v'Kv < 0). +inf if none seen.
  double min_curv = std::numeric_limits<double>::infinity();

  // One pair step along (+y_i, -y_j): the step of dual_terms.hpp's pair_values and
  //   g_W += dalpha_i Q_Wi + dalpha_j Q_Wj [+ the change of h' at i, j].
  // False when the pair cannot move in floating point.
  bool pair_step(long i, long j, double gmax) {
    const double bgap = gmax - (-y[j] * g[j]);
    const double aq = qd[i] + qd[j] - 2.0 * y[i] * y[j] * Qw[i * ldq + j];
    const double ai_old = a[i], aj_old = a[j], bi_old = b[i], bj_old = b[j];
    const PairValues v = pair_values(i, j, bgap, aq, y, a, b, lo, up, cent, ent);
    const double dai = v.ai - ai_old, daj = v.aj - aj_old;
    if (dai == 0.0 && daj == 0.0 && (!ent || (v.bi == bi_old && v.bj == bj_old))) return false;
    a[i] = v.ai;
    a[j] = v.aj;
    const double* qi = Qw + i * ldq;
    const double* qj = Qw + j * ldq;
    for (long t = 0; t < nw; ++t) g[t] += qi[t] * dai + qj[t] * daj;
    if (ent) entropy_update(i, j, ai_old, aj_old, bi_old, bj_old, v.bi, v.bj, a, b, g, hdd);
    return true;
  }

  // Pairwise second-order SMO: i = argmax_{I_up} m, j = argmin over t in I_low with m_t < m_i
  // of -(m_i - m_t)^2 / a_it, a_it = Q_ii + Q_tt - 2 y_i y_t Q_it + h_i'' + h_t'' (<= 0 -> TAU),
  // until the violation <= stop or cap steps. Returns (steps, stalled).
  std::pair<i64, bool> solve(double stop, i64 cap) {
    i64 steps = 0;
    while (steps < cap) {
      double gmax = -INF;
      long i = -1;
      for (long t = 0; t < nw; ++t) {
        if (in_up(y[t], a[t], lo[t], up[t])) {
          const double m = -y[t] * g[t];
          if (m >= gmax) { gmax = m; i = t; }
        }
      }
      if (i < 0) break;
      double gmin = INF;
      long j = -1;
      const double base = qd[i] + hdd[i];
      const double* qi = Qw + i * ldq;
      double best = INF;
      for (long t = 0; t < nw; ++t) {
        if (in_low(y[t], a[t], lo[t], up[t])) {
          const double m = -y[t] * g[t];
          if (m < gmin) gmin = m;
          const double bgap = gmax - m;
          if (bgap > 0.0) {
            double c = base + qd[t] + hdd[t] - 2.0 * y[i] * y[t] * qi[t];
            const double kc = ent ? qd[i] + qd[t] - 2.0 * y[i] * y[t] * qi[t] : c;
            if (kc < min_curv) min_curv = kc;
            if (c <= 0.0) c = TAU;
            const double gain = -bgap * bgap / c;
            if (gain <= best) { best = gain; j = t; }
          }
        }
      }
      if (gmax - gmin <= stop || j < 0) break;
      if (!pair_step(i, j, gmax)) return {steps, true};
      ++steps;
    }
    return {steps, false};
  }
};

// ---------------------------------------------------------------- shrinking helpers
// out[r] += sum_{k < ncols} coef[k] Q_{s_r, cols[k]} for the rows s_r whose data kr holds
// compacted (cols index the data of kd). Parallel over row blocks (rows independent).
static void rows_times(const KernelData& kr, const KernelData& kd, const i64* cols,
                       const double* coef, long ncols, double* out) {
  std::vector<double> XW;
  columns_of(kd, cols, ncols, XW);
  const double work = entries_work(static_cast<double>(kr.n) * ncols, kd.p, true) +
                      static_cast<double>(kr.n) * ncols;
  for_row_blocks(kr.n, work, [&](long lo, long m, std::vector<double>& tile) {
    const KernelData kt = tile_of(kr, lo, m, tile);
    alignas(64) double col[ROW_BLOCK];
    for (long k = 0; k < ncols; ++k) {
      const i64 i = cols[k];
      fill_block_contiguous<double>(kt, 0, m, kd.y[i], XW.data() + k * kd.p, 1, kd.sqn[i], col);
      add_scaled<double>(out + lo, col, coef[k], m);
    }
  });
}

// alpha on a bound, else 0 (its share of G_bar = sum_{t at a bound} alpha_t Q_:t).
static inline double bound_part(double alpha, double lo, double up) {
  return (alpha == lo || alpha == up) ? alpha : 0.0;
}

// ---------------------------------------------------------------- the solver
struct Settings {
  double tol = 1e-3;
  i64 max_iter = 10000000;
  i64 q = 256;             // working-set size
  i64 n_keep = 128;        // entries of W carried to the next outer step
  double inner_factor = 0.1;
  i64 inner_steps = 2560;  // cap on a subproblem's pair steps
  i64 shrink_every = 0;    // pair steps between shrinking checks; 0: no shrinking
  double min_drop = 0.05;  // a check shrinks when it drops at least this share
  bool verbose = false;
  double gap_scale = 0.0;  // KLR: > 0 enables the gap stop
  double gap_rel = 0.0;
  double gap_sol = 0.0;     // the stop's solution-rule share (dual_terms.hpp GapTarget; 0: none)
  double gap_wfloor = 0.0;  // 1 / q_max (GapTarget)
  double report_every = 0.25;  // seconds between the progress report's calls (progress.hpp)
  bool track = false;          // keep f(alpha) up to date (the trace's objective, the reports)
  // The run resumes a converged one (a refinement round): the first shrinking check before the
  // first outer step, and no early un-shrink at 10 tol (its final check verified every row).
  bool resume = false;
};

// The problem's per-variable arrays (length n).
struct Problem {
  KernelData kd;  // kernel over all n rows (kd.y = y)
  const double *lo, *up, *lin, *cent, *qd;
  bool ent;
  double *alpha, *beta, *grad;  // updated in place
  // G_bar carried between runs (a refinement round continues where the last run stopped), or
  // null: in, G_bar_t of the rows where it is known for alpha (NaN elsewhere), taken by a
  // shrink before the first outer step instead of being computed; out, G_bar_t of the rows
  // where it is known at the end (shrunk then, or un-shrunk by the final check), NaN elsewhere.
  double* gbar_io = nullptr;
};

struct Result {
  i64 outer = 0, steps = 0;
  int status = STATUS_CONVERGED;
  i64 evals = 0, rebuilds = 0;
  double min_curv = std::numeric_limits<double>::infinity();  // Subproblem::min_curv, over all
  double objective = std::numeric_limits<double>::quiet_NaN();  // f(alpha) tracked (NaN: not)
};

// The batched loop on the cache Kc (n_slots slots of ld >= n entries of T; for KIND_MATRIX, Q
// itself). State: the compacted active variables, the shrunk rows' data and G_bar, the column
// slots, the working set and the subproblem's arrays.
template <class T>
class BatchedSolver {
 public:
  BatchedSolver(const Problem& pr, const Settings& st, T* Kc, long n_slots, long ld,
                double* trace, long trace_len, PyObject* report)
      : P(pr), S(st), n(pr.kd.n), p(pr.kd.p), Kc(Kc), n_slots(n_slots), ld(ld), trace(trace),
        trace_len(trace_len), rep(report, st.report_every),
        track(st.track || st.verbose || rep.on()) {}

  Result run();

 private:
  const Problem& P;
  const Settings& S;
  const long n, p;
  T* Kc;
  const long n_slots, ld;
  double* trace;  // trace_len rows of (pair steps, violation, seconds, f(alpha) or NaN)
  const long trace_len;
  Reporter rep;
  const bool track;
  double fval = std::numeric_limits<double>::quiet_NaN();
  const bool matrix = P.kd.kind == KIND_MATRIX;

  ColumnSlots cache;
  // active variables, compacted (index k <-> row act[k])
  std::vector<i64> act;
  std::vector<double> XTa, sa, ya, la, ua, ca, qda, aa, ba, ga;
  KernelData kda;
  // shrunk rows: their data, and G_bar
  std::vector<i64> inact;
  std::vector<double> XTi, sqi, yI, bI;
  std::vector<double> gbar;
  std::vector<i64> gbar_at;  // gbar[t] valid while gbar_at[t] == the outer step
  // working set and subproblem
  std::vector<i64> W, W_prev, need, need_slot, sl, tc, fresh;
  std::vector<double> d, tdc, Qw, yw, aw, bw, gw, low, upw, cw, qdw, hw, XWT, sqw, kup, klow;
  std::vector<T> wcol;
  std::vector<char> in_w, moved;
  std::vector<i64> up_list, low_list;
  long nw = 0;

  long n_act() const { return static_cast<long>(act.size()); }
  void print(nb::tuple args) const;
  void gather();
  void scatter();
  void extremes(double& gmax, double& gmin) const;
  long shrink_mask(double gmax, double gmin, std::vector<char>& keep) const;
  void take_next(const std::vector<i64>& list, size_t& pos);
  void select(long n_keep, double& gmax, double& gmin);
  i64 free_of(bool use_cache, const std::vector<i64>& rows, double* out, std::vector<i64>& fidx,
              std::vector<double>& fval);
  void compact_cache(const std::vector<i64>& newpos, const std::vector<i64>& kpos);
  i64 shrunk_gradient();
  i64 unshrink(i64 stamp);
  i64 shrink(const std::vector<char>& keepm, i64 stamp);
  KernelData rows_data(const std::vector<double>& XTr, const std::vector<double>& sqr,
                       const std::vector<double>& yr) const {
    KernelData k = P.kd;
    k.XT = XTr.data();
    k.n = static_cast<long>(yr.size());
    k.sqn = sqr.data();
    k.y = yr.data();
    return k;
  }
  void rows_of(const std::vector<i64>& rows, std::vector<double>& XTr, std::vector<double>& sqr,
               std::vector<double>& yr) const;
};

// A verbose line: the items joined by spaces as Python's print would, sent to
// solvers.progress.verbose_line (with the GIL, which the loop otherwise runs without).
template <class T>
void BatchedSolver<T>::print(nb::tuple args) const {
  std::string line;
  for (size_t k = 0; k < args.size(); ++k) {
    if (k > 0) line += ' ';
    PyObject* text = PyObject_Str(PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(k)));
    const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    if (utf8 != nullptr) line += utf8;
    else PyErr_Clear();
    Py_XDECREF(text);
  }
  verbose_text(line);
}

// XTr (p x |rows|), sqn and y on the given rows.
template <class T>
void BatchedSolver<T>::rows_of(const std::vector<i64>& rows, std::vector<double>& XTr,
                               std::vector<double>& sqr, std::vector<double>& yr) const {
  const long m = static_cast<long>(rows.size());
  XTr.resize(static_cast<size_t>(p * m));
  sqr.resize(static_cast<size_t>(m));
  yr.resize(static_cast<size_t>(m));
  for (long r = 0; r < p; ++r) {
    const double* src = P.kd.XT + r * n;
    double* dst = XTr.data() + r * m;
    for (long k = 0; k < m; ++k) dst[k] = src[rows[k]];
  }
  for (long k = 0; k < m; ++k) {
    sqr[k] = matrix ? 0.0 : P.kd.sqn[rows[k]];
    yr[k] = P.kd.y[rows[k]];
  }
}

// The per-variable arrays restricted to act, compacted.
template <class T>
void BatchedSolver<T>::gather() {
  const long m = n_act();
  rows_of(act, XTa, sa, ya);
  for (auto* v : {&la, &ua, &ca, &qda, &aa, &ba, &ga}) v->resize(static_cast<size_t>(m));
  for (long k = 0; k < m; ++k) {
    const i64 t = act[k];
    la[k] = P.lo[t];
    ua[k] = P.up[t];
    ca[k] = P.cent[t];
    qda[k] = P.qd[t];
    aa[k] = P.alpha[t];
    ba[k] = P.beta[t];
    ga[k] = P.grad[t];
  }
  kda = rows_data(XTa, sa, ya);
}

// Write the active variables' alpha, beta, grad back to the full arrays.
template <class T>
void BatchedSolver<T>::scatter() {
  for (long k = 0; k < n_act(); ++k) {
    const i64 t = act[k];
    P.alpha[t] = aa[k];
    P.beta[t] = ba[k];
    P.grad[t] = ga[k];
  }
}

// (max_{I_up} m, min_{I_low} m) over the active variables.
template <class T>
void BatchedSolver<T>::extremes(double& gmax, double& gmin) const {
  gmax = -INF;
  gmin = INF;
  for (long k = 0; k < n_act(); ++k) {
    const double m = -ya[k] * ga[k];
    if (in_up(ya[k], aa[k], la[k], ua[k])) gmax = std::max(gmax, m);
    if (in_low(ya[k], aa[k], la[k], ua[k])) gmin = std::min(gmin, m);
  }
}

// LIBSVM's rule: keep[k] = 0 for k in I_up only with m_k < gmin, in I_low only with m_k > gmax,
// or in neither. Returns the number kept.
template <class T>
long BatchedSolver<T>::shrink_mask(double gmax, double gmin, std::vector<char>& keep) const {
  long cnt = 0;
  keep.resize(static_cast<size_t>(n_act()));
  for (long k = 0; k < n_act(); ++k) {
    const bool drop = shrinkable(ya[k], aa[k], la[k], ua[k], -ya[k] * ga[k], gmax, gmin);
    keep[k] = !drop;
    cnt += drop ? 0 : 1;
  }
  return cnt;
}

// Append to W the next entry of list from pos on that is not in W yet.
template <class T>
void BatchedSolver<T>::take_next(const std::vector<i64>& list, size_t& pos) {
  while (pos < list.size() && in_w[list[pos]]) ++pos;
  if (pos < list.size()) {
    W[nw++] = list[pos];
    in_w[list[pos]] = 1;
    ++pos;
  }
}

// Refill W[n_keep:q] from the ranked violators (W[:n_keep] stay): alternately the next largest
// m_t in I_up and the next smallest in I_low (each list ranks its 2 (q - n_keep) + n_keep best,
// enough whatever W already holds). gmax / gmin = max_{I_up} m, min_{I_low} m.
template <class T>
void BatchedSolver<T>::select(long n_keep, double& gmax, double& gmin) {
  const long m_act = n_act();
  gmax = -INF;
  gmin = INF;
  for (long t = 0; t < m_act; ++t) {
    const double m = -ya[t] * ga[t];
    kup[t] = -INF;
    klow[t] = -INF;
    if (in_up(ya[t], aa[t], la[t], ua[t])) {
      kup[t] = m;
      gmax = std::max(gmax, m);
    }
    if (in_low(ya[t], aa[t], la[t], ua[t])) {
      klow[t] = -m;
      gmin = std::min(gmin, m);
    }
  }
  const long q = S.q;
  const long need_n = q - n_keep;
  for (long k = 0; k < n_keep; ++k) in_w[W[k]] = 1;
  ranked(kup.data(), m_act, 2 * need_n + n_keep, up_list);
  ranked(klow.data(), m_act, 2 * need_n + n_keep, low_list);
  nw = n_keep;
  size_t pu = 0, pl = 0;
  while (nw < q && (pu < up_list.size() || pl < low_list.size())) {
    take_next(up_list, pu);
    if (nw < q) take_next(low_list, pl);
  }
  for (long k = 0; k < nw; ++k) in_w[W[k]] = 0;
}

// The free active variables l < alpha < u as (rows, alpha) in fidx / fval; those whose column is
// cached (use_cache) are not returned: out[r] -= alpha_s Q_{rows[r], s} is taken from the cache
// instead (rows: active positions). Returns |fidx|.
template <class T>
i64 BatchedSolver<T>::free_of(bool use_cache, const std::vector<i64>& rows, double* out,
                              std::vector<i64>& fidx, std::vector<double>& fval) {
  fidx.clear();
  fval.clear();
  for (long k = 0; k < n_act(); ++k) {
    if (la[k] < aa[k] && aa[k] < ua[k]) {
      const i64 s = use_cache ? cache.slot_of[k] : -1;
      if (s >= 0) {
        const T* col = Kc + s * ld;
        for (size_t r = 0; r < rows.size(); ++r) out[r] -= aa[k] * col[rows[r]];
      } else {
        fidx.push_back(act[k]);
        fval.push_back(aa[k]);
      }
    }
  }
  return static_cast<i64>(fidx.size());
}

// Keep the cached columns of the variables that stay active, on the rows that stay active
// (kpos: ascending old positions; col[k] = col[kpos[k]] in place, a forward copy since
// kpos[k] >= k); evict the others; renumber slot_of / col_in by newpos (-1: dropped).
template <class T>
void BatchedSolver<T>::compact_cache(const std::vector<i64>& newpos, const std::vector<i64>& kpos) {
  const long m = static_cast<long>(kpos.size());
  long kept = 0;  // columns copied, m entries each
  for (long s = 0; s < n_slots; ++s) {
    const i64 c = cache.col_in[s];
    kept += (c >= 0 && newpos[c] >= 0) ? 1 : 0;
  }
#pragma omp parallel for schedule(static) if (worth_parallel(static_cast<double>(kept) * m))
  for (long s = 0; s < n_slots; ++s) {
    const i64 c = cache.col_in[s];
    if (c >= 0 && newpos[c] >= 0) {
      T* col = Kc + s * ld;
      for (long k = 0; k < m; ++k) col[k] = col[kpos[k]];
    }
  }
  std::fill(cache.slot_of.begin(), cache.slot_of.end(), -1);
  for (long s = 0; s < n_slots; ++s) {
    const i64 c = cache.col_in[s];
    if (c >= 0 && newpos[c] >= 0) {
      cache.col_in[s] = newpos[c];
      cache.slot_of[newpos[c]] = s;
    } else {
      cache.col_in[s] = -1;
      cache.tick[s] = 0;
    }
  }
}

// G_t = G_bar_t + p_t [+ h'_t] + sum_{free s} alpha_s Q_ts for the shrunk rows t (the active
// alpha already written back). Returns the kernel entries computed.
template <class T>
i64 BatchedSolver<T>::shrunk_gradient() {
  const long m = static_cast<long>(inact.size());
  if (m == 0) return 0;
  std::vector<double> out(bI);
  for (long r = 0; r < m; ++r) {
    const i64 t = inact[r];
    out[r] += P.lin[t] + (P.ent ? hp(P.alpha[t], P.beta[t]) : 0.0);
  }
  std::vector<i64> fidx;
  std::vector<double> fval;
  const i64 nf = free_of(false, {}, out.data(), fidx, fval);  // shrunk rows are in no column
  rows_times(rows_data(XTi, sqi, yI), P.kd, fidx.data(), fval.data(), nf, out.data());
  for (long r = 0; r < m; ++r) P.grad[inact[r]] = out[r];
  return nf * m;
}

// Every variable active again: alpha / beta / grad written back, the shrunk rows' gradient
// rebuilt, W renumbered to rows, the cache emptied (its columns lack the shrunk rows). The shrunk
// rows' G_bar is kept in gbar (valid while gbar_at == stamp, for a shrink right after). The
// caller resets act and the inactive set. Returns the kernel entries computed.
template <class T>
i64 BatchedSolver<T>::unshrink(i64 stamp) {
  scatter();
  const i64 evals = shrunk_gradient();
  for (size_t r = 0; r < inact.size(); ++r) {
    gbar[inact[r]] = bI[r];
    gbar_at[inact[r]] = stamp;
  }
  for (long k = 0; k < nw; ++k) W[k] = act[W[k]];
  std::fill(cache.slot_of.begin(), cache.slot_of.end(), -1);
  std::fill(cache.col_in.begin(), cache.col_in.end(), -1);
  std::fill(cache.tick.begin(), cache.tick.end(), 0);
  return evals;
}

// Drop the active variables with keepm 0. Their G_bar is G_t - p_t [- h'_t] -
// sum_{free s} alpha_s Q_ts (free x dropped kernel entries; cached columns read); rows whose
// G_bar is still known (gbar_at == stamp: shrunk until the un-shrink just before) take it from
// gbar. Cached columns of the kept variables are compacted to the kept rows, W renumbered.
// Updates act / inact and their data (the caller gathers). Returns the kernel entries computed.
template <class T>
i64 BatchedSolver<T>::shrink(const std::vector<char>& keepm, i64 stamp) {
  scatter();
  const long na = n_act();
  std::vector<i64> newpos(static_cast<size_t>(na)), kept, dropped;
  long n_keep = 0;
  for (long k = 0; k < na; ++k) {
    newpos[k] = keepm[k] ? n_keep : -1;
    n_keep += keepm[k] ? 1 : 0;
  }
  for (long k = 0; k < na; ++k) (keepm[k] ? kept : dropped).push_back(act[k]);
  const long m = static_cast<long>(dropped.size());
  std::vector<double> out(static_cast<size_t>(m));
  std::vector<i64> fresh_r;  // positions in dropped whose G_bar is computed
  for (long r = 0; r < m; ++r) {
    const i64 t = dropped[r];
    if (gbar_at[t] == stamp)
      out[r] = gbar[t];
    else
      fresh_r.push_back(r);
  }
  const long m_new = static_cast<long>(fresh_r.size());
  std::vector<i64> rows(static_cast<size_t>(m_new)), dpos(static_cast<size_t>(m_new));
  for (long r = 0; r < m_new; ++r) rows[r] = dropped[fresh_r[r]];
  for (long k = 0, r = 0; k < na; ++k)  // their positions in the active set (rows ascend in act)
    if (r < m_new && act[k] == rows[r]) dpos[r++] = k;
  std::vector<double> part(static_cast<size_t>(m_new));
  for (long r = 0; r < m_new; ++r) {
    const i64 t = rows[r];
    part[r] = P.grad[t] - P.lin[t] - (P.ent ? hp(P.alpha[t], P.beta[t]) : 0.0);
  }
  std::vector<i64> fidx;
  std::vector<double> fval;
  const i64 nf = free_of(true, dpos, part.data(), fidx, fval);  // cached columns done
  for (auto& v : fval) v = -v;
  std::vector<double> XTr, sqr, yr;
  rows_of(rows, XTr, sqr, yr);
  rows_times(rows_data(XTr, sqr, yr), P.kd, fidx.data(), fval.data(), nf, part.data());
  for (long r = 0; r < m_new; ++r) out[fresh_r[r]] = part[r];
  std::vector<i64> kpos(static_cast<size_t>(n_keep));
  for (long k = 0; k < na; ++k)
    if (keepm[k]) kpos[newpos[k]] = k;
  compact_cache(newpos, kpos);
  long k2 = 0;
  for (long k = 0; k < nw; ++k)
    if (keepm[W[k]]) W[k2++] = newpos[W[k]];
  nw = k2;
  inact.insert(inact.end(), dropped.begin(), dropped.end());
  rows_of(inact, XTi, sqi, yI);
  bI.insert(bI.end(), out.begin(), out.end());
  act = std::move(kept);
  return nf * m_new;
}

template <class T>
Result BatchedSolver<T>::run() {
  const long q = S.q;
  const bool shrinking = S.shrink_every > 0 && !matrix;
  const bool ent = P.ent;
  cache.slot_of.assign(static_cast<size_t>(n), -1);
  cache.col_in.assign(static_cast<size_t>(n_slots), -1);
  cache.tick.assign(static_cast<size_t>(n_slots), 0);
  if (matrix)  // the cache is Q itself
    for (long t = 0; t < n; ++t) cache.slot_of[t] = cache.col_in[t] = t;
  in_w.assign(n, 0);
  moved.assign(n, 0);
  fresh.assign(n, -1);  // fresh[t] == outer: t's column is new in this outer step
  wcol.resize(q);
  XWT.resize(static_cast<size_t>(p * q));
  sqw.resize(q);
  kup.resize(n);
  klow.resize(n);
  for (auto* v : {&W, &W_prev, &need, &need_slot, &sl, &tc}) v->resize(q);
  for (auto* v : {&d, &tdc, &yw, &aw, &bw, &gw, &low, &upw, &cw, &qdw}) v->resize(q);
  hw.assign(q, 0.0);
  Qw.resize(static_cast<size_t>(q * q));
  act.resize(n);
  for (long t = 0; t < n; ++t) act[t] = t;
  gather();
  gbar.assign(n, 0.0);
  gbar_at.assign(n, -1);
  if (P.gbar_io && shrinking)  // known at the start: as if un-shrunk at stamp 0 (outer 0)
    for (long t = 0; t < n; ++t)
      if (std::isfinite(P.gbar_io[t])) {
        gbar[t] = P.gbar_io[t];
        gbar_at[t] = 0;
      }
  if (track) {  // f(alpha) from the complete gradient at the start; each step adds its change
    fval = 0.0;
    for (long t = 0; t < n; ++t) {
      const double a = P.alpha[t];
      double g = P.grad[t] - P.lin[t];
      if (ent) {
        g -= hp(a, P.beta[t]);
        fval += entropy_value(a, P.beta[t], P.cent[t]);
      }
      fval += 0.5 * a * g + P.lin[t] * a;
    }
  }
  bool unshrunk = S.resume, rebuild = false;
  i64 last_check = 0, evals_bar = 0;
  Result res;
  i64& outer = res.outer;
  i64& steps = res.steps;
  i64& evals = res.evals;
  std::vector<char> keepm;
  const i64 check_every = std::min<i64>(n, S.shrink_every);
  if (S.resume) last_check = -check_every;
  for (;;) {
    double gmax = -INF, gmin = INF;
    const bool check = shrinking && steps - last_check >= check_every;
    if (check) {
      last_check = steps;
      extremes(gmax, gmin);
      if (!unshrunk && gmax - gmin <= 10.0 * S.tol) {  // LIBSVM's early un-shrink
        unshrunk = true;
        rebuild = n_act() < n;
      }
    }
    if (rebuild) {
      rebuild = false;
      const i64 e0 = evals;
      evals += unshrink(outer);
      ++res.rebuilds;
      if (S.verbose) {
        nb::gil_scoped_acquire gil;
        print(nb::make_tuple("smo: un-shrink at pair step", steps, "kernel entries", evals - e0));
      }
      act.resize(n);
      for (long t = 0; t < n; ++t) act[t] = t;
      inact.clear();
      XTi.clear();
      sqi.clear();
      yI.clear();
      bI.clear();
      gather();
    }
    if (check) {
      const long na = n_act();
      const long cnt = shrink_mask(gmax, gmin, keepm);
      if (static_cast<double>(na - cnt) >= std::max(1.0, S.min_drop * na)) {
        const i64 e = shrink(keepm, outer);
        evals += e;
        if (S.verbose) {
          nb::gil_scoped_acquire gil;
          print(nb::make_tuple("smo: shrink at pair step", steps, "active", na, "->", n_act(),
                               "kernel entries", e));
        }
        gather();
      }
    }
    const long na = n_act();
    const long keep = outer > 0 ? std::min<long>(S.n_keep, nw) : 0;
    for (long k = 0; k < keep; ++k) W_prev[k] = W[nw - keep + k];  // the newest stay, in front
    for (long k = 0; k < keep; ++k) W[k] = W_prev[k];
    select(keep, gmax, gmin);
    if (outer < trace_len) {
      trace[4 * outer] = static_cast<double>(steps);
      trace[4 * outer + 1] = gmax - gmin;
      trace[4 * outer + 2] = rep.seconds();
      trace[4 * outer + 3] = fval;
    }
    if (rep.maybe(steps, fval, gmax - gmin, na)) {
      res.status = STATUS_INTERRUPTED;  // a second Ctrl-C during the report
      break;
    }
    if (S.gap_scale > 0.0 && outer % GAP_EVERY == 0 && outer > 0 && na == n &&
        gmax - gmin > S.tol) {
      const KlrArrays ka{n, ya.data(), aa.data(), ba.data(), ga.data(), P.lin, la.data(),
                         ua.data(), ca.data()};
      if (klr_gap_stop(ka, 0.5 * (gmax + gmin),
                       GapTarget{S.gap_scale, S.gap_rel, S.gap_sol, S.gap_wfloor})) {
        res.status = STATUS_GAP;
        break;
      }
    }
    if (gmax - gmin <= S.tol) {
      if (na < n) {  // the final un-shrink check: re-select on all variables
        rebuild = true;
        last_check = steps;
        continue;
      }
      break;
    }
    if (steps >= S.max_iter) {
      res.status = STATUS_ITERATION_LIMIT;
      break;
    }
    if (outer % SIGNAL_EVERY == 0 && outer > 0 && optmodels::stop_requested()) {
      res.status = STATUS_INTERRUPTED;  // Ctrl-C (signals.hpp): the current point is returned
      break;
    }
    ++outer;
    if (S.verbose && outer % 200 == 0) {
      nb::gil_scoped_acquire gil;
      print(nb::make_tuple("smo: working set", q, "outer step", outer, "pair steps", steps,
                           "violation", gmax - gmin, "active", na, "objective", fval, "time",
                           rep.seconds()));
    }
    const long cnt = cache_columns(W.data(), nw, cache, need.data(), need_slot.data());
    for (long k = 0; k < cnt; ++k) fresh[need[k]] = outer;
    for (long k = 0; k < nw; ++k) {
      const i64 t = W[k];
      sl[k] = cache.slot_of[t];
      yw[k] = ya[t], aw[k] = aa[t], bw[k] = ba[t], gw[k] = ga[t];
      low[k] = la[t], upw[k] = ua[t], cw[k] = ca[t], qdw[k] = qda[t];
      if (ent) hw[k] = hpp(aa[t], ba[t]);
    }
    evals += block_ww<T>(kda, yw.data(), W.data(), nw, sl.data(), fresh.data(), outer, Kc, ld,
                         Qw.data(), nw, XWT.data(), q, sqw.data(), wcol.data());
    Subproblem sub{Qw.data(), nw, nw, yw.data(), aw.data(), bw.data(), gw.data(), low.data(),
                   upw.data(), cw.data(), qdw.data(), hw.data(), ent};
    const double stop = std::max(S.tol, S.inner_factor * (gmax - gmin));
    const i64 cap = std::min(S.inner_steps, S.max_iter - steps);
    const auto [s, stalled] = sub.solve(stop, cap);
    (void)stalled;
    res.min_curv = std::min(res.min_curv, sub.min_curv);
    steps += s;
    if (track) {  // f's change: d'(g_old + g_new) / 2 on W (g = G - h'), plus h's change
      double df = 0.0;
      for (long k = 0; k < nw; ++k) {
        const i64 t = W[k];
        const double dk = aw[k] - aa[t];
        if (dk == 0.0 && (!ent || bw[k] == ba[t])) continue;
        double g_old = ga[t], g_new = gw[k];
        if (ent) {
          g_old -= hp(aa[t], ba[t]);
          g_new -= hp(aw[k], bw[k]);
          df += entropy_value(aw[k], bw[k], ca[t]) - entropy_value(aa[t], ba[t], ca[t]);
        }
        df += 0.5 * dk * (g_old + g_new);
      }
      fval += df;
    }
    long nnz = 0, ntc = 0;
    for (long k = 0; k < nw; ++k) {
      const i64 t = W[k];
      const double dk = aw[k] - aa[t];
      if (dk != 0.0) {
        d[nnz] = dk;
        sl[nnz] = cache.slot_of[t];
        ++nnz;
        moved[t] = 1;
        const double dc = bound_part(aw[k], low[k], upw[k]) - bound_part(aa[t], la[t], ua[t]);
        if (dc != 0.0) {
          tc[ntc] = act[t];
          tdc[ntc] = dc;
          ++ntc;
        }
      }
    }
    const long nfill = keep_moved(need.data(), need_slot.data(), cnt, moved, cache);
    for (long k = 0; k < nw; ++k) moved[W[k]] = 0;
    if (nfill > 0 || nnz > 0) {  // the new columns, and G += Q_:W d, in one pass
      fill_and_update<T>(kda, need.data(), need_slot.data(), nfill, Kc, ld, ga.data(), sl.data(),
                         d.data(), nnz);
      evals += static_cast<i64>(nfill) * na;
    }
    if (ntc > 0 && !inact.empty()) {  // G_bar of the shrunk rows
      const i64 m = static_cast<i64>(inact.size());
      rows_times(rows_data(XTi, sqi, yI), P.kd, tc.data(), tdc.data(), ntc, bI.data());
      evals += ntc * m;
      evals_bar += ntc * m;
    }
    for (long k = 0; k < nw; ++k) {
      const i64 t = W[k];
      if (ent) {
        ga[t] += hp(aw[k], bw[k]) - hp(aa[t], ba[t]);
        ba[t] = bw[k];
      }
      aa[t] = aw[k];
    }
    if (s == 0) {
      res.status = STATUS_STALLED;
      break;
    }
  }
  if (S.verbose && shrinking) {
    nb::gil_scoped_acquire gil;
    print(nb::make_tuple("smo: kernel entries", evals, "of which G_bar updates", evals_bar));
  }
  scatter();
  if (P.gbar_io) {  // G_bar where known for the final alpha: un-shrunk since the last step
    for (long t = 0; t < n; ++t)
      P.gbar_io[t] = shrinking && gbar_at[t] == outer ? gbar[t] : std::numeric_limits<double>::quiet_NaN();
    for (size_t r = 0; r < inact.size(); ++r) P.gbar_io[inact[r]] = bI[r];  // or shrunk now
  }
  if (n_act() < n) {
    evals += shrunk_gradient();
    ++res.rebuilds;
  }
  res.objective = fval;
  return res;
}

}  // namespace batched
}  // namespace optmodels

// ---------------------------------------------------------------- bindings
namespace {
using namespace optmodels;
using namespace optmodels::batched;
template <class T, class... Extra>
using Arr = nb::ndarray<T, nb::c_contig, nb::device::cpu, Extra...>;
using Vec = Arr<const double, nb::ndim<1>>;
using VecOut = Arr<double, nb::ndim<1>>;
using IVec = Arr<const i64, nb::ndim<1>>;
using Mat = Arr<const double, nb::ndim<2>>;

KernelData kernel_data(int kind, const Mat& XT, const Vec& sqn, double gamma, double coef0,
                       double degree, const Vec& y) {
  KernelData kd;
  kd.kind = kind;
  kd.XT = XT.data();
  kd.p = kind == KIND_MATRIX ? 0 : static_cast<long>(XT.shape(0));
  kd.n = static_cast<long>(y.shape(0));
  kd.sqn = sqn.data();
  kd.gamma = gamma;
  kd.coef0 = coef0;
  kd.degree = degree;
  kd.y = y.data();
  return kd;
}

template <class T>
std::tuple<i64, i64, int, i64, i64, double, double> batched_loop(int kind, Mat XT, Vec sqn, double gamma,
                                                 double coef0, double degree, Vec y, Vec lo,
                                                 Vec up, Vec lin, Vec cent, Vec qd, bool ent,
                                                 VecOut alpha, VecOut beta, VecOut grad,
                                                 Arr<T, nb::ndim<2>> Kc,
                                                 Arr<double, nb::ndim<2>> trace,
                                                 const Settings& settings, nb::object report,
                                                 std::optional<VecOut> gbar) {
  if (trace.shape(1) != 4) throw std::invalid_argument("trace must have 4 columns");
  if (gbar && gbar->shape(0) != y.shape(0)) throw std::invalid_argument("gbar must have length n");
  Problem pr{kernel_data(kind, XT, sqn, gamma, coef0, degree, y), lo.data(), up.data(), lin.data(),
             cent.data(), qd.data(), ent, alpha.data(), beta.data(), grad.data(),
             gbar ? gbar->data() : nullptr};
  BatchedSolver<T> solver(pr, settings, Kc.data(), static_cast<long>(Kc.shape(0)),
                          static_cast<long>(Kc.shape(1)), trace.data(),
                          static_cast<long>(trace.shape(0)), report.ptr());
  Result r;
  {
    nb::gil_scoped_release release;
    r = solver.run();
  }
  return {r.outer, r.steps, r.status, r.evals, r.rebuilds, r.min_curv, r.objective};
}

template <class T>
void fill_and_update_py(int kind, Mat XT, Vec sqn, double gamma, double coef0, double degree,
                        Vec y, IVec cols, IVec slots, long nfill, Arr<T, nb::ndim<2>> Kc,
                        VecOut grad, IVec gslots, Vec d, long nnz) {
  const KernelData kd = kernel_data(kind, XT, sqn, gamma, coef0, degree, y);
  nb::gil_scoped_release release;
  fill_and_update<T>(kd, cols.data(), slots.data(), nfill, Kc.data(),
                     static_cast<long>(Kc.shape(1)), grad.data(), gslots.data(), d.data(), nnz);
}

template <class T>
i64 block_ww_py(int kind, Mat XT, Vec sqn, double gamma, double coef0, double degree, Vec yw,
                IVec W, long nw, IVec sl, IVec fresh, i64 outer, Arr<const T, nb::ndim<2>> Kc,
                Arr<double, nb::ndim<2>> Qw, Arr<double, nb::ndim<2>> XWT, VecOut sqw,
                Arr<T, nb::ndim<1>> wcol) {
  KernelData kd = kernel_data(kind, XT, sqn, gamma, coef0, degree, yw);
  kd.n = static_cast<long>(XT.shape(1));
  return block_ww<T>(kd, yw.data(), W.data(), nw, sl.data(), fresh.data(), outer, Kc.data(),
                     static_cast<long>(Kc.shape(1)), Qw.data(), static_cast<long>(Qw.shape(1)),
                     XWT.data(), static_cast<long>(XWT.shape(1)), sqw.data(), wcol.data());
}

nb::ndarray<nb::numpy, i64, nb::ndim<1>> ranked_py(Vec key, long k) {
  std::vector<i64> out;
  ranked(key.data(), static_cast<long>(key.shape(0)), k, out);
  auto* buf = new i64[out.size()];
  std::copy(out.begin(), out.end(), buf);
  nb::capsule owner(buf, [](void* p) noexcept { delete[] static_cast<i64*>(p); });
  return nb::ndarray<nb::numpy, i64, nb::ndim<1>>(buf, {out.size()}, owner);
}

template <class T>
void bind_typed(nb::module_& m) {
  using namespace nb::literals;
  m.def("batched_loop", &batched_loop<T>, "kind"_a, "XT"_a, "sqn"_a, "gamma"_a, "coef0"_a,
        "degree"_a, "y"_a, "lo"_a, "up"_a, "lin"_a, "cent"_a, "qd"_a, "ent"_a,
        "alpha"_a.noconvert(), "beta"_a.noconvert(), "grad"_a.noconvert(), "Kc"_a.noconvert(),
        "trace"_a.noconvert(), "settings"_a, "report"_a.none() = nb::none(),
        "gbar"_a.noconvert().none() = nb::none());
  m.def("fill_and_update", &fill_and_update_py<T>, "kind"_a, "XT"_a, "sqn"_a, "gamma"_a,
        "coef0"_a, "degree"_a, "y"_a, "cols"_a, "slots"_a, "nfill"_a, "Kc"_a.noconvert(),
        "grad"_a.noconvert(), "gslots"_a, "d"_a, "nnz"_a);
  m.def("block_ww", &block_ww_py<T>, "kind"_a, "XT"_a, "sqn"_a, "gamma"_a, "coef0"_a,
        "degree"_a, "yw"_a, "W"_a, "nw"_a, "sl"_a, "fresh"_a, "outer"_a, "Kc"_a.noconvert(),
        "Qw"_a.noconvert(), "XWT"_a.noconvert(), "sqw"_a.noconvert(), "wcol"_a.noconvert());
}
}  // namespace

NB_MODULE(_batched, m) {
  using namespace nb::literals;
  m.doc() = "optmodels compiled core: the batched working-set SMO (solvers/smo/batched.py)";
  nb::class_<Settings>(m, "Settings", "Scalar options of batched_loop (see solve_dual_batched).")
      .def(nb::init<>())
      .def_rw("tol", &Settings::tol)
      .def_rw("max_iter", &Settings::max_iter)
      .def_rw("q", &Settings::q)
      .def_rw("n_keep", &Settings::n_keep)
      .def_rw("inner_factor", &Settings::inner_factor)
      .def_rw("inner_steps", &Settings::inner_steps)
      .def_rw("shrink_every", &Settings::shrink_every)
      .def_rw("min_drop", &Settings::min_drop)
      .def_rw("verbose", &Settings::verbose)
      .def_rw("gap_scale", &Settings::gap_scale)
      .def_rw("gap_rel", &Settings::gap_rel)
      .def_rw("gap_sol", &Settings::gap_sol)
      .def_rw("gap_wfloor", &Settings::gap_wfloor)
      .def_rw("report_every", &Settings::report_every)
      .def_rw("track", &Settings::track)
      .def_rw("resume", &Settings::resume);
  bind_typed<double>(m);
  bind_typed<float>(m);
  m.def("ranked", &ranked_py, "key"_a, "k"_a,
        "Indices of the (at most) k largest keys above -inf, largest first (ties by index).");
  m.attr("ROW_BLOCK") = ROW_BLOCK;
  m.attr("PARALLEL_WORK") = PARALLEL_WORK;
  m.attr("GAP_EVERY") = GAP_EVERY;
}

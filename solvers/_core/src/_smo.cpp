// The pairwise SMO solver (after LIBSVM's Solver) and its kernel-column cache (LIBSVM's Cache +
// Kernel), ported from the numba loop of solvers/smo/core.py with the same steps.
//
// Problem (dual_terms.hpp states h, p, the box and the index sets):
//
//     min_alpha  1/2 alpha' Q alpha + p' alpha + sum_i h_i(alpha_i)
//     s.t.       y' alpha = 0,   l <= alpha <= u,          Q_ij = y_i y_j k(x_i, x_j)
//
// Gradient G = Q alpha + p + h'(alpha), m_t = -y_t G_t.
// * Working set (Fan, Chen & Lin 2005): i = argmax_{I_up} m_t; j = argmin over t in I_low with
//   m_t < m_i of -(m_i - m_t)^2 / a_it, a_it = Q_ii + Q_tt - 2 y_i y_t Q_it [+ h_i'' + h_t''],
//   a_it <= 0 replaced by TAU. Stop when max_{I_up} m - min_{I_low} m <= tol.
// * Step along d = (+y_i at i, -y_j at j) (dual_terms.hpp: pair_values), then
//   G += dalpha_i Q_:i + dalpha_j Q_:j on the active rows (+ the change of h' at i, j).
// * Shrinking (LIBSVM): every min(n, 1000) iterations drop t in I_up only with m_t < min_{I_low} m
//   or in I_low only with m_t > max_{I_up} m. The first time the violation is <= 10 tol the
//   gradient is reconstructed and every variable re-enters; at the end likewise (the final
//   un-shrink check). G_bar = sum_{t at a bound} alpha_t Q_:t makes the reconstruction cost one
//   column per free variable.
// * Columns come from KernelColumns: an LRU cache of fixed-length slots (float32 or float64),
//   computed on the active rows only while shrunk and completed later (see KernelColumns::get).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <tuple>
#include <vector>

#include "optmodels/dual_terms.hpp"
#include "optmodels/kernel.hpp"
#include "optmodels/progress.hpp"
#include "optmodels/signals.hpp"

namespace nb = nanobind;
using std::int64_t;

namespace optmodels {

// Cost of a gathered entry (active rows by index) relative to a contiguous one: while more than
// n / GATHER_COST rows are active a missing column is computed whole (core.GATHER_COST).
constexpr double GATHER_COST = 2.5;
// Statuses of the loop (core.STATUS_*).
constexpr int STATUS_CONVERGED = 0, STATUS_ITERATION_LIMIT = 1, STATUS_STALLED = 2,
              STATUS_GAP = 3, STATUS_INTERRUPTED = 4, STATUS_TIME_LIMIT = 5;
// Pair steps between the gap checks (min(n, this)) and between the checks for Ctrl-C.
constexpr int64_t GAP_EVERY_PAIRS = 1000;
constexpr int64_t SIGNAL_EVERY = 1000;
constexpr int64_t CLOCK_EVERY = 16;

// ------------------------------------------------------------------ the column cache
// LIBSVM's Cache + Kernel: columns Q_:i in n_slots slots of length n (float32 or float64), the
// least recently used slot evicted on a miss; with KIND_MATRIX the whole Q is held instead.
//
// Shrinking generations: a column computed while shrunk holds only the active rows; sgen[s]
// is then the generation (count of gradient reconstructions) it was computed in, -1 when the
// column is complete. A column from the previous generation lacks at most the rows miss[]
// (inactive at the last reconstruction); within its own generation it lacks at most the rows
// shrunk since, inl[]. Only those rows are computed when it is needed again (LIBSVM likewise
// extends a cached column's length). Older partial columns are dropped at a reconstruction.
class KernelColumns {
 public:
  // Kernel columns: n_slots slots of length n.
  KernelColumns(int64_t n, int64_t n_slots, bool f32)
      : n_(n), n_slots_(n_slots), f32_(f32), slot_of_(n, -1), col_in_(n_slots, -1),
        sgen_(n_slots, -1), tick_(n_slots, 0), miss_(n, 0), inl_(n, 0) {
    // new T[] leaves the pages untouched (as numpy's empty): a 200 MB budget costs nothing
    // until columns are computed.
    if (f32)
      s32_.reset(new float[static_cast<size_t>(n) * n_slots]);
    else
      s64_.reset(new double[static_cast<size_t>(n) * n_slots]);
  }
  // The whole Q (KIND_MATRIX), kept alive by `owner`.
  KernelColumns(const double* q, int64_t n, nb::object owner)
      : n_(n), n_slots_(n), f32_(false), q_full_(q), q_owner_(std::move(owner)),
        slot_of_(n, -1), col_in_(n, -1), sgen_(n, -1), tick_(n, 0), miss_(n, 0), inl_(n, 0),
        kernel_set_(true) {  // (the bookkeeping stays unused but valid: one code path)
    kd_.kind = KIND_MATRIX;
    kd_.n = n;
    kd_.Q = q;
  }

  int64_t n() const { return n_; }
  int64_t n_slots() const { return n_slots_; }
  bool is_f32() const { return f32_; }
  bool is_matrix() const { return q_full_ != nullptr; }
  int64_t kernel_evals() const { return evals_; }
  int64_t generation() const { return generation_; }
  bool kernel_set() const { return kernel_set_; }

  // The data columns are computed from, for the next run (kept alive by the owner tuple).
  void set_kernel(const KernelData& kd, nb::object owner) {
    if (is_matrix()) return;
    kd_ = kd;
    kd_owner_ = std::move(owner);
    kernel_set_ = true;
  }

  template <class T>
  T* slot(int64_t s);

  // Column Q_:i, valid on the active rows act[0..n_act-1] (on all rows if need_full).
  template <class T>
  const T* get(int64_t i, bool need_full, const int64_t* act, int64_t n_act) {
    if (is_matrix()) return slot<T>(i);
    ++lru_;
    int64_t s = slot_of_[i];
    if (s >= 0) {
      if (sgen_[s] >= 0 && sgen_[s] < generation_) {  // previous generation: add the missing rows
        fill(kd_, i, miss_.data(), n_miss_, false, slot<T>(s));
        evals_ += n_miss_;
        sgen_[s] = -1;
      }
      if (sgen_[s] < 0 || !need_full) {
        tick_[s] = lru_;
        return slot<T>(s);
      }
      // this generation's partial column, needed in full: add the rows shrunk so far
      fill(kd_, i, inl_.data(), n_inl_, false, slot<T>(s));
      evals_ += n_inl_;
      sgen_[s] = -1;
      tick_[s] = lru_;
      return slot<T>(s);
    }
    s = lru_slot();
    if (col_in_[s] >= 0) slot_of_[col_in_[s]] = -1;
    col_in_[s] = i;
    slot_of_[i] = s;
    if (need_full || static_cast<double>(n_act) * GATHER_COST >= static_cast<double>(n_)) {
      // the whole column costs less than the gather (and is then complete)
      fill(kd_, i, miss_.data(), n_, true, slot<T>(s));
      sgen_[s] = -1;
      evals_ += n_;
    } else {
      fill(kd_, i, act, n_act, false, slot<T>(s));
      sgen_[s] = generation_;
      evals_ += n_act;
    }
    tick_[s] = lru_;
    return slot<T>(s);
  }

  // Column t on the rows act[0..n_act-1] only, without caching it, into `scratch` (the
  // reconstruction's rows of Q of shrunk variables: rarely reused).
  template <class T>
  void compute_uncached(int64_t t, const int64_t* act, int64_t n_act, T* scratch) {
    fill(kd_, t, act, n_act, false, scratch);
    evals_ += n_act;
  }

  bool cached(int64_t t) const { return slot_of_[t] >= 0; }

  // A reconstruction made every variable active again: the partial columns of older
  // generations cannot be completed any more; this generation's lack the rows `inact`.
  void new_generation(const std::vector<int64_t>& inact) {
    for (int64_t s = 0; s < n_slots_; ++s) {
      if (col_in_[s] >= 0 && sgen_[s] >= 0 && sgen_[s] < generation_) {
        slot_of_[col_in_[s]] = -1;
        col_in_[s] = -1;
        tick_[s] = 0;
      }
    }
    std::copy(inact.begin(), inact.end(), miss_.begin());
    n_miss_ = static_cast<int64_t>(inact.size());
    ++generation_;
    n_inl_ = 0;
  }

  // Row t was shrunk in this generation.
  void shrunk(int64_t t) { inl_[n_inl_++] = t; }

 private:
  int64_t lru_slot() const {  // the least recently used slot (the first of equal ticks)
    int64_t s = 0;
    int64_t best = tick_[0];
    for (int64_t r = 1; r < n_slots_; ++r) {
      if (tick_[r] < best) {
        best = tick_[r];
        s = r;
      }
    }
    return s;
  }

  int64_t n_, n_slots_;
  bool f32_;
  std::unique_ptr<double[]> s64_;
  std::unique_ptr<float[]> s32_;
  const double* q_full_ = nullptr;
  nb::object q_owner_, kd_owner_;
  KernelData kd_;
  std::vector<int64_t> slot_of_, col_in_, sgen_, tick_, miss_, inl_;
  int64_t lru_ = 0, evals_ = 0, generation_ = 0, n_miss_ = 0, n_inl_ = 0;
  bool kernel_set_ = false;
};

template <>
double* KernelColumns::slot<double>(int64_t s) {
  return q_full_ ? const_cast<double*>(q_full_) + s * n_ : s64_.get() + s * n_;
}
template <>
float* KernelColumns::slot<float>(int64_t s) {
  return s32_.get() + s * n_;
}

// ------------------------------------------------------------------ the solver
// The problem's data (length n, read only); cent = C of the entropy terms (ent), qd = diag Q.
struct DualProblem {
  int64_t n;
  const double *y, *lo, *up, *lin, *cent, *qd;
  bool ent;
};

// The iterate, updated in place: alpha, beta = C - alpha (ent), G, G_bar.
struct DualState {
  double *alpha, *beta, *grad, *gbar;
  bool warm;  // gbar already holds G_bar for alpha (a continued run); else it is zero
};

struct SolverOptions {
  double tol = 1e-3;
  int64_t max_iter = 10000000;
  bool shrinking = true;
  bool verbose = false;
  double gap_scale = 0.0;  // > 0 (KLR): also stop on the gap estimate (klr_gap_stop)
  double gap_rel = 0.0;
  double gap_sol = 0.0;     // the stop's solution-rule share (dual_terms.hpp GapTarget; 0: none)
  double gap_wfloor = 0.0;  // 1 / q_max (GapTarget)
  double time_limit = 0.0;  // seconds, <= 0: none
  PyObject* report = nullptr;  // progress.hpp: Reporter's Python function, or None / null
  double report_every = 0.25;  // seconds between its calls
  bool track = false;          // keep f(alpha) up to date (the trace's objective, the reports)
  // The run resumes a converged one (a refinement round at a tighter tol): its final check
  // made every variable active and verified them all, so the first shrinking check comes
  // before the first step (not after min(n, 1000)) and there is no early un-shrink at 10 tol.
  bool resume = false;
};

// (iteration, violation on the active set, seconds since the start, f(alpha) or NaN when not
// tracked) at iterations spaced by a factor 1.25.
struct Trace {
  int64_t* it;
  double* v;
  double* t;
  double* f;
  int64_t len;
};

struct Outcome {
  int64_t iterations = 0, status = STATUS_CONVERGED, reconstructions = 0, kernel_evals = 0;
  // The most negative kernel curvature Q_ii + Q_tt - 2 y_i y_t Q_it (= K_ii + K_tt - 2 K_it)
  // the working-set scans met: < 0 proves K indefinite (v = e_i - e_t has v'Kv < 0); +inf if
  // no pair was scanned.
  double min_curvature = std::numeric_limits<double>::infinity();
  double objective = std::numeric_limits<double>::quiet_NaN();  // f(alpha), tracked (NaN: not)
};

template <class T>
class Solver {
 public:
  Solver(KernelColumns& cols, const DualProblem& pb, const DualState& st, const SolverOptions& opt,
         const Trace& trace)
      : cols_(cols), pb_(pb), st_(st), opt_(opt), trace_(trace), n_(pb.n), act_(pb.n),
        is_act_(pb.n, 1), hdd_(pb.n, 0.0) {
    std::iota(act_.begin(), act_.end(), int64_t{0});
    n_act_ = n_;
  }

  // Run SMO in place on alpha, beta, G (GIL released; taken back briefly for Ctrl-C and for
  // verbose output).
  Outcome run();

 private:
  double objective() const;
  void track_step(int64_t i, int64_t j, double ai_old, double aj_old, double bi_old,
                  double bj_old, double gi_old, double gj_old);
  const T* col(int64_t t, bool need_full) { return cols_.get<T>(t, need_full, act_.data(), n_act_); }
  double m(int64_t t) const { return -pb_.y[t] * st_.grad[t]; }
  bool up_set(int64_t t) const { return in_up(pb_.y[t], st_.alpha[t], pb_.lo[t], pb_.up[t]); }
  bool low_set(int64_t t) const { return in_low(pb_.y[t], st_.alpha[t], pb_.lo[t], pb_.up[t]); }
  bool free_var(int64_t t) const { return is_free(st_.alpha[t], pb_.lo[t], pb_.up[t]); }

  void init_gbar();
  void extremes(double& gmax, double& gmin) const;
  void shrink(double gmax, double gmin);
  void reconstruct();
  void grad_update(const T* ci, const T* cj, double dai, double daj);
  void gbar_update(int64_t t, double old);
  bool interrupted();
  bool out_of_time() const;

  KernelColumns& cols_;
  DualProblem pb_;
  DualState st_;
  SolverOptions opt_;
  Trace trace_;
  int64_t n_, n_act_;
  std::vector<int64_t> act_;  // active variables act_[0..n_act_-1]
  std::vector<char> is_act_;
  std::vector<double> hdd_;  // h''(alpha) (ent), else 0
  int64_t n_rebuild_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  Reporter rep_{opt_.report ? opt_.report : Py_None, opt_.report_every};
  double fval_ = std::numeric_limits<double>::quiet_NaN();  // f(alpha) when opt_.track
};

// f(alpha) = sum_t 1/2 alpha_t (G_t - p_t - h'_t) + p_t alpha_t + h_t from the gradient, which
// is complete at the start of a run (O(n); the loop then adds each step's change).
template <class T>
double Solver<T>::objective() const {
  double f = 0.0;
  for (int64_t t = 0; t < n_; ++t) {
    const double a = st_.alpha[t];
    double q = st_.grad[t] - pb_.lin[t];
    if (pb_.ent) {
      q -= hp(a, st_.beta[t]);
      f += entropy_value(a, st_.beta[t], pb_.cent[t]);
    }
    f += 0.5 * a * q + pb_.lin[t] * a;
  }
  return f;
}

// Add a pair step's change of f: the quadratic part changes by d'(g_old + g_new) / 2 exactly
// (g = Q alpha + p = G - h', linear in alpha; d is nonzero at i and j), the entropy by
// h(new) - h(old) at i and j. The gradient at i and j is already the new one.
template <class T>
void Solver<T>::track_step(int64_t i, int64_t j, double ai_old, double aj_old, double bi_old,
                           double bj_old, double gi_old, double gj_old) {
  const double* a = st_.alpha;
  const double* b = st_.beta;
  const double* g = st_.grad;
  double gi_new = g[i], gj_new = g[j];
  double dh = 0.0;
  if (pb_.ent) {
    gi_old -= hp(ai_old, bi_old);
    gj_old -= hp(aj_old, bj_old);
    gi_new -= hp(a[i], b[i]);
    gj_new -= hp(a[j], b[j]);
    dh = entropy_value(a[i], b[i], pb_.cent[i]) - entropy_value(ai_old, bi_old, pb_.cent[i]) +
         entropy_value(a[j], b[j], pb_.cent[j]) - entropy_value(aj_old, bj_old, pb_.cent[j]);
  }
  fval_ += 0.5 * ((a[i] - ai_old) * (gi_old + gi_new) + (a[j] - aj_old) * (gj_old + gj_new)) + dh;
}

// G_bar = sum over variables at a bound (alpha_t != 0) of alpha_t Q_:t, unless carried over.
template <class T>
void Solver<T>::init_gbar() {
  if (st_.warm) return;
  for (int64_t t = 0; t < n_; ++t) {
    const double a = st_.alpha[t];
    if (a != 0.0 && (a == pb_.lo[t] || a == pb_.up[t])) {
      const T* c = col(t, true);
      for (int64_t s = 0; s < n_; ++s) st_.gbar[s] += a * c[s];
    }
  }
}

// (max_{I_up} m, min_{I_low} m) over the active set.
template <class T>
void Solver<T>::extremes(double& gmax, double& gmin) const {
  gmax = -std::numeric_limits<double>::infinity();
  gmin = std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < n_act_; ++k) {
    const int64_t t = act_[k];
    const double mt = m(t);
    if (up_set(t) && mt > gmax) gmax = mt;
    if (low_set(t) && mt < gmin) gmin = mt;
  }
}

// Drop the shrinkable variables (dual_terms.hpp: shrinkable) from the active set, in order.
template <class T>
void Solver<T>::shrink(double gmax, double gmin) {
  int64_t k2 = 0;
  for (int64_t k = 0; k < n_act_; ++k) {
    const int64_t t = act_[k];
    if (shrinkable(pb_.y[t], st_.alpha[t], pb_.lo[t], pb_.up[t], m(t), gmax, gmin)) {
      is_act_[t] = 0;
      cols_.shrunk(t);
    } else {
      act_[k2++] = t;
    }
  }
  n_act_ = k2;
}

// Rebuild the gradient of the shrunk variables and make every variable active again:
//   G_t = G_bar_t + p_t [+ h_t'(alpha_t)] + sum_{a free} alpha_a Q_ta.
// LIBSVM's choice of loop order: by the rows of Q of the shrunk variables (each restricted to
// the active rows) when nr_free * n > 2 n_act (n - n_act), else by the columns of the free
// variables.
template <class T>
void Solver<T>::reconstruct() {
  ++n_rebuild_;  // counted as numba counted: every call (also one with nothing shrunk)
  if (n_act_ == n_) return;
  std::vector<int64_t> inact;
  inact.reserve(n_ - n_act_);
  for (int64_t t = 0; t < n_; ++t)
    if (!is_act_[t]) inact.push_back(t);
  for (int64_t t : inact) {
    st_.grad[t] = st_.gbar[t] + pb_.lin[t];
    if (pb_.ent) st_.grad[t] += hp(st_.alpha[t], st_.beta[t]);
  }
  int64_t nr_free = 0;
  for (int64_t k = 0; k < n_act_; ++k)
    if (free_var(act_[k])) ++nr_free;
  if (nr_free * n_ > 2 * n_act_ * (n_ - n_act_)) {
    std::unique_ptr<T[]> scratch;
    for (int64_t t : inact) {  // column t on the active rows = row t of Q
      const T* c;
      if (cols_.is_matrix() || cols_.cached(t)) {
        c = col(t, false);
      } else {
        if (!scratch) scratch.reset(new T[n_]);
        cols_.compute_uncached<T>(t, act_.data(), n_act_, scratch.get());
        c = scratch.get();
      }
      double acc = 0.0;
      for (int64_t k = 0; k < n_act_; ++k) {
        const int64_t a = act_[k];
        if (free_var(a)) acc += st_.alpha[a] * c[a];
      }
      st_.grad[t] += acc;
    }
  } else {
    for (int64_t k = 0; k < n_act_; ++k) {
      const int64_t a = act_[k];
      if (free_var(a)) {
        const T* c = col(a, true);
        const double aa = st_.alpha[a];
        for (int64_t t : inact) st_.grad[t] += aa * c[t];
      }
    }
  }
  std::iota(act_.begin(), act_.end(), int64_t{0});
  std::fill(is_act_.begin(), is_act_.end(), 1);
  n_act_ = n_;
  cols_.new_generation(inact);
}

// G_t += dai Q_ti + daj Q_tj on the active rows; with every row active in one contiguous loop.
template <class T>
void Solver<T>::grad_update(const T* ci, const T* cj, double dai, double daj) {
  double* __restrict g = st_.grad;
  if (n_act_ == n_) {
    for (int64_t t = 0; t < n_; ++t) g[t] += ci[t] * dai + cj[t] * daj;
    return;
  }
  for (int64_t k = 0; k < n_act_; ++k) {
    const int64_t t = act_[k];
    g[t] += ci[t] * dai + cj[t] * daj;
  }
}

// G_bar: the contribution of t entering or leaving a bound (old: alpha_t before the step).
template <class T>
void Solver<T>::gbar_update(int64_t t, double old) {
  const double nw = st_.alpha[t];
  const double c_old = (old == pb_.lo[t] || old == pb_.up[t]) ? old : 0.0;
  const double c_new = (nw == pb_.lo[t] || nw == pb_.up[t]) ? nw : 0.0;
  if (c_new == c_old) return;
  const T* c = col(t, true);
  const double dc = c_new - c_old;
  for (int64_t q = 0; q < n_; ++q) st_.gbar[q] += dc * c[q];
}

// Ctrl-C: take the GIL back for a moment and let Python run its signal handlers.
template <class T>
bool Solver<T>::interrupted() {
  return optmodels::stop_requested();  // signals.hpp
}

template <class T>
bool Solver<T>::out_of_time() const {
  if (opt_.time_limit <= 0.0) return false;
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0_;
  return dt.count() >= opt_.time_limit;
}

template <class T>
Outcome Solver<T>::run() {
  const int64_t evals0 = cols_.kernel_evals();
  if (pb_.ent)
    for (int64_t t = 0; t < n_; ++t) hdd_[t] = hpp(st_.alpha[t], st_.beta[t]);
  init_gbar();
  if (opt_.track) fval_ = objective();

  const double inf = std::numeric_limits<double>::infinity();
  const double* y = pb_.y;
  const double* qd = pb_.qd;
  int64_t it = 0, status = STATUS_CONVERGED, n_trace = 0, next_trace = 1;
  bool unshrunk = opt_.resume, just_rebuilt = false;
  double min_curv = inf;
  int64_t counter = opt_.resume ? 1 : std::min<int64_t>(n_, 1000) + 1;
  const int64_t gap_every = std::min(n_, GAP_EVERY_PAIRS);
  int64_t gap_next = gap_every;
  const KlrArrays klr{n_, y, st_.alpha, st_.beta, st_.grad, pb_.lin, pb_.lo, pb_.up, pb_.cent};
  while (true) {
    if (opt_.shrinking && !just_rebuilt) {
      if (--counter == 0) {
        counter = std::min<int64_t>(n_, 1000);
        double gmax, gmin;
        extremes(gmax, gmin);
        if (!unshrunk && gmax - gmin <= 10.0 * opt_.tol) {
          unshrunk = true;
          reconstruct();
        }
        shrink(gmax, gmin);
      }
    }

    // ---- working set: i by the maximal violation, j by the second-order gain
    double gmax = -inf;
    int64_t i = -1;
    for (int64_t k = 0; k < n_act_; ++k) {
      const int64_t t = act_[k];
      if (up_set(t)) {
        const double mt = m(t);
        if (mt >= gmax) {
          gmax = mt;
          i = t;
        }
      }
    }
    double gmin = inf;
    int64_t j = -1;
    if (i >= 0) {
      const T* ci = col(i, false);
      const double yi = y[i];
      const double base = qd[i] + hdd_[i];
      double best = inf;
      for (int64_t k = 0; k < n_act_; ++k) {
        const int64_t t = act_[k];
        if (low_set(t)) {
          const double mt = m(t);
          if (mt < gmin) gmin = mt;
          const double bgap = gmax - mt;
          if (bgap > 0.0) {
            double a = base + qd[t] + hdd_[t] - 2.0 * yi * y[t] * ci[t];
            const double kc = pb_.ent ? qd[i] + qd[t] - 2.0 * yi * y[t] * ci[t] : a;
            if (kc < min_curv) min_curv = kc;
            if (a <= 0.0) a = TAU;
            const double g = -bgap * bgap / a;
            if (g <= best) {
              best = g;
              j = t;
            }
          }
        }
      }
    }

    if (opt_.gap_scale > 0.0 && it >= gap_next && n_act_ == n_ && gmax - gmin > opt_.tol) {
      gap_next = it + gap_every;
      if (klr_gap_stop(klr, 0.5 * (gmax + gmin),
                       GapTarget{opt_.gap_scale, opt_.gap_rel, opt_.gap_sol, opt_.gap_wfloor})) {
        status = STATUS_GAP;
        break;
      }
    }
    if (gmax - gmin <= opt_.tol || j < 0) {
      if (n_act_ < n_) {
        reconstruct();
        counter = 1;
        just_rebuilt = true;
        continue;  // re-select on all variables (the final un-shrink check)
      }
      break;
    }
    just_rebuilt = false;
    if (it >= opt_.max_iter) {
      status = STATUS_ITERATION_LIMIT;
      break;
    }
    ++it;
    if (it >= next_trace && n_trace < trace_.len) {
      trace_.it[n_trace] = it;
      trace_.v[n_trace] = gmax - gmin;
      trace_.t[n_trace] = rep_.seconds();
      trace_.f[n_trace] = fval_;
      ++n_trace;
      next_trace = std::max(next_trace + 1, static_cast<int64_t>(static_cast<double>(next_trace) * 1.25));
    }
    if (it % SIGNAL_EVERY == 0 && interrupted()) {
      status = STATUS_INTERRUPTED;
      break;
    }
    if (it % CLOCK_EVERY == 0 && out_of_time()) {
      status = STATUS_TIME_LIMIT;
      break;
    }
    if (it % CLOCK_EVERY == 0 && rep_.maybe(it, fval_, gmax - gmin, n_act_)) {
      status = STATUS_INTERRUPTED;
      break;
    }
    if (opt_.verbose && it % 100000 == 0)
      verbose_printf("smo: iteration %lld violation %.17g active %lld objective %.12g time %.2f s",
                     static_cast<long long>(it), gmax - gmin, static_cast<long long>(n_act_),
                     fval_, rep_.seconds());

    // ---- two-variable update along d = (+y_i at i, -y_j at j)
    const T* ci = col(i, false);
    const T* cj = col(j, false);
    const double bgap = gmax - (-y[j] * st_.grad[j]);
    const double aq = qd[i] + qd[j] - 2.0 * y[i] * y[j] * ci[j];
    double* alpha = st_.alpha;
    double* beta = st_.beta;
    const double ai_old = alpha[i], aj_old = alpha[j], bi_old = beta[i], bj_old = beta[j];
    const PairValues v = pair_values(i, j, bgap, aq, y, alpha, beta, pb_.lo, pb_.up, pb_.cent, pb_.ent);
    const double dai = v.ai - ai_old, daj = v.aj - aj_old;
    if (dai == 0.0 && daj == 0.0 && (!pb_.ent || (v.bi == bi_old && v.bj == bj_old))) {
      status = STATUS_STALLED;
      break;
    }
    alpha[i] = v.ai;
    alpha[j] = v.aj;
    const double gi_old = st_.grad[i], gj_old = st_.grad[j];
    grad_update(ci, cj, dai, daj);
    if (pb_.ent)
      entropy_update(i, j, ai_old, aj_old, bi_old, bj_old, v.bi, v.bj, alpha, beta, st_.grad,
                     hdd_.data());
    if (opt_.track) track_step(i, j, ai_old, aj_old, bi_old, bj_old, gi_old, gj_old);
    // ---- G_bar: contributions of variables entering or leaving a bound
    gbar_update(i, ai_old);
    gbar_update(j, aj_old);
  }
  if (n_act_ < n_) reconstruct();
  Outcome out;
  out.iterations = it;
  out.status = status;
  out.reconstructions = n_rebuild_;
  out.kernel_evals = cols_.kernel_evals() - evals0;
  out.min_curvature = min_curv;
  out.objective = fval_;
  return out;
}

}  // namespace optmodels

// ================================================================== bindings
using namespace optmodels;
using Vec = nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using CVec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using CMat = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using IVec = nb::ndarray<int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using CIVec = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

static KlrArrays klr_arrays(const CVec& y, const CVec& alpha, const CVec& beta, const CVec& grad,
                            const CVec& lin, const CVec& lo, const CVec& up, const CVec& cent) {
  return {static_cast<int64_t>(y.shape(0)), y.data(), alpha.data(), beta.data(), grad.data(),
          lin.data(), lo.data(), up.data(), cent.data()};
}

static KernelData kernel_data(int kind, const CMat& XT, const CVec& sqn, double gamma,
                              double coef0, double degree, const CVec& y) {
  KernelData kd;
  kd.kind = kind;
  kd.XT = XT.data();
  kd.p = static_cast<int64_t>(XT.shape(0));
  kd.n = static_cast<int64_t>(XT.shape(1));
  kd.sqn = sqn.data();
  kd.gamma = gamma;
  kd.coef0 = coef0;
  kd.degree = degree;
  kd.y = y.data();
  return kd;
}

NB_MODULE(_smo, m) {
  m.doc() = "optmodels compiled core: the pairwise SMO Solver and its kernel-column cache";
  m.attr("STATUS_CONVERGED") = STATUS_CONVERGED;
  m.attr("STATUS_ITERATION_LIMIT") = STATUS_ITERATION_LIMIT;
  m.attr("STATUS_STALLED") = STATUS_STALLED;
  m.attr("STATUS_GAP") = STATUS_GAP;
  m.attr("STATUS_INTERRUPTED") = STATUS_INTERRUPTED;
  m.attr("STATUS_TIME_LIMIT") = STATUS_TIME_LIMIT;
  m.attr("TAU") = TAU;
  m.attr("PARALLEL_FROM") = PARALLEL_FROM;
  m.attr("PARALLEL_WORK") = PARALLEL_WORK;
  m.attr("FILL_BLOCK") = FILL_BLOCK;
  m.attr("GATHER_COST") = GATHER_COST;
  m.attr("GAP_EVERY_PAIRS") = GAP_EVERY_PAIRS;
  m.attr("GAP_NEWTON_WITHIN") = GAP_NEWTON_WITHIN;
  m.attr("GAP_NEWTON_STEPS") = GAP_NEWTON_STEPS;

  nb::class_<KernelColumns>(m, "KernelColumns",
                            "LRU cache of the columns Q_:i (LIBSVM's Cache + Kernel).")
      .def(nb::init<int64_t, int64_t, bool>(), nb::arg("n"), nb::arg("n_slots"), nb::arg("f32"),
           "Kernel columns in n_slots slots of length n (float32 when f32).")
      .def_static(
          "matrix",
          [](nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu> Q, nb::object owner) {
            if (Q.shape(0) != Q.shape(1)) throw std::invalid_argument("Q must be square");
            return new KernelColumns(Q.data(), static_cast<int64_t>(Q.shape(0)), std::move(owner));
          },
          nb::arg("Q"), nb::arg("owner"), "The whole Q held (KIND_MATRIX); owner keeps Q alive.")
      .def(
          "set_kernel",
          [](KernelColumns& c, int kind, CMat XT, CVec sqn, double gamma, double coef0,
             double degree, CVec y) {
            if (c.is_matrix()) return;
            if (XT.shape(1) != static_cast<size_t>(c.n()) || sqn.shape(0) != XT.shape(1) ||
                y.shape(0) != XT.shape(1))
              throw std::invalid_argument("XT must be p x n, sqn and y of length n");
            c.set_kernel(kernel_data(kind, XT, sqn, gamma, coef0, degree, y),
                         nb::make_tuple(XT, sqn, y));
          },
          nb::arg("kind"), nb::arg("XT"), nb::arg("sqn"), nb::arg("gamma"), nb::arg("coef0"),
          nb::arg("degree"), nb::arg("y"), "The data columns are computed from (kept alive).")
      .def_prop_ro("n", &KernelColumns::n)
      .def_prop_ro("n_slots", &KernelColumns::n_slots)
      .def_prop_ro("is_f32", &KernelColumns::is_f32)
      .def_prop_ro("kernel_evals", &KernelColumns::kernel_evals)
      .def_prop_ro("generation", &KernelColumns::generation)
      .def(
          "column",
          [](KernelColumns& c, int64_t i) {
            // Q_:i in full as float64 (a copy; for tests).
            if (i < 0 || i >= c.n()) throw std::out_of_range("column index");
            std::vector<int64_t> act(c.n());
            std::iota(act.begin(), act.end(), int64_t{0});
            double* out = new double[c.n()];
            if (c.is_f32()) {
              const float* col = c.get<float>(i, true, act.data(), c.n());
              for (int64_t k = 0; k < c.n(); ++k) out[k] = col[k];
            } else {
              const double* col = c.get<double>(i, true, act.data(), c.n());
              std::copy(col, col + c.n(), out);
            }
            nb::capsule owner(out, [](void* p) noexcept { delete[] static_cast<double*>(p); });
            return nb::ndarray<nb::numpy, double, nb::ndim<1>>(out, {static_cast<size_t>(c.n())}, owner);
          },
          nb::arg("i"), "Q_:i (through the cache; a float64 copy).");

  m.def(
      "solve",
      [](KernelColumns& cols, CVec y, CVec lo, CVec up, CVec lin, CVec cent, CVec qd, bool ent,
         Vec alpha, Vec beta, Vec grad, Vec gbar, bool warm, double tol, int64_t max_iter,
         bool shrinking, bool verbose, IVec trace_it, Vec trace_v, Vec trace_t, Vec trace_f,
         double gap_scale, double gap_rel, double time_limit, nb::object report,
         double report_every, bool track, bool resume, double gap_sol, double gap_wfloor) {
        const size_t n = y.shape(0);
        for (size_t len : {lo.shape(0), up.shape(0), lin.shape(0), cent.shape(0), qd.shape(0),
                           alpha.shape(0), beta.shape(0), grad.shape(0), gbar.shape(0)})
          if (len != n) throw std::invalid_argument("all arrays must have length n");
        if (static_cast<int64_t>(n) != cols.n())
          throw std::invalid_argument("the column cache is for another n");
        if (!cols.kernel_set())
          throw std::invalid_argument("set_kernel was not called");
        if (trace_v.shape(0) != trace_it.shape(0) || trace_t.shape(0) != trace_it.shape(0) ||
            trace_f.shape(0) != trace_it.shape(0))
          throw std::invalid_argument("trace arrays differ in length");
        DualProblem pb{static_cast<int64_t>(n), y.data(), lo.data(), up.data(), lin.data(),
                       cent.data(), qd.data(), ent};
        DualState st{alpha.data(), beta.data(), grad.data(), gbar.data(), warm};
        SolverOptions opt;
        opt.tol = tol;
        opt.max_iter = max_iter;
        opt.shrinking = shrinking;
        opt.verbose = verbose;
        opt.gap_scale = gap_scale;
        opt.gap_rel = gap_rel;
        opt.gap_sol = gap_sol;
        opt.gap_wfloor = gap_wfloor;
        opt.time_limit = time_limit;
        opt.report = report.ptr();
        opt.report_every = report_every;
        opt.track = track || verbose || !report.is_none();
        opt.resume = resume;
        Trace tr{trace_it.data(), trace_v.data(), trace_t.data(), trace_f.data(),
                 static_cast<int64_t>(trace_it.shape(0))};
        Outcome o;
        {
          nb::gil_scoped_release release;
          if (cols.is_f32())
            o = Solver<float>(cols, pb, st, opt, tr).run();
          else
            o = Solver<double>(cols, pb, st, opt, tr).run();
        }
        return std::make_tuple(o.iterations, o.status, o.reconstructions, o.kernel_evals,
                               o.min_curvature, o.objective);
      },
      nb::arg("columns"), nb::arg("y"), nb::arg("lo"), nb::arg("up"), nb::arg("lin"),
      nb::arg("cent"), nb::arg("qd"), nb::arg("ent"), nb::arg("alpha"), nb::arg("beta"),
      nb::arg("grad"), nb::arg("gbar"), nb::arg("warm"), nb::arg("tol"), nb::arg("max_iter"),
      nb::arg("shrinking"), nb::arg("verbose"), nb::arg("trace_it"), nb::arg("trace_v"),
      nb::arg("trace_t"), nb::arg("trace_f"), nb::arg("gap_scale"), nb::arg("gap_rel"),
      nb::arg("time_limit"), nb::arg("report").none(), nb::arg("report_every"),
      nb::arg("track"), nb::arg("resume") = false, nb::arg("gap_sol") = 0.0,
      nb::arg("gap_wfloor") = 0.0,
      "Run SMO in place on alpha, beta (= C - alpha), grad, gbar; returns (iterations, status, "
      "reconstructions, kernel entries computed, the most negative kernel curvature "
      "K_ii + K_jj - 2 K_ij its scans met (+inf if none), f(alpha) tracked step by step (NaN "
      "unless track, verbose or report)). report(iteration, f, violation, active) is called "
      "about every report_every seconds (progress.hpp). resume: the run continues a converged one (a refinement "
      "round): the first shrinking check before the first step, no early un-shrink. gap_sol, "
      "gap_wfloor: the gap stop also waits for the solution rule (dual_terms.hpp GapTarget).");

  m.def(
      "klr_gap",
      [](CVec y, CVec alpha, CVec beta, CVec grad, CVec lin, CVec lo, CVec up, CVec cent, double b) {
        const GapValue v = klr_gap(klr_arrays(y, alpha, beta, grad, lin, lo, up, cent), b);
        return std::make_tuple(v.f, v.gap);
      },
      nb::arg("y"), nb::arg("alpha"), nb::arg("beta"), nb::arg("grad"), nb::arg("lin"),
      nb::arg("lo"), nb::arg("up"), nb::arg("cent"), nb::arg("b"),
      "(f(alpha), f(alpha) + P(w(alpha), b)) of the KLR dual from the gradient.");
  m.def(
      "klr_b_newton",
      [](CVec y, CVec alpha, CVec beta, CVec grad, CVec lin, CVec lo, CVec up, CVec cent,
         double b, int steps) {
        return klr_b_newton(klr_arrays(y, alpha, beta, grad, lin, lo, up, cent), b, steps);
      },
      nb::arg("y"), nb::arg("alpha"), nb::arg("beta"), nb::arg("grad"), nb::arg("lin"),
      nb::arg("lo"), nb::arg("up"), nb::arg("cent"), nb::arg("b"), nb::arg("steps"),
      "Newton steps towards the b with sum_i y_i a*_i(b) = 0.");
  m.def(
      "fill_column",
      [](int kind, CMat XT, CVec sqn, double gamma, double coef0, double degree, CVec y,
         int64_t i, CIVec idx, bool contiguous, bool parallel, Vec out) {
        const KernelData kd = kernel_data(kind, XT, sqn, gamma, coef0, degree, y);
        const int64_t cnt = static_cast<int64_t>(idx.shape(0));
        if (out.shape(0) != static_cast<size_t>(kd.n) || (contiguous && cnt > kd.n))
          throw std::invalid_argument("out must have length n");
        if (parallel)
          fill(kd, i, idx.data(), cnt, contiguous, out.data());
        else
          fill_range(kd, i, idx.data(), 0, cnt, contiguous, out.data());
      },
      nb::arg("kind"), nb::arg("XT"), nb::arg("sqn"), nb::arg("gamma"), nb::arg("coef0"),
      nb::arg("degree"), nb::arg("y"), nb::arg("i"), nb::arg("idx"), nb::arg("contiguous"),
      nb::arg("parallel"), nb::arg("out"),
      "out[s] = y_s y_i k(x_s, x_i) for s in idx (rows 0..len(idx)-1 if contiguous); "
      "parallel: in blocks from PARALLEL_FROM entries and PARALLEL_WORK units of work on, else "
      "serial.");
  m.def(
      "exp_parts",
      [](CVec v, Vec out) {
        for (size_t k = 0; k < v.shape(0); ++k) {
          const ExpParts e = exp_parts(v.data()[k]);
          out.data()[k] = e.q * e.two_e;
        }
      },
      nb::arg("v"), nb::arg("out"), "out = exp(v) by the column loop's exp (v <= 0).");
}

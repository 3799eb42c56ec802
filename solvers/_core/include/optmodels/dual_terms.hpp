// The problem-specific terms of the SMO dual and the mathematics of one pair step, shared by
// the pairwise Solver (_smo.cpp) and the batched solver (_batched.cpp). Header-only, no Python.
//
// Problem (the weighted SVM dual and the KLR dual are instances):
//
//     min_alpha  f(alpha) = 1/2 alpha' Q alpha + p' alpha + sum_i h_i(alpha_i)
//     s.t.       y' alpha = 0,   l_i <= alpha_i <= u_i,          Q_ij = y_i y_j K_ij
//
//   SVM: h = 0, p = -1, l = 0, u = C_i.
//   KLR: h_i(a) = a log(a / C_i) + (C_i - a) log((C_i - a) / C_i)  (C_i G(a / C_i)),
//        h_i'(a) = log(a / (C_i - a)),  h_i''(a) = 1/a + 1/(C_i - a);  p = -lambda;
//        l = gamma_i, u = C_i - gamma_i.
//
// Gradient G = Q alpha + p + h'(alpha); m_t = -y_t G_t.
//   I_up  = {t : y_t = +1, alpha_t < u_t} U {t : y_t = -1, alpha_t > l_t}
//   I_low = {t : y_t = -1, alpha_t < u_t} U {t : y_t = +1, alpha_t > l_t}
//
// Near C the entropy terms are evaluated from beta = C - alpha, carried separately by the
// callers: alpha cannot resolve C - alpha within a few ulps of C.
//
// Port of the numba functions of solvers/smo/core.py (_hp ... _shrinkable) with the same
// operation order (no fast-math), so that the compiled loops take the same steps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace optmodels {

// LIBSVM's tau': the curvature used when a_it <= 0.
constexpr double TAU = 1e-12;
// A gap check within GAP_NEWTON_WITHIN times its target at the midpoint b tries again at b
// after GAP_NEWTON_STEPS Newton steps towards the best b (each one O(n) pass).
constexpr double GAP_NEWTON_WITHIN = 20.0;
constexpr int GAP_NEWTON_STEPS = 4;

// ------------------------------------------------------------------ entropy terms
// h'(a) = log(a / (C - a)), with b = C - a kept separately (no cancellation near C).
inline double hp(double a, double b) { return std::log(a) - std::log(b); }

// h''(a) = 1/a + 1/(C - a), b = C - a.
inline double hpp(double a, double b) { return 1.0 / a + 1.0 / b; }

// h(a) = a log(a / C) + (C - a) log((C - a) / C), b = C - a, with 0 log 0 = 0.
inline double entropy_value(double a, double b, double c) {
  double out = 0.0;
  if (a > 0.0) out += a * std::log(a / c);
  if (b > 0.0) out += b * std::log(b / c);
  return out;
}

// sigma(z) = 1 / (1 + e^-z), without overflow for either sign of z.
inline double sigmoid(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double ez = std::exp(z);
  return ez / (1.0 + ez);
}

// ------------------------------------------------------------------ the KLR duality gap
// The arrays the gap needs (length n, read only): y, alpha, beta = C - alpha, the loop's
// gradient G, p (lin), the box [lo, up] and C (cent).
struct KlrArrays {
  int64_t n;
  const double* y;
  const double* alpha;
  const double* beta;
  const double* grad;
  const double* lin;
  const double* lo;
  const double* up;
  const double* cent;
};

struct GapValue {
  double f;    // f(alpha)
  double gap;  // f(alpha) + P(w(alpha), b)
  double w2;   // alpha' Q alpha = ||w(alpha)||^2
};

// (f(alpha), f(alpha) + P(w(alpha), b)) of the KLR dual from the loop's gradient, in O(n):
//   qa = G - p - h'(alpha), t_i = qa_i + y_i b, z_i = -p_i - t_i,
//   f = sum_i 1/2 alpha_i qa_i + h_i(alpha_i) + p_i alpha_i,
//   gap(b) = sum_i alpha_i qa_i + h_i(alpha_i) + p_i alpha_i + loss_i(t_i),
// where loss_i = C_i log(1 + e^z_i) when a* = C_i sigma(z_i) lies in [l_i, u_i], else
// a* z_i - h_i(a*) at the clipped a*. Any b bounds the gap at the best b from above.
// (solvers/smo/certificate.py certifies the result with numpy; a test holds the two equal.)
inline GapValue klr_gap(const KlrArrays& d, double b) {
  double f = 0.0, gap = 0.0, w2 = 0.0;
  for (int64_t i = 0; i < d.n; ++i) {
    const double a = d.alpha[i], c = d.cent[i];
    const double h = entropy_value(a, d.beta[i], c);
    const double qa = d.grad[i] - d.lin[i] - hp(a, d.beta[i]);
    const double z = -d.lin[i] - (qa + d.y[i] * b);
    const double free = c * sigmoid(z);
    double loss;
    if (free < d.lo[i]) {
      loss = d.lo[i] * z - entropy_value(d.lo[i], c - d.lo[i], c);
    } else if (free > d.up[i]) {
      loss = d.up[i] * z - entropy_value(d.up[i], c - d.up[i], c);
    } else {  // C_i log(1 + e^z), stable for either sign
      loss = c * (std::max(z, 0.0) + std::log1p(std::exp(-std::fabs(z))));
    }
    f += 0.5 * a * qa + h + d.lin[i] * a;
    gap += a * qa + h + d.lin[i] * a + loss;
    w2 += a * qa;
  }
  return {f, gap, w2};
}

// `steps` Newton steps on g(b) = sum_i y_i a*_i(t_i(b)) = 0, the best b's condition
// (certificate.klr_best_intercept bisects it):
//   g'(b) = -sum_{a*_i unclipped} C_i s_i (1 - s_i),  s_i = sigma(z_i).
// Any b gives a valid gap, so no safeguard beyond stopping where g' vanishes.
inline double klr_b_newton(const KlrArrays& d, double b, int steps) {
  for (int k = 0; k < steps; ++k) {
    double g = 0.0, dg = 0.0;
    for (int64_t i = 0; i < d.n; ++i) {
      const double c = d.cent[i];
      const double z = -d.grad[i] + hp(d.alpha[i], d.beta[i]) - d.y[i] * b;  // -p - Qa - y b
      const double sig = sigmoid(z);
      double a = c * sig;
      if (a < d.lo[i]) {
        a = d.lo[i];
      } else if (a > d.up[i]) {
        a = d.up[i];
      } else {
        dg -= c * sig * (1.0 - sig);
      }
      g += d.y[i] * a;
    }
    if (dg == 0.0) break;
    b -= g / dg;
  }
  return b;
}

// The in-loop gap stop's target. The certificate (solvers/smo/certificate.py) holds when the
// relative gap is within CERTIFICATE_TOL and the solution rule holds: ||w(alpha) - w*|| <=
// sqrt(2 gap) is within SOLUTION_TOL of ||w(alpha)||, or sqrt(2 gap q_max) within it of 1,
// i.e. gap <= SOLUTION_TOL^2 max(||w||^2, 1 / q_max) / 2 (Certificate.solution_allowance).
//   scale: the natural scale P(0, 0) (> 0 enables the stop); rel: the relative target;
//   sol: the share of max(w2, wfloor) the absolute gap may reach (0: no solution rule),
//        GAP_STOP_SHARE SOLUTION_TOL^2 / 2 from Python; wfloor = 1 / q_max.
struct GapTarget {
  double scale = 0.0;
  double rel = 0.0;
  double sol = 0.0;
  double wfloor = 0.0;
};

// gap <= rel * min(scale, max(|f|, |f - gap|)) (the certificate's scale rule,
// solvers.result.objective_scale) times `within`, and, with t.sol > 0, gap <= within * sol *
// max(w2, wfloor) (the solution rule); never asked below 1e-15 of the scale
// (Certificate.gap_rel_target's floor).
inline bool gap_reached(const GapValue& v, const GapTarget& t, double within = 1.0) {
  const double top = std::max(std::fabs(v.f), std::fabs(v.f - v.gap));
  const double scale = top > 0.0 ? std::min(t.scale, top) : t.scale;
  double target = t.rel * scale;
  if (t.sol > 0.0) target = std::max(std::min(target, t.sol * std::max(v.w2, t.wfloor)),
                                     1e-15 * scale);
  return v.gap <= within * target;
}

// Whether the KLR gap is within its target (gap_reached): first at the midpoint b_mid of m_up,
// m_low (one pass); then, when that gap is within GAP_NEWTON_WITHIN times the target, at b
// after GAP_NEWTON_STEPS Newton steps towards the best b (the midpoint's gap is larger).
// The targets are passed in (core.GAP_REL and core.GAP_SOLUTION in Python are their one
// definition).
inline bool klr_gap_stop(const KlrArrays& d, double b_mid, const GapTarget& t) {
  GapValue v = klr_gap(d, b_mid);
  if (gap_reached(v, t)) return true;
  if (!gap_reached(v, t, GAP_NEWTON_WITHIN)) return false;
  const double b = klr_b_newton(d, b_mid, GAP_NEWTON_STEPS);
  v = klr_gap(d, b);
  return gap_reached(v, t);
}

// ------------------------------------------------------------------ the pair step
// Along d = (+y_i at i, -y_j at j), phi(s) = f(alpha + s d), phi'(0) = -bgap < 0 with
// bgap = m_i - m_j, and aq = Q_ii + Q_jj - 2 y_i y_j Q_ij.

// SVM: the minimiser of phi(s) = -bgap s + aq s^2 / 2 on [0, smax] (aq <= 0 -> TAU).
inline double step_quadratic(double bgap, double aq, double smax) {
  const double a = aq > 0.0 ? aq : TAU;
  const double s = bgap / a;
  return s < smax ? s : smax;
}

// KLR: the root on [0, smax] of the increasing
//   phi'(s) = -bgap + s aq + y_i [h_i'(alpha_i + s y_i) - h_i'(alpha_i)]
//             - y_j [h_j'(alpha_j - s y_j) - h_j'(alpha_j)],
// by Newton's method (phi'' = aq + h_i'' + h_j'') inside a bisection bracket.
// bi = C_i - alpha_i and bj are carried separately so h' stays accurate near C.
inline double step_entropy(double ai, double aj, double bi, double bj, double yi, double yj,
                           double bgap, double aq, double smax) {
  if (aq < 0.0) aq = 0.0;
  const double hi0 = hp(ai, bi);
  const double hj0 = hp(aj, bj);
  // phi'(smax) <= 0: the minimiser is the end of the interval
  const double d_end = (-bgap + smax * aq + yi * (hp(ai + smax * yi, bi - smax * yi) - hi0)
                        - yj * (hp(aj - smax * yj, bj + smax * yj) - hj0));
  if (d_end <= 0.0) return smax;
  double lo_s = 0.0, hi_s = smax;
  double s = bgap / (aq + hpp(ai, bi) + hpp(aj, bj));
  if (!(0.0 < s && s < smax)) s = 0.5 * smax;
  for (int k = 0; k < 200; ++k) {
    const double a_i = ai + s * yi, b_i = bi - s * yi;
    const double a_j = aj - s * yj, b_j = bj + s * yj;
    const double d = -bgap + s * aq + yi * (hp(a_i, b_i) - hi0) - yj * (hp(a_j, b_j) - hj0);
    if (d < 0.0) {
      lo_s = s;
    } else if (d > 0.0) {
      hi_s = s;
    } else {
      return s;
    }
    double s_new = s - d / (aq + hpp(a_i, b_i) + hpp(a_j, b_j));
    if (!(lo_s < s_new && s_new < hi_s)) s_new = 0.5 * (lo_s + hi_s);
    if (std::fabs(s_new - s) <= 1e-15 * s || hi_s - lo_s <= 1e-15 * hi_s) return s_new;
    s = s_new;
  }
  return s;
}

struct PairValues {
  double ai, aj;  // new alpha_i, alpha_j
  double bi, bj;  // new beta_i = C_i - alpha_i, beta_j
};

// The step s in [0, s_max] along d = (+y_i at i, -y_j at j) (step_entropy when `ent`, else
// step_quadratic) as the new (alpha_i, alpha_j, beta_i, beta_j). s_max is the room to the
// boxes (from beta near the upper bound when `ent`: exact near C); the variable(s) whose bound
// defines s_max are snapped exactly onto it, and alpha is clipped into its box.
inline PairValues pair_values(int64_t i, int64_t j, double bgap, double aq, const double* y,
                              const double* alpha, const double* beta, const double* lo,
                              const double* up, const double* cent, bool ent) {
  const double yi = y[i], yj = y[j];
  double si, sj;
  if (ent) {
    si = yi > 0.0 ? beta[i] - (cent[i] - up[i]) : alpha[i] - lo[i];
    sj = yj > 0.0 ? alpha[j] - lo[j] : beta[j] - (cent[j] - up[j]);
  } else {
    si = yi > 0.0 ? up[i] - alpha[i] : alpha[i] - lo[i];
    sj = yj > 0.0 ? alpha[j] - lo[j] : up[j] - alpha[j];
  }
  const double smax = si < sj ? si : sj;
  const double s = ent ? step_entropy(alpha[i], alpha[j], beta[i], beta[j], yi, yj, bgap, aq, smax)
                       : step_quadratic(bgap, aq, smax);
  PairValues v{alpha[i] + s * yi, alpha[j] - s * yj, beta[i] - s * yi, beta[j] + s * yj};
  if (s >= smax) {  // snap the variable(s) that define s_max exactly onto the bound
    if (si <= sj) {
      v.ai = yi > 0.0 ? up[i] : lo[i];
      v.bi = yi < 0.0 ? cent[i] - v.ai : cent[i] - up[i];
    }
    if (sj <= si) {
      v.aj = yj > 0.0 ? lo[j] : up[j];
      v.bj = yj > 0.0 ? cent[j] - v.aj : cent[j] - up[j];
    }
  }
  v.ai = std::min(std::max(v.ai, lo[i]), up[i]);
  v.aj = std::min(std::max(v.aj, lo[j]), up[j]);
  return v;
}

// KLR after a step (alpha[i], alpha[j] already updated): beta = C - alpha, the change of h'
// in the gradient at i and j, and h'' there.
inline void entropy_update(int64_t i, int64_t j, double ai_old, double aj_old, double bi_old,
                           double bj_old, double bi_new, double bj_new, const double* alpha,
                           double* beta, double* grad, double* hdd) {
  beta[i] = bi_new;
  beta[j] = bj_new;
  grad[i] += hp(alpha[i], bi_new) - hp(ai_old, bi_old);
  grad[j] += hp(alpha[j], bj_new) - hp(aj_old, bj_old);
  hdd[i] = hpp(alpha[i], bi_new);
  hdd[j] = hpp(alpha[j], bj_new);
}

// ------------------------------------------------------------------ index sets
// t in I_up: alpha_t can move along +y_t.
inline bool in_up(double yt, double at, double lt, double ut) { return yt > 0.0 ? at < ut : at > lt; }

// t in I_low: alpha_t can move along -y_t.
inline bool in_low(double yt, double at, double lt, double ut) { return yt > 0.0 ? at > lt : at < ut; }

// l_t < alpha_t < u_t.
inline bool is_free(double at, double lt, double ut) { return at > lt && at < ut; }

// LIBSVM's shrinking rule for t with m = m_t: in I_up only with m < gmin = min_{I_low} m, in
// I_low only with m > gmax = max_{I_up} m, or in neither.
inline bool shrinkable(double yt, double at, double lt, double ut, double m, double gmax,
                       double gmin) {
  const bool iu = in_up(yt, at, lt, ut), il = in_low(yt, at, lt, ut);
  if (iu && il) return false;
  if (iu) return m < gmin;
  if (il) return m > gmax;
  return true;
}

}  // namespace optmodels

// Progress reports and verbose lines from a compiled loop that released the GIL
// (solvers/progress.py).
//
// Reporter: the loop asks ``due()`` (a clock read) at its time checks; when ``every`` seconds
// have passed since the last report it takes the GIL and calls the Python function
// report(iteration, objective, violation, active) (Progress.callback), which logs a line when
// one is due. A report that raises is printed as unraisable and reporting stops; a
// KeyboardInterrupt (a second Ctrl-C) asks the loop to stop, as signals.hpp does.
//
// verbose_line: one ``verbose=True`` line through solvers.progress.verbose_line (a logging record
// or stdout, as the program configured).
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>

namespace optmodels {

class Reporter {
 public:
  // report: a Python callable or None (no reports); every: seconds between calls.
  Reporter(PyObject* report, double every)
      : report_(report == Py_None ? nullptr : report), every_(every), t0_(clock::now()),
        last_(t0_) {}

  bool on() const { return report_ != nullptr; }

  // Seconds since the loop started.
  double seconds() const { return std::chrono::duration<double>(clock::now() - t0_).count(); }

  // Call the report if it is due; true when the user asked to stop (KeyboardInterrupt).
  bool maybe(int64_t it, double objective, double violation, int64_t active) {
    if (report_ == nullptr) return false;
    const clock::time_point now = clock::now();
    if (std::chrono::duration<double>(now - last_).count() < every_) return false;
    last_ = now;
    namespace nb = nanobind;
    nb::gil_scoped_acquire gil;
    PyObject* out = PyObject_CallFunction(report_, "LddL", static_cast<long long>(it), objective,
                                          violation, static_cast<long long>(active));
    if (out != nullptr) {
      Py_DECREF(out);
      return false;
    }
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
      PyErr_Clear();
      return true;
    }
    PyErr_WriteUnraisable(report_);
    report_ = nullptr;
    return false;
  }

 private:
  using clock = std::chrono::steady_clock;
  PyObject* report_;  // borrowed: the caller's argument outlives the loop
  double every_;
  clock::time_point t0_, last_;
};

// Send one line to solvers.progress.verbose_line (takes the GIL).
inline void verbose_text(const std::string& text) {
  namespace nb = nanobind;
  nb::gil_scoped_acquire gil;
  // The module lives as long as the interpreter; the reference is kept (see signals.hpp).
  static PyObject* fn = [] {
    nb::object f = nb::module_::import_("solvers.progress").attr("verbose_line");
    return f.release().ptr();
  }();
  PyObject* out = PyObject_CallFunction(fn, "s", text.c_str());
  if (out == nullptr)
    PyErr_WriteUnraisable(fn);
  else
    Py_DECREF(out);
}

// printf-style verbose line.
inline void verbose_printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  verbose_text(buf);
}

}  // namespace optmodels

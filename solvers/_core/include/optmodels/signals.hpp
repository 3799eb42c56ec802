// Ctrl-C inside a compiled loop that released the GIL.
//
// Python runs signal handlers only in the main thread between bytecodes, so a loop in C++ takes
// the GIL back every few thousand steps and asks:
//   * PyErr_CheckSignals() != 0: Python's default handler raised KeyboardInterrupt (no
//     solvers.interrupt block is active); the error is cleared and the loop ends, the Python
//     side reports the stop;
//   * solvers.interrupt.requested(): inside run_strategy, whose handler only sets a flag (the
//     first Ctrl-C asks for a stop, a second one raises).
// Either way the loop returns its current point, which the front end reports as INTERRUPTED.
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

namespace optmodels {

// True when the user pressed Ctrl-C since the last check. Takes the GIL for the check.
inline bool stop_requested() {
  namespace nb = nanobind;
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) {
    PyErr_Clear();
    return true;
  }
  // The flag's module lives as long as the interpreter; the reference is kept, never released
  // (releasing it at exit would run after the interpreter is gone).
  static PyObject* requested = [] {
    nb::object fn = nb::module_::import_("solvers.interrupt").attr("requested");
    return fn.release().ptr();
  }();
  PyObject* out = PyObject_CallNoArgs(requested);
  if (out == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool stop = PyObject_IsTrue(out) == 1;
  Py_DECREF(out);
  return stop;
}

}  // namespace optmodels

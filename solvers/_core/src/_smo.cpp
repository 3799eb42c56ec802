// Placeholder: the module is being ported from numba (issue 29).
#include <nanobind/nanobind.h>

NB_MODULE(_smo, m) { m.doc() = "optmodels compiled core: _smo"; }

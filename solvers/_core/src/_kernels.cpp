// Placeholder: the module is being ported from numba (issue 29).
#include <nanobind/nanobind.h>

NB_MODULE(_kernels, m) { m.doc() = "optmodels compiled core: _kernels"; }

"""The compiled numerical cores (C++17, bound with nanobind; sources in ``src/`` and
``include/``), built with the package: ``_smo``, ``_batched``, ``_kernels``, ``_aid``."""

"""Instance generators, loaders and writers, and small shipped datasets. Imports neither optmodels nor solvers."""

"""optmodels: training problems of machine learning as algebraic models."""

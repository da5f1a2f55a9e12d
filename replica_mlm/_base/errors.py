"""The package's own exceptions (base layer: every other layer may raise them)."""

from __future__ import annotations


class ConvergenceError(RuntimeError):
    """The saddle-point solver did not converge.

    Attributes
    ----------
    message : str
        What failed, without the iterations and residual the text adds.
    last : dict
        The last iterate (order parameters by name).
    residual : float
        Residual at the last iterate.
    iterations : int
        Iterations (or function evaluations) spent.
    """

    def __init__(self, message: str, *, last: dict, residual: float, iterations: int) -> None:
        super().__init__(f"{message} (iterations={iterations}, residual={residual:.3g})")
        self.message = message
        self.last = last
        self.residual = residual
        self.iterations = iterations

"""Runs: :func:`simulate` (equation + integrator + controller + outputs, in the shape of diffrax's
``diffeqsolve``) and :func:`rollout` (a pure, differentiable run of fixed steps), both on the stepping core."""

from .loop import BlowUpError as BlowUpError
from .rollout import Rollout as Rollout
from .rollout import rollout as rollout
from .rows import RowFunction as RowFunction
from .simulate import Solution as Solution
from .simulate import simulate as simulate

__all__ = ["BlowUpError", "Rollout", "RowFunction", "Solution", "rollout", "simulate"]

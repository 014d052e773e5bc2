"""The execution calculus (seed 002): region programs, their reference interpreter, reduction
policies, refinement-witness checkers, the Hidet task product, and the planner-facing check.

docs/regions.md documents the text form; docs/calculus.md the semantics and the witnesses.
"""
from .errors import (InterferenceError, PipelineHazardError, ReductionPolicyError, RegionError,  # noqa: F401
                     RegionRuntimeError, UndecidedError)
from .interp import RunResult, run  # noqa: F401
from .loader import dump, load, load_file, loads  # noqa: F401
from .program import Program, check  # noqa: F401

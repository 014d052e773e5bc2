"""The execution calculus (seed 002): region programs, their reference interpreter, reduction
policies, refinement-witness checkers, the Hidet task product, and the planner-facing check.

docs/regions.md documents the text form; docs/calculus.md the semantics and the witnesses.
"""
from . import builder  # noqa: F401
from .budget import BudgetError, check_budget, static_cost  # noqa: F401
from .symbolic import (check_bind_symbolic, check_reindex_symbolic, check_split_fuse_symbolic,  # noqa: F401
                       check_symbolic)
from .atoms import AtomContract, tile_cells  # noqa: F401
from .placement import (Distribution, Phase, Placement, Relation, ResourceMap, Transfer,  # noqa: F401
                        check_bridge, relation)
from .orders import StrengthWitness, check_strengthening, compare  # noqa: F401
from .refine import (Contract, Refinement, RehomeWitness, Resource, check_composition, check_rehome,  # noqa: F401
                     check_witness, compose_reindex)
from .groups import SharedGroupWitness, check_cohorts, check_shared_group, cohort_witness  # noqa: F401
from .errors import (InterferenceError, PipelineHazardError, ReductionPolicyError, RegionError,  # noqa: F401
                     RegionRuntimeError, UndecidedError)
from .interp import RunResult, run  # noqa: F401
from .loader import dump, load, load_file, loads  # noqa: F401
from .plan import Plan, Step, check_plan, serial_plan, source_events, stream_program  # noqa: F401
from .program import Program, check  # noqa: F401
from .taskmap import TaskMapping, repeat, spatial  # noqa: F401
from .witnesses import (BindWitness, Cut, FissionWitness, FusionWitness, MergeTreeWitness,  # noqa: F401
                        ReductionWitness, ReindexWitness, SplitFuseWitness, Value, Verdict, VersionWitness,
                        apply_fission, apply_fusion, check_bind, check_fission, check_merge_tree,
                        check_reduction, check_reindex, check_scope_fusion, check_split_fuse,
                        check_versioning, fuse, pipeline_schedule, pipeline_versions, split)

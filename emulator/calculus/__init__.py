"""The execution calculus (seed 002): region programs, their reference interpreter, reduction
policies, refinement-witness checkers, the Hidet task product, and the planner-facing check.

docs/regions.md documents the text form; docs/calculus.md the semantics and the witnesses.

Names resolve on first use (PEP 562): the batch engine needs only `groups`, `plan` and their
imports, so running a stream does not import the text form's schema (jsonschema) or the symbolic
checks (islpy) (docs/performance.md, "Start-up").
"""
from importlib import import_module

_MODULES = {
    "budget": ("BudgetError", "check_budget", "static_cost"),
    "symbolic": ("check_bind_symbolic", "check_reindex_symbolic", "check_split_fuse_symbolic",
                 "check_symbolic"),
    "atoms": ("AtomContract", "tile_cells"),
    "placement": ("Distribution", "Phase", "Placement", "Relation", "ResourceMap", "Transfer", "check_bridge",
                  "relation"),
    "orders": ("StrengthWitness", "check_strengthening", "compare"),
    "refine": ("Contract", "Refinement", "RehomeWitness", "Resource", "check_composition", "check_rehome",
               "check_witness", "compose_reindex"),
    "groups": ("SharedGroupWitness", "check_cohorts", "check_shared_group", "cohort_witness"),
    "errors": ("InterferenceError", "PipelineHazardError", "ReductionPolicyError", "RegionError",
               "RegionRuntimeError", "UndecidedError"),
    "interp": ("RunResult", "run"),
    "loader": ("dump", "load", "load_file", "loads"),
    "plan": ("Plan", "Step", "check_plan", "serial_plan", "source_events", "stream_program"),
    "program": ("Program", "check"),
    "taskmap": ("TaskMapping", "repeat", "spatial"),
    "witnesses": ("BindWitness", "Cut", "FissionWitness", "FusionWitness", "MergeTreeWitness",
                  "ReductionWitness", "ReindexWitness", "SplitFuseWitness", "Value", "Verdict",
                  "VersionWitness", "apply_fission", "apply_fusion", "check_bind", "check_fission",
                  "check_merge_tree", "check_reduction", "check_reindex", "check_scope_fusion",
                  "check_split_fuse", "check_versioning", "fuse", "pipeline_schedule", "pipeline_versions",
                  "split"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
_SUBMODULES = ("builder",)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(import_module("." + _EXPORTS[name], __name__), name)
    elif name in _SUBMODULES:
        value = import_module("." + name, __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS) + list(_SUBMODULES))

"""fabric.vcg: the Valid Count Generator (seed 003) and VCG-tagged intra-slice reductions.

    m = Mapping.parse("A = 8, R = 12, X = 128", slice="X, A / 4", time="R # 16", packet="A % 4 # 8")
    cfg = compile_vcg(m, "R")                        # VcgConfig (VcgError names a broken rule)
    vs = valid_size_matrix(cfg, m.num_slices, m.num_steps)
    out, out_valid = reduce_flits(x8, vs, plan_reduce(m, "R", "trim"), "AddSat")

docs/vcg.md specifies the notation, the compiler, the fold order and the file formats.
"""
from .config import (AUTO, DISABLED_CLIPPER, DISABLED_FILTER, PacketClipperConfig, SeqEntry,  # noqa: F401
                     Sequencer, TimeFilterConfig, TimeFilterMode, VcgConfig, check_narrow,
                     compile_vcg, tracked_axes)
from .errors import RULES, MappingError, VcgError  # noqa: F401
from .mapping import Mapping, Term, format_axes, format_terms, parse_axes, parse_terms  # noqa: F401
from .reduce import (OPS, SUPPORTED_DTYPES, ReducePlan, plan_reduce, reduce_flits,  # noqa: F401
                     vector_narrow_split, vector_narrow_trim, vector_widen_concat)
from .valid import valid_size_matrix  # noqa: F401

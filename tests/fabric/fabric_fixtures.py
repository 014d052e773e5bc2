"""Small builders for concrete fabric.op resources and actors used across the fabric tests."""
from __future__ import annotations

from fabric.capability import FabricOp, PortCorrespondence, ResourceContractConstraint
from fabric.families import FAMILIES
from fabric.params import parse_record
from fabric.schemas import make_actor
from fabric.types import parse_port_type, parse_type

RNE_PROFILE = {"rounding_modes": ["to_nearest_even"], "nan_behaviors": ["ieee"], "subnormal_behaviors": ["preserve"],
               "signed_zero_behaviors": ["preserve"], "required_fast_math": []}


def profile(**over):
    p = dict(RNE_PROFILE)
    p.update(over)
    return p


def make_op(family, op_list, params, ins, outs, constraints=None, name="op"):
    desc = FAMILIES[family]
    rec = parse_record(desc.params, params, "hw_params")
    cons = tuple(constraints) if constraints is not None else (ResourceContractConstraint(desc.contract),)
    return FabricOp(name, family, tuple(op_list), rec, tuple(parse_port_type(t) for t in ins),
                    tuple(parse_port_type(t) for t in outs), cons, name)


def T(s):
    return parse_type(s)


def actor(schema, ins, outs, **attrs):
    return make_actor(schema, [T(x) for x in ins], [T(x) for x in outs], **attrs)


def corr(operands, results, index_width=None):
    return PortCorrespondence(tuple(operands), tuple(results), index_width)

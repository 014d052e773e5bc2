"""Direct validators accept exactly the projector's image.

For small, randomly drawn capacities, every value of the (tiny) carrier is run through the
sealed validator, and every actor the capability admits (enumerated by brute force here, with
generous shape bounds) is run through the projector; the two sets must be equal.  Only the
carrier is exhaustive; parameters are sampled, never crossed as a Cartesian product."""
import itertools
from math import prod

from hypothesis import given, settings, strategies as st

from fabric.capability import supports
from fabric.codec import CodecError
from fabric.relation import derive_relation
from fabric.schemas import make_actor
from fabric.types import I1, IndexType, IntegerType, VectorType
from fabric_fixtures import corr, make_op


def accepted_values(rel):
    out = set()
    for v in range(1 << rel.encoded_bit_count):
        try:
            rel.validate(v)
        except CodecError:
            continue
        out.add(v)
    return out


def image(rel, candidates):
    out = set()
    for a, c in candidates:
        if supports(rel.op, a, c):
            out.add(rel.project(a, c))
    return out


# --- TokenConstant ---------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(cap=st.integers(1, 6), port=st.integers(1, 8))
def test_token_constant_image_is_the_complete_carrier(cap, port):
    op = make_op("TokenConstant", ["dataflow.constant"], {"max_payload_bits": cap}, ["bits<0>"], [f"bits<{port}>"])
    rel = derive_relation(op)
    n = min(cap, port)
    assert rel.encoded_bit_count == n
    cands = []
    for w in range(1, n + 1):
        for lanes in range(0, n // w + 1):
            t = IntegerType(w) if lanes == 0 else VectorType((lanes,), IntegerType(w))
            for raw in range(1 << (w * max(lanes, 1))):
                value = raw if lanes == 0 else [(raw >> (i * w)) & ((1 << w) - 1) for i in range(lanes)]
                cands.append((make_actor("dataflow.constant", [make_none()], [t], value=value), None))
    assert image(rel, cands) == accepted_values(rel) == set(range(1 << n))


def make_none():
    from fabric.types import NoneType
    return NoneType()


# --- FixedVectorSliceAlignMerge -----------------------------------------------------------------

def shapes(max_elems: int, max_rank: int):
    """Every shape (dims >= 1) of rank 1..max_rank with at most max_elems elements."""
    def rec(prefix, left):
        if prefix:
            yield tuple(prefix)
        if len(prefix) == max_rank:
            return
        for d in range(1, left + 1):
            yield from rec(prefix + [d], left // d)
    yield from rec([], max_elems)


def slice_candidates(op_list, elems, cap, max_dyn, index_widths, max_rank):
    for e in elems:
        for shape in shapes(cap // e, max_rank):
            vec = VectorType(shape, IntegerType(e))
            for k in range(1, len(shape) + 1):
                choices = [list(range(d)) + ["dynamic"] for d in shape[:k]]
                for pos in itertools.product(*choices):
                    ndyn = pos.count("dynamic")
                    if ndyn > max_dyn:
                        continue
                    tail = shape[k:]
                    sl = vec.element if not tail else VectorType(tail, vec.element)
                    idx = [IndexType()] * ndyn
                    for w in (index_widths if ndyn else [None]):
                        if "vector.extract" in op_list:
                            a = make_actor("vector.extract", [vec, *idx], [sl], static_position=list(pos))
                            yield a, corr([0] + [2 + i for i in range(ndyn)], [0], w)
                        if "vector.insert" in op_list:
                            a = make_actor("vector.insert", [sl, vec, *idx], [vec], static_position=list(pos))
                            yield a, corr([0, 1] + [2 + i for i in range(ndyn)], [0], w)


@settings(max_examples=10, deadline=None)
@given(op_list=st.sampled_from([["vector.extract"], ["vector.insert"], ["vector.extract", "vector.insert"]]),
       elems=st.sampled_from([[1], [1, 8], [8]]),
       container=st.sampled_from([2, 3, 4, 8]),
       slice_frac=st.integers(1, 4),
       rank=st.integers(0, 2),
       port0=st.integers(1, 8), port1=st.integers(1, 8), out=st.integers(1, 8),
       pos_ports=st.sampled_from([[32, 32], [64, 32], [16, 64]]),
       resolved=st.sampled_from([[32], [64], [32, 64]]))
def test_slice_validator_accepts_exactly_the_projector_image(op_list, elems, container, slice_frac, rank,
                                                             port0, port1, out, pos_ports, resolved):
    max_slice = max(1, container * slice_frac // 4)
    params = {"integer_element_widths": elems, "float_element_formats": [], "max_container_payload_bits": container,
              "max_slice_payload_bits": max_slice, "max_dynamic_position_rank": rank,
              "resolved_index_widths": resolved if rank else []}
    ins = [f"bits<{port0}>", f"bits<{port1}>"] + [f"bits<{w}>" for w in pos_ports[:rank]]
    op = make_op("FixedVectorSliceAlignMerge", op_list, params, ins, [f"bits<{out}>"])
    rel = derive_relation(op)
    cap = max(container, port0, port1, out)  # enumerate beyond the capacity: supports() must reject the rest
    cands = slice_candidates(op_list, elems, min(cap, 8), rank, resolved, max_rank=5)
    assert image(rel, cands) == accepted_values(rel)


# --- FixedVectorShuffle ------------------------------------------------------------------------------

def shuffle_candidates(elems, max_block, max_source, max_result):
    for e in elems:
        for b in range(e, max_block + 1, e):
            trail = () if b == e else (b // e,)
            for left in range(1, max_source + 1):
                for right in range(1, max_source - left + 2):
                    v1 = VectorType((left,) + trail, IntegerType(e))
                    v2 = VectorType((right,) + trail, IntegerType(e))
                    for r in range(1, max_result + 1):
                        res = VectorType((r,) + trail, IntegerType(e))
                        for mask in itertools.product(range(-1, left + right), repeat=r):
                            yield make_actor("vector.shuffle", [v1, v2], [res], mask=list(mask)), None


@settings(max_examples=10, deadline=None)
@given(widths=st.sampled_from([[1], [8], [1, 8]]),
       block=st.sampled_from([1, 2, 3, 4, 8]), sources=st.integers(2, 4), results=st.integers(1, 3),
       op_cap=st.integers(2, 16), res_cap=st.integers(1, 16),
       p0=st.integers(1, 16), p1=st.integers(1, 16), po=st.integers(1, 16))
def test_shuffle_validator_accepts_exactly_the_projector_image(widths, block, sources, results, op_cap, res_cap,
                                                               p0, p1, po):
    params = {"integer_element_widths": widths, "float_element_formats": [],
              "max_operand_payload_bits": op_cap, "max_result_payload_bits": res_cap,
              "max_block_payload_bits": block, "max_source_blocks": sources, "max_result_blocks": results}
    op = make_op("FixedVectorShuffle", ["vector.shuffle"], params, [f"bits<{p0}>", f"bits<{p1}>"], [f"bits<{po}>"])
    rel = derive_relation(op)
    cands = shuffle_candidates(widths, block, sources, results)
    assert image(rel, cands) == accepted_values(rel)

"""Direct semantic-field relations: one fixed-width canonical bit carrier per resource.

Each carrier is a list of fields packed LSB-first (field 0 at carrier bit 0), widths derived
only from typed capability maxima.  `project` maps an admitted actor to its carrier value,
`validate` is the sealed exact domain validator (the projector's image, never the whole
2^n range unless the seed says so), `encode`/`decode` are the canonical byte codec.
"""
from __future__ import annotations

from dataclasses import dataclass

from .atoms import FLOAT_FORMATS
from .capability import FabricOp, PortCorrespondence, constant_carrier_bits, default_correspondence, supports
from .codec import (U32_MAX, CodecError, cardinality_bits, checked, decode_carrier, encode_carrier,
                    inclusive_bits, pack_fields, unpack_fields)
from .errors import Diagnostic, DiagnosticCode, FabricError, UnsupportedActor
from .schemas import Actor, slice_geometry
from .types import VectorType, payload_bits


def _s(x):
    return tuple(x) if x else ()


def element_widths(rec) -> set[int]:
    return set(_s(rec.integer_element_widths)) | {FLOAT_FORMATS[f] for f in _s(rec.float_element_formats)}


@dataclass
class DirectRelation:
    op: FabricOp
    fields: list  # [(name, width)]
    kind: str = "Direct"

    @property
    def encoded_bit_count(self) -> int:
        return sum(w for _, w in self.fields)

    def widths(self) -> list[int]:
        return [w for _, w in self.fields]

    def encode(self, value: int) -> bytes:
        self.validate(value)
        return encode_carrier(value, self.encoded_bit_count)

    def decode(self, data: bytes) -> int:
        value = decode_carrier(data, self.encoded_bit_count)
        self.validate(value)
        return value

    def _admit(self, a: Actor, corr):
        v = supports(self.op, a, corr)
        if not v:
            raise UnsupportedActor(v)
        return corr or default_correspondence(self.op, a)

    def summary(self, full: bool = False) -> list[str]:
        lines, lo = [], 0
        for name, w in self.fields:
            lines.append(f"bits [{lo}, {lo + w}) {name}" if w else f"(0 bits) {name}")
            lo += w
        return [f"encoded_bit_count={self.encoded_bit_count}"] + lines


def _check_width(op, fields):
    total = sum(w for _, w in fields)
    if total > U32_MAX:
        raise FabricError(Diagnostic(DiagnosticCode.ArithmeticOverflow, op.path + ".hw_params",
                                     f"carrier width {total} overflows u32"))


# --- TokenConstant -------------------------------------------------------------------------------

class TokenConstantRelation(DirectRelation):
    """Complete N-bit domain, N = min(max_payload_bits, physical result role 0 width)."""

    def project(self, a: Actor, corr: PortCorrespondence | None = None) -> int:
        self._admit(a, corr)
        t, v = a.results[0], a.attr("value")
        if isinstance(t, VectorType):  # dense lane zero least significant, never sign-extended
            w = t.element.width
            return sum(x << (i * w) for i, x in enumerate(v))
        return v  # scalar raw bits (signed zero and NaN payloads included)

    def validate(self, value: int) -> None:
        if not 0 <= value < (1 << self.encoded_bit_count):
            raise CodecError(f"TokenConstant value does not fit {self.encoded_bit_count} bits")


# --- FixedVectorSliceAlignMerge ---------------------------------------------------------------------

MODE = {"vector.extract": 0, "vector.insert": 1}


class SliceRelation(DirectRelation):
    @property
    def rec(self):
        return self.op.hw_params

    @property
    def has_mode(self) -> bool:
        return all(s in self.op.op_list for s in MODE)

    def project(self, a: Actor, corr: PortCorrespondence | None = None) -> int:
        self._admit(a, corr)
        container = a.inputs[0] if a.schema == "vector.extract" else a.inputs[1]
        _, b, static, dyn = slice_geometry(container, a.attr("static_position"))
        rank = self.rec.max_dynamic_position_rank
        vals = ([MODE[a.schema]] if self.has_mode else []) + [static, b - 1] + list(dyn) + [0] * (rank - len(dyn))
        return pack_fields(list(zip(vals, self.widths())))

    def decode_fields(self, value: int):
        vals = unpack_fields(value, self.widths())
        if self.has_mode:
            mode = "vector.insert" if vals.pop(0) else "vector.extract"
        else:
            mode = next(s for s in MODE if s in self.op.op_list)
        return mode, vals[0], vals[1] + 1, vals[2:]

    def validate(self, value: int) -> None:
        if not 0 <= value < (1 << self.encoded_bit_count):
            raise CodecError("slice carrier value does not fit the carrier")
        mode, o, b, strides = self.decode_fields(value)
        rec, op = self.rec, self.op
        n = next((i for i, s in enumerate(strides) if s == 0), len(strides))
        s_prefix = strides[:n]
        if any(strides[n:]):
            raise CodecError("a stride slot after the nonzero prefix is nonzero")
        if not any(b % e == 0 for e in element_widths(rec)):
            raise CodecError(f"no admitted element width divides the slice width {b}")
        if o % b:
            raise CodecError(f"static offset {o} is not a multiple of the slice width {b}")
        for prev, cur in zip(s_prefix, s_prefix[1:]):
            if prev % cur:
                raise CodecError(f"stride {cur} does not divide its predecessor {prev}")
        if s_prefix and s_prefix[-1] % b:
            raise CodecError(f"the last stride {s_prefix[-1]} is not a multiple of the slice width {b}")
        g = s_prefix[0] if s_prefix else b
        try:
            container = checked(checked(o // g + 1) * g, what="minimum container width")
        except CodecError:
            raise
        ins = [p.width for p in op.inputs]
        if mode == "vector.extract":
            limits = [(container, rec.max_container_payload_bits, "container capacity"),
                      (container, ins[0], "input role 0"), (b, rec.max_slice_payload_bits, "slice capacity"),
                      (b, op.results[0].width, "result role 0")]
        else:
            limits = [(b, rec.max_slice_payload_bits, "slice capacity"), (b, ins[0], "input role 0"),
                      (container, rec.max_container_payload_bits, "container capacity"),
                      (container, ins[1], "input role 1"), (container, op.results[0].width, "result role 0")]
        for need, cap, what in limits:
            if need > cap:
                raise CodecError(f"{mode}: width {need} does not fit the {what} ({cap})")
        if s_prefix:
            room = min(ins[2:2 + len(s_prefix)])
            if not any(w <= room for w in _s(rec.resolved_index_widths)):
                raise CodecError("no admitted resolved index width fits every used position role")


# --- FixedVectorShuffle ------------------------------------------------------------------------------

class ShuffleRelation(DirectRelation):
    @property
    def rec(self):
        return self.op.hw_params

    def project(self, a: Actor, corr: PortCorrespondence | None = None) -> int:
        self._admit(a, corr)
        v1, r = a.inputs[0], a.results[0]
        b = payload_bits(v1) // v1.shape[0]
        mask = a.attr("mask")
        # poison -> selector zero (a defined source refines poison); padding slots -> zero
        sel = [m if m >= 0 else 0 for m in mask] + [0] * (self.rec.max_result_blocks - len(mask))
        vals = [b - 1, v1.shape[0] - 1, r.shape[0] - 1] + sel
        return pack_fields(list(zip(vals, self.widths())))

    def decode_fields(self, value: int):
        vals = unpack_fields(value, self.widths())
        return vals[0] + 1, vals[1] + 1, vals[2] + 1, vals[3:]

    def validate(self, value: int) -> None:
        if not 0 <= value < (1 << self.encoded_bit_count):
            raise CodecError("shuffle carrier value does not fit the carrier")
        rec, op = self.rec, self.op
        b, left, r, sel = self.decode_fields(value)
        if r > rec.max_result_blocks:
            raise CodecError(f"result count {r} exceeds max_result_blocks {rec.max_result_blocks}")
        if any(s >= rec.max_source_blocks for s in sel[:r]):
            raise CodecError("a selector over-codes beyond max_source_blocks")
        if any(sel[r:]):
            raise CodecError("a selector slot after the result count is nonzero")
        if not any(b % e == 0 for e in element_widths(rec)):
            raise CodecError(f"no admitted element width divides the block width {b}")
        if b > rec.max_block_payload_bits:
            raise CodecError(f"block width {b} exceeds max_block_payload_bits")
        nmin = max(left + 1, max(sel[:r]) + 1)
        q = nmin - left
        if nmin > rec.max_source_blocks:
            raise CodecError(f"{nmin} source blocks exceed max_source_blocks")
        need = [(checked(left * b), op.inputs[0].width, rec.max_operand_payload_bits, "input 0"),
                (checked(q * b), op.inputs[1].width, rec.max_operand_payload_bits, "input 1"),
                (checked(r * b), op.results[0].width, rec.max_result_payload_bits, "result 0")]
        for bits_, port, cap, what in need:
            if bits_ > min(port, cap):
                raise CodecError(f"{bits_} bits do not fit {what} ({min(port, cap)})")


MAX_DIRECT_FIELDS = 4096  # implementation limit: selector slots / dynamic stride slots


def derive_direct(op: FabricOp) -> DirectRelation:
    rec = op.hw_params
    slots = getattr(rec, "max_result_blocks", None) or getattr(rec, "max_dynamic_position_rank", None) or 0
    if slots > MAX_DIRECT_FIELDS:
        raise FabricError(Diagnostic(DiagnosticCode.CapacityLimit, op.path + ".hw_params",
                                     f"{slots} carrier slots exceed the limit of {MAX_DIRECT_FIELDS}"))
    if op.family == "TokenConstant":
        n = constant_carrier_bits(op)
        if n <= 0:
            raise FabricError(Diagnostic(DiagnosticCode.EmptyBehaviorImage, op.path,
                                         "TokenConstant needs a positive carrier width"))
        return TokenConstantRelation(op, [("value", n)])
    if op.family == "FixedVectorSliceAlignMerge":
        fields = ([("mode", 1)] if all(s in op.op_list for s in MODE) else [])
        fields += [("static_offset_bits", cardinality_bits(rec.max_container_payload_bits)),
                   ("slice_width_minus_one", cardinality_bits(rec.max_slice_payload_bits))]
        fields += [(f"dynamic_stride_bits[{i}]", inclusive_bits(rec.max_container_payload_bits))
                   for i in range(rec.max_dynamic_position_rank)]
        _check_width(op, fields)
        return SliceRelation(op, fields)
    if op.family == "FixedVectorShuffle":
        sel_bits = cardinality_bits(rec.max_source_blocks)
        if rec.max_result_blocks * sel_bits > U32_MAX:
            raise FabricError(Diagnostic(DiagnosticCode.ArithmeticOverflow, op.path + ".hw_params",
                                         "selector array width overflows u32"))
        fields = [("block_width_minus_one", cardinality_bits(rec.max_block_payload_bits)),
                  ("left_block_count_minus_one", sel_bits),
                  ("result_block_count_minus_one", cardinality_bits(rec.max_result_blocks))]
        fields += [(f"selectors[{i}]", sel_bits) for i in range(rec.max_result_blocks)]
        _check_width(op, fields)
        return ShuffleRelation(op, fields)
    raise AssertionError(op.family)

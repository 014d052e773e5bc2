"""Errors of the VCG layer: where a mapping is malformed, and which VCG rule a placement breaks.

`MappingError` points at a character range of the text it came from (column + caret).
`VcgError` names the rule from `RULES`, the one table of everything the VCG cannot express.
"""
from __future__ import annotations


CARET_WINDOW = 80          # characters of source text a caret line shows at most


class MappingError(ValueError):
    """Malformed axis declaration or mapping expression, located in its source text."""

    def __init__(self, message: str, text: str = "", pos: int = 0, length: int = 1, where: str = ""):
        self.message = message
        self.text = text
        self.pos = max(0, min(pos, len(text)))
        self.length = max(1, length)
        self.where = where          # e.g. "Slice", "axes"
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.where} " if self.where else ""
        return f"{where}column {self.pos + 1}: {self.message}"

    def caret(self) -> str:
        """Two lines: the source text and a caret under the offending token.  A long text is
        cut to a window of CARET_WINDOW characters around the token, and unprintable
        characters show as '?', so neither a 100 KB expression nor control bytes reach the
        terminal (the column in the message stays exact)."""
        text, pos = self.text, self.pos
        lead = tail = ""
        if len(text) > CARET_WINDOW:
            start = max(0, min(pos - CARET_WINDOW // 3, len(text) - CARET_WINDOW))
            lead = "..." if start else ""
            tail = "..." if start + CARET_WINDOW < len(text) else ""
            text, pos = text[start:start + CARET_WINDOW], pos - start
        text = "".join(c if c.isprintable() else "?" for c in text)
        width = max(1, min(self.length, len(text) - pos))
        return f"  {lead}{text}{tail}\n  {' ' * (len(lead) + pos)}{'^' * width}"

    def pretty(self) -> str:
        return f"{self}\n{self.caret()}"


# Every placement the VCG cannot express, one row each: code -> (seed section, why).
RULES: dict[str, tuple[str, str]] = {
    "reduce-axis": ("REDUCE_LABEL",
                    "the reduce axis must be declared, placed, and placed completely "
                    "(every digit of R # PADDED_SIZE exactly once)"),
    "incomplete-axis": ("Constraints",
                        "a tracked padded axis must be placed completely so that its index is "
                        "reconstructible from slice id and time step"),
    "packet-major": ("R in Packet, Complex",
                     "R's Packet sub-expression must be its minor-most one (R # PADDED_SIZE % "
                     "packet_span); a major R factor in Packet breaks the contiguous prefix"),
    "packet-shared": ("R in Packet, Complex",
                      "Packet must be m![R # PADDED_SIZE % packet_span # 8]: another axis (or a "
                      "second R factor, or padding before R) sharing Packet breaks the prefix count"),
    "packet-track": ("Constraints",
                     "only R's Packet part can be tracked (by the packet clipper); a time filter "
                     "cannot track an axis that also lies in Packet"),
    "slice-packet": ("R in Slice and Packet",
                     "R split between Slice and Packet needs a slice-dependent count unless "
                     "R::SIZE % packet_span == 0"),
    "slice-order": ("R in Slice, Out of Order",
                    "within Slice, sub-expressions of a tracked axis must appear in descending "
                    "stride order (major before minor)"),
    "slice-pow2": ("R in Slice and Time",
                   "each Slice sub-expression of a tracked axis needs a power-of-2 size at a "
                   "power-of-2 slice-id stride so that it is a contiguous run of slice_mask bits"),
    "slice-mask-width": ("TimeFilterConfig",
                         "slice_mask is a u32: tracked Slice sub-expressions must lie in slice-id bits 0..31"),
    "field-width": ("TimeFilterConfig",
                    "slice_thres, time_thres, axis_size, packet_span and sequencer sizes/strides are u32"),
    "interleave": ("R in Slice and Time, Interleaved",
                   "Slice sub-expressions must be all more major (SliceMajor) or all more minor "
                   "(TimeMajor) than the Time sub-expressions; an interleave needs per-slice counts"),
    "timemajor-overpad": ("R in Slice and Time, Over-padded",
                          "TimeMajor requires PADDED_SIZE - SIZE <= slice_span"),
    "dim-padding": ("R in Slice and Time",
                    "padding after a split (e # n on a strided/modulo term) is only expressible on "
                    "the major-most sub-expression of a tracked axis in SliceMajor or Time-only "
                    "placements, or on R's Packet sub-expression"),
    "filter-count": ("Constraints",
                     "at most 3 time filters: R (if it needs one) plus the padded non-reduce axes"),
    "sequencer-capacity": ("Constraints",
                           "a time filter or packet clipper sequencer holds at most 8 entries"),
    "narrow-trim": ("Downstream 4-Way Operations",
                    "vector_narrow_trim needs a static guarantee that flit lanes 4..7 hold no real "
                    "data (v <= 4)"),
    "widen-concat": ("Downstream 4-Way Operations",
                     "vector_widen_concat needs halves with the prefix property (v_high > 0 only if v_low == 4)"),
}


class VcgError(ValueError):
    """A placement the VCG cannot express (or a request it cannot honour); `rule` keys RULES."""

    def __init__(self, rule: str, detail: str):
        if rule not in RULES:
            raise KeyError(f"unknown VCG rule {rule!r}")
        self.rule = rule
        self.detail = detail
        super().__init__(str(self))

    def __str__(self) -> str:
        section, why = RULES[self.rule]
        return f"inexpressible [{self.rule}] ({section}): {self.detail} -- {why}"

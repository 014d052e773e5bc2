"""Typed diagnostics of the fabric capability model.

Every rejection carries one `DiagnosticCode` (a closed vocabulary: tests and tools match on
the code, never on message text), the path of the offending element inside the fabric
description, and a one-line reason.  Nothing in `fabric` reports a failure any other way.
"""
from __future__ import annotations

import enum
from decimal import Decimal
from dataclasses import dataclass


class DiagnosticCode(enum.Enum):
    # verifier: identity and membership
    MissingImplementationFamily = "the fabric.op names no ImplementationFamilyId (it is never inferred)"
    UnknownImplementationFamily = "the ImplementationFamilyId is not registered"
    UnknownOperationSchema = "an op_list member is not a registered OperationSchemaId"
    OpListMemberOutsideFamily = "an op_list member is outside the selected implementation family"
    MemberNotEnabled = "an HSG member used by matching is not enabled by this concrete resource"
    # verifier: parameter relation
    UninterpretedParameterDomain = "a parameter domain that no listed operation schema interprets"
    DuplicateDeclaration = "a declaration appears twice"
    OrphanDeclaration = "a declaration no admitted actor can use"
    IncompleteRelation = "the family/parameter/port/constraint relation is incomplete"
    PortKindMismatch = "bits and bits_tag are exchanged implicitly"
    InvalidFloatBehaviorProfile = "a FloatBehaviorProfile outside the registered admission rules"
    InvalidAccuracyContract = "a non-correctly-rounded accuracy guarantee without afn in required_fast_math"
    PointerFormatRelationNotEmpty = "the scalar integer pointer-format relation must be empty"
    InvalidPointerLayout = "a module PointerLayout(AS) that is not a stable-integral layout"
    GepFailClosed = "a capability enabling llvm.getelementptr cannot finalize its semantic-field relation"
    EmptyBehaviorImage = "no admitted actor reaches this concrete resource"
    DuplicateConfiguredFunction = "two semantic assignments of one resource materialize isomorphic configured functions"
    ArithmeticOverflow = "checked carrier arithmetic overflowed"
    CapacityLimit = "a capacity beyond this model's documented implementation limits"
    # topology
    UnknownValue = "an SSA reference names no value"
    DuplicateName = "two nodes or values share one name"
    ImplicitTokenSink = "an inactive op, an unselected mux input or an unbound lane would sink a token"
    IncoherentRoute = "the selected routes do not form one coherent branch"
    EdgeAbsorbedByColocation = "an edge is claimed internal without a configured-FU, configured-memory or register-file witness"
    InvalidWitness = "a configured-memory or register-file witness does not prove the edge it is named for"
    BoundaryMismatch = "a mapped value does not cross the FU boundary where the selected template wires it"
    InvalidContext = "an InstructionContextRef outside the PE's resident contexts"
    PortWidthInsufficient = "a selected path segment is narrower than the exact semantic width"
    # configuration handoff
    UnsupportedActor = "the concrete capability does not support the actor under its correspondence"
    ConflictingAssignment = "two selections project unequal values into one physical slot"
    NonemptyPhysicalRefinement = "a physical-refinement assignment of a kind with no typed owner (value type, codec, preservation proof)"
    UnprovenRefinement = "a refinement domain whose semantic-preservation proof does not hold for this resource"
    UnknownReference = "a mapping names an FU, op, template or use that does not exist"
    CapabilityInadmissible = "a required activity-definedness proof is missing"
    Unsupported = "the resource contract is not the exact shape a portable provider admits"


@dataclass(frozen=True)
class Diagnostic:
    code: DiagnosticCode
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.code.name}: {self.message}"


class FabricError(Exception):
    """Raised by loaders and strict APIs; carries one or more diagnostics."""

    def __init__(self, diagnostics):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("; ".join(str(d) for d in self.diagnostics))


class CodecError(ValueError):
    """A canonical byte string or direct carrier value is not in its exact domain."""


class FormatError(ValueError):
    """A fabric description file is malformed: `path` locates the element, message says why."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}")


def json_kind(v) -> str:
    """How a FormatError names the JSON kind of a value."""
    if isinstance(v, Decimal):     # a JSON number with a fraction or exponent (jsonread floats=Decimal)
        return "a number"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "an integer", float: "a number"}.get(type(v), type(v).__name__)


def closed_object(v, path: str, required=(), optional=(), what: str = "") -> dict:
    """`v` as a JSON object with every `required` key and no key outside required + optional;
    `what` names the record in the messages (e.g. a hw_params record class)."""
    of = f" of {what}" if what else ""
    if not isinstance(v, dict):
        raise FormatError(path, f"expected an object{of}, found {json_kind(v)}")
    allowed = set(required) | set(optional)
    for k in v:
        if k not in allowed:
            raise FormatError(f"{path}.{k}", f"unknown field{of} (allowed: {', '.join(sorted(allowed))})")
    for k in required:
        if k not in v:
            raise FormatError(path, f"missing required field {k!r}{of}")
    return v


class UnsupportedActor(ValueError):
    """An actor the concrete capability does not support under its correspondence (the verdict
    says why).  It lives here, below relation.py and direct.py, because both raise it."""

    def __init__(self, verdict):
        self.verdict = verdict
        super().__init__(f"{verdict.rejection.name}: {verdict.message}")

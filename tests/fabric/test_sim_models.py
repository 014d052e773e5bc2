"""The cycle models added for issue 19 against models written here: floating actors in every
admitted rounding mode (exact rationals rounded by this file's own rounding), arith.remf as C
fmod (exact rationals), the ScalarMath* functions (mpmath at 200 bits, rounded here), the
rounding functions (exact rationals), and vector.extract / insert / shuffle (row-major indexing
on plain lists).  The kernels are the simulator's own (fabric.sim.semantics through the models);
one end-to-end graph per family checks the wiring."""
from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from fabric.schemas import make_actor
from fabric.sim.engine import Simulator
from fabric.sim.semantics import stateless_kernel
from fabric.types import parse_type
from sim_fixtures import load

# (precision p, minimum normal exponent, maximum exponent, exponent field bits)
FMT = {"f16": (11, -14, 15, 5), "bf16": (8, -126, 127, 8), "f32": (24, -126, 127, 8), "f64": (53, -1022, 1023, 11)}
NAN = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}
MODES = ("to_nearest_even", "downward", "upward", "toward_zero", "to_nearest_away")


def decode(bits: int, fmt: str):
    """A Fraction, ("inf", sign) or "nan"; a zero is (Fraction 0, sign) as ("zero", sign)."""
    p, emin, emax, eb = FMT[fmt]
    t = p - 1
    sign = bits >> (eb + t) & 1
    e = bits >> t & ((1 << eb) - 1)
    f = bits & ((1 << t) - 1)
    if e == (1 << eb) - 1:
        return "nan" if f else ("inf", sign)
    if e == 0 and f == 0:
        return ("zero", sign)
    mag = Fraction(f, 1 << t) * Fraction(2) ** emin if e == 0 else (1 + Fraction(f, 1 << t)) * Fraction(2) ** (e - (1 << (eb - 1)) + 1)
    return -mag if sign else mag


def encode(sign: int, e: int, m: int, fmt: str) -> int:
    """m an integer significand of p bits (normal) or fewer (subnormal, e = emin)."""
    p, emin, emax, eb = FMT[fmt]
    t = p - 1
    field = 0 if m < (1 << t) else e - emin + 1
    return sign << (eb + t) | field << t | (m & ((1 << t) - 1))


def inf_bits(sign, fmt):
    p, _, _, eb = FMT[fmt]
    return sign << (eb + p - 1) | ((1 << eb) - 1) << (p - 1)


def max_bits(sign, fmt):
    p, _, emax, _ = FMT[fmt]
    return encode(sign, emax, (1 << p) - 1, fmt)


def round_q(q: Fraction, fmt: str, mode: str) -> int:
    """The nonzero exact value q rounded once to `fmt` in `mode`."""
    p, emin, emax, _ = FMT[fmt]
    s = 1 if q < 0 else 0
    a = abs(q)
    E = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** E > a:
        E -= 1
    e = max(E, emin)
    m = a / Fraction(2) ** (e - p + 1)
    mi = m.numerator // m.denominator
    rem = m - mi
    up = {"to_nearest_even": rem > Fraction(1, 2) or (rem == Fraction(1, 2) and mi % 2 == 1),
          "to_nearest_away": rem >= Fraction(1, 2), "toward_zero": False,
          "upward": rem > 0 and not s, "downward": rem > 0 and bool(s)}[mode]
    mi += up
    if mi == 1 << p:
        mi, e = 1 << (p - 1), e + 1
    if e > emax:
        toward_inf = mode in ("to_nearest_even", "to_nearest_away") or (mode == "upward" and not s) or \
            (mode == "downward" and s)
        return inf_bits(s, fmt) if toward_inf else max_bits(s, fmt)
    return encode(s, e, mi, fmt)


def samples(fmt: str, n: int, rng) -> list:
    """Raw encodings: edge values (zeros, subnormals, the largest finite, ties) and random ones."""
    p, emin, emax, eb = FMT[fmt]
    edges = [0, 1 << (eb + p - 1), 1, 3, (1 << (p - 1)) - 1, 1 << (p - 1), max_bits(0, fmt), max_bits(1, fmt),
             encode(0, 0, 1 << (p - 1), fmt), encode(1, 0, 3 << (p - 2), fmt)]
    width = eb + p
    out = edges + [rng.getrandbits(width) for _ in range(n)]
    return [x for x in out if decode(x, fmt) != "nan" and not isinstance(decode(x, fmt), tuple) or
            decode(x, fmt)[0] == "zero"]


def value(x, fmt):
    d = decode(x, fmt)
    return Fraction(0) if isinstance(d, tuple) else d


def signbit(x, fmt):
    p, _, _, eb = FMT[fmt]
    return x >> (eb + p - 1) & 1


def expected_arith(schema, xs, fmt, mode):
    """IEEE 754 on finite operands: the exact result rounded once; an exact zero sum has the
    sign of both operands when they agree, else -0 rounding downward and +0 otherwise."""
    vals = [value(x, fmt) for x in xs]
    signs = [signbit(x, fmt) for x in xs]
    if schema == "arith.divf" and vals[1] == 0:
        return None                      # a zero divisor is a special lane: not this test's concern
    if schema == "arith.addf":
        q, terms = vals[0] + vals[1], (signs[0], signs[1])
    elif schema == "arith.subf":
        q, terms = vals[0] - vals[1], (signs[0], 1 - signs[1])
    elif schema == "arith.mulf":
        q, terms = vals[0] * vals[1], None
    elif schema == "arith.divf":
        q, terms = vals[0] / vals[1], None
    else:
        q, terms = vals[0] * vals[1] + vals[2], (signs[0] ^ signs[1], signs[2])
    if q != 0:
        return round_q(q, fmt, mode)
    p, _, _, eb = FMT[fmt]
    if terms is None:                    # a zero product or quotient: the sign of the operands
        return (signs[0] ^ signs[1]) << (eb + p - 1)
    neg = terms[0] & terms[1] if terms[0] == terms[1] else int(mode == "downward")
    return neg << (eb + p - 1)


def kernel(schema, ins, outs, family, **attrs):
    a = make_actor(schema, [parse_type(t) for t in ins], [parse_type(t) for t in outs], **attrs)
    k = stateless_kernel(a, family)
    return lambda *cols: k.fn(*(np.array(c, np.uint64) for c in cols))[0].tolist()


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("schema, family, arity", [("arith.addf", "ScalarFloatAddSub", 2),
                                                   ("arith.subf", "ScalarFloatAddSub", 2),
                                                   ("arith.mulf", "ScalarFloatMultiply", 2),
                                                   ("arith.divf", "ScalarFloatDivide", 2),
                                                   ("math.fma", "ScalarFloatFma", 3)])
def test_rounded_float_actors_in_every_mode_against_exact_rationals(schema, family, arity, fmt, mode):
    rng = random.Random(hash((schema, fmt, mode)) & 0xFFFF)
    pool = samples(fmt, 120, rng)
    cols = [[rng.choice(pool) for _ in range(300)] for _ in range(arity)]
    if schema in ("arith.addf", "arith.subf"):          # exact cancellations and zero sums
        cols[1][:20] = [c ^ (0 if schema == "arith.subf" else 1 << (FMT[fmt][3] + FMT[fmt][0] - 1)) for c in cols[0][:20]]
    f = kernel(schema, [fmt] * arity, [fmt], family, rounding_mode=mode)
    got = f(*cols)
    for i, xs in enumerate(zip(*cols)):
        want = expected_arith(schema, xs, fmt, mode)
        if want is not None:
            assert got[i] == want, (schema, fmt, mode, [hex(x) for x in xs], hex(got[i]), hex(want))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src, dst", [("f32", "f16"), ("f32", "bf16"), ("f64", "f32")])
def test_truncf_in_every_mode_against_exact_rationals(src, dst, mode):
    rng = random.Random(7)
    xs = samples(src, 400, rng)
    got = kernel("arith.truncf", [src], [dst], "ScalarFloatWidthCast", rounding_mode=mode)(xs)
    for x, g in zip(xs, got):
        q = value(x, src)
        want = round_q(q, dst, mode) if q != 0 else signbit(x, src) << (FMT[dst][3] + FMT[dst][0] - 1)
        assert g == want, (hex(x), hex(g), hex(want))


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
def test_remf_is_c_fmod_against_exact_rationals(fmt):
    """x - trunc(x / y) * y, exact, with the sign of x; not the ISA's floor modulo."""
    rng = random.Random(3)
    pool = samples(fmt, 200, rng)
    xs, ys = [rng.choice(pool) for _ in range(400)], [rng.choice(pool) for _ in range(400)]
    got = kernel("arith.remf", [fmt, fmt], [fmt], "ScalarFloatRemainder")(xs, ys)
    p, _, _, eb = FMT[fmt]
    for x, y, g in zip(xs, ys, got):
        a, b = value(x, fmt), value(y, fmt)
        if b == 0:
            assert g == NAN[fmt]
            continue
        r = a - math.trunc(a / b) * b
        want = round_q(r, fmt, "to_nearest_even") if r != 0 else signbit(x, fmt) << (eb + p - 1)
        assert g == want, (hex(x), hex(y))
    inf = inf_bits(0, fmt)
    one = round_q(Fraction(1), fmt, "to_nearest_even")
    assert kernel("arith.remf", [fmt, fmt], [fmt], "ScalarFloatRemainder")([inf, one], [one, inf]) == [NAN[fmt], one]


ROUNDINGS = {"math.floor": math.floor, "math.ceil": math.ceil, "math.trunc": math.trunc,
             "math.round": lambda q: math.floor(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1),
             "math.roundeven": round}


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("schema", sorted(ROUNDINGS))
def test_rounding_functions_against_exact_rationals(schema, fmt):
    rng = random.Random(11)
    xs = samples(fmt, 300, rng)
    p, _, _, eb = FMT[fmt]
    halves = [round_q(Fraction(k, 2), fmt, "to_nearest_even") for k in range(-9, 10) if k]
    xs += halves + [h | (1 << (eb + p - 1)) for h in halves]
    fam = "ScalarMath" + {"math.roundeven": "RoundEven"}.get(schema, schema[5:].capitalize())
    got = kernel(schema, [fmt], [fmt], fam, accuracy="correctly_rounded")(xs)
    for x, g in zip(xs, got):
        q = value(x, fmt)
        r = Fraction(ROUNDINGS[schema](q))
        want = round_q(r, fmt, "to_nearest_even") if r != 0 else signbit(x, fmt) << (eb + p - 1)
        assert g == want, (schema, hex(x), hex(g), hex(want))


MP = {"math.sin": mpmath.sin, "math.cos": mpmath.cos, "math.tan": mpmath.tan, "math.sinh": mpmath.sinh,
      "math.cosh": mpmath.cosh, "math.tanh": mpmath.tanh, "math.exp": mpmath.exp, "math.exp2": lambda x: 2 ** x,
      "math.expm1": mpmath.expm1, "math.log": mpmath.log, "math.log2": lambda x: mpmath.log(x, 2),
      "math.log10": mpmath.log10, "math.log1p": mpmath.log1p, "math.erf": mpmath.erf, "math.sqrt": mpmath.sqrt,
      "math.rsqrt": lambda x: 1 / mpmath.sqrt(x)}
FAMILY = {"math.expm1": "ScalarMathExpM1", "math.log1p": "ScalarMathLog1p", "math.log2": "ScalarMathLog2",
          "math.log10": "ScalarMathLog10", "math.exp2": "ScalarMathExp2"}


def _cr(fn, args, fmt):
    """fn correctly rounded (nearest even) from mpmath at 200 bits, or None outside the real domain."""
    with mpmath.workprec(200):
        try:
            y = fn(*(mpmath.mpf(a.numerator) / a.denominator for a in args))
        except (ValueError, ZeroDivisionError):
            return None
        if not isinstance(y, mpmath.mpf) or not mpmath.isfinite(y):
            return None
        if y == 0:
            return None
        m, e = mpmath.frexp(y)
        q = Fraction(int(mpmath.ldexp(m, 400)), 1) * Fraction(2) ** (e - 400)
    return round_q(q, fmt, "to_nearest_even")


def _domain(schema, fmt, rng, n):
    lo, hi = {"math.log": (1e-3, 1e3), "math.log2": (1e-3, 1e3), "math.log10": (1e-3, 1e3),
              "math.log1p": (-0.9, 1e3), "math.sqrt": (0, 1e4), "math.rsqrt": (1e-3, 1e3),
              "math.exp": (-30, 30), "math.exp2": (-30, 30), "math.expm1": (-20, 20), "math.sinh": (-20, 20),
              "math.cosh": (-20, 20)}.get(schema, (-10, 10))
    xs = np.array([rng.uniform(lo, hi) for _ in range(n)])
    if fmt == "bf16":
        return ((xs.astype(np.float32).view(np.uint32) >> 16) & 0xFFFF).astype(int).tolist()
    dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[fmt]
    return xs.astype(dt).view({"f16": np.uint16, "f32": np.uint32, "f64": np.uint64}[fmt]).astype(np.uint64).tolist()


@pytest.mark.parametrize("fmt", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("schema", sorted(MP))
def test_special_functions_are_correctly_rounded(schema, fmt):
    """Against mpmath (an implementation independent of MPFR and of kernels.numeric), rounded once
    to nearest even by this file: the simulator's results are correctly rounded."""
    rng = random.Random(hash((schema, fmt)) & 0xFFFF)
    xs = _domain(schema, fmt, rng, 60)
    fam = FAMILY.get(schema, "ScalarMath" + schema[5:].capitalize())
    got = kernel(schema, [fmt], [fmt], fam, accuracy="correctly_rounded")(xs)
    for x, g in zip(xs, got):
        want = _cr(MP[schema], [value(x, fmt)], fmt)
        if want is not None and value(x, fmt) != 0:
            assert g == want, (schema, fmt, hex(x), hex(g), hex(want))


@pytest.mark.parametrize("fmt", ["f16", "f32", "f64"])
def test_powf_is_correctly_rounded_and_keeps_its_special_cases(fmt):
    rng = random.Random(5)
    xs = _domain("math.log", fmt, rng, 60)
    ys = _domain("math.sin", fmt, rng, 60)
    f = kernel("math.powf", [fmt, fmt], [fmt], "ScalarMathPow", accuracy="correctly_rounded")
    for x, y, g in zip(xs, ys, f(xs, ys)):
        want = _cr(lambda a, b: a ** b, [value(x, fmt), value(y, fmt)], fmt)
        if want is not None:
            assert g == want, (hex(x), hex(y))
    one = round_q(Fraction(1), fmt, "to_nearest_even")
    # pow(x, +-0) = 1 even for a NaN x; pow(1, y) = 1 even for a NaN y (C99 Annex F)
    assert f([NAN[fmt], one], [0, NAN[fmt]]) == [one, one]


def test_a_two_ulp_resource_runs_a_two_ulp_actor_correctly_rounded():
    """Admission: guarantee <= accepted maximum, afn required; a correctly rounded result is
    within two ulps, so it refines the actor."""
    from fabric.io import load_document
    from fabric.sim.graph import load_graph_document
    from fabric.sim.synth import configured_fabric, graph_document

    sin = ("s", "math.sin", ["f32"], ["f32"], {"accuracy": "max_2ulp", "fastmath": ["afn"]})
    fab = configured_fabric("fab", [sin])
    hw = fab["fus"][0]["nodes"][0]["hw_params"]
    hw["accuracy_guarantee"], hw["behavior"]["required_fast_math"] = "max_2ulp", ["afn"]
    x = [int(np.float32(v).view(np.uint32)) for v in (0.5, 1.0, 2.0)]
    g = load_graph_document(graph_document("g", "fab", [sin], [], [("x", ["s.0"], x)], [("y", "s.0")]),
                            load_document(fab))
    res = Simulator(g).run(20)
    assert res.outputs["y"] == [_cr(mpmath.sin, [Fraction(float(np.uint32(v).view(np.float32)))], "f32") for v in x]


# --- vector.extract / insert / shuffle ---------------------------------------------------------------

def _lanes(v, shape):
    """A flat lane list as nested lists of `shape` (row-major)."""
    if len(shape) == 1:
        return list(v)
    step = len(v) // shape[0]
    return [_lanes(v[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _flat(x):
    return [y for z in x for y in _flat(z)] if isinstance(x, list) else [x]


def _slice_case(rng):
    shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
    elem = rng.choice(["i8", "i16", "f16"])
    k = rng.randint(1, len(shape))
    pos = [rng.choice(["dynamic", rng.randrange(d)]) for d in shape[:k]]
    vt = f"vector<{'x'.join(map(str, shape))}x{elem}>"
    tail = shape[k:]
    st = elem if not tail else f"vector<{'x'.join(map(str, tail))}x{elem}>"
    return shape, elem, pos, vt, st


@pytest.mark.parametrize("seed", range(12))
def test_vector_extract_and_insert_against_row_major_indexing(seed):
    rng = random.Random(seed)
    shape, elem, pos, vt, st = _slice_case(rng)
    ew = 8 if elem == "i8" else 16
    n = math.prod(shape)
    dyn = [i for i, p in enumerate(pos) if p == "dynamic"]
    vecs = [[rng.randrange(1 << ew) for _ in range(n)] for _ in range(5)]
    idx = [[rng.randrange(shape[i] + 1) for _ in range(5)] for i in dyn]      # one past the end: poison
    tail = shape[len(pos):]
    m = math.prod(tail)
    slices = [[rng.randrange(1 << ew) for _ in range(m)] if tail else rng.randrange(1 << ew) for _ in range(5)]

    def where(k):
        p = [idx[dyn.index(i)][k] if q == "dynamic" else q for i, q in enumerate(pos)]
        if any(a >= d for a, d in zip(p, shape)):
            return None
        flat = 0
        for a, d in zip(p + [0] * len(tail), shape):
            flat = flat * d + a
        return flat

    ex = ("x", "vector.extract", [vt] + ["index"] * len(dyn), [st], {"static_position": pos})
    ins = ("i", "vector.insert", [st, vt] + ["index"] * len(dyn), [vt], {"static_position": pos})
    g = load([ex, ins], [], [("v", ["x.0", "i.1"], vecs), ("s", ["i.0"], slices)]
             + [(f"p{j}", [f"x.{1 + j}", f"i.{2 + j}"], idx[j]) for j in range(len(dyn))],
             [("ex", "x.0"), ("in", "i.0")])
    res = Simulator(g).run(200)
    assert res.status == "complete"
    for k in range(5):
        w = where(k)
        if w is None:          # out of range: extract reads zero, insert changes nothing
            want_ex = [0] * m if tail else 0
            want_in = vecs[k]
        else:
            want_ex = vecs[k][w:w + m] if tail else vecs[k][w]
            want_in = list(vecs[k])
            want_in[w:w + m] = slices[k] if tail else [slices[k]]
        assert res.outputs["ex"][k] == (tuple(want_ex) if tail else want_ex)
        assert list(res.outputs["in"][k]) == want_in


@pytest.mark.parametrize("seed", range(10))
def test_vector_shuffle_against_list_indexing(seed):
    """Result block r is block mask[r] of v1's blocks followed by v2's; a poison entry (-1) is
    block 0 (a defined source refines poison)."""
    rng = random.Random(seed)
    trail = [rng.randint(1, 3)] if rng.random() < 0.5 else []
    L1, L2, R = rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 5)
    elem = rng.choice(["i8", "i16"])
    ew = 8 if elem == "i8" else 16
    bl = math.prod(trail) if trail else 1
    t = lambda n: f"vector<{'x'.join(map(str, [n] + trail))}x{elem}>"    # noqa: E731
    mask = [rng.choice([-1] + list(range(L1 + L2))) for _ in range(R)]
    sh = ("s", "vector.shuffle", [t(L1), t(L2)], [t(R)], {"mask": mask})
    a = [[rng.randrange(1 << ew) for _ in range(L1 * bl)] for _ in range(4)]
    b = [[rng.randrange(1 << ew) for _ in range(L2 * bl)] for _ in range(4)]
    res = Simulator(load([sh], [], [("a", ["s.0"], a), ("b", ["s.1"], b)], [("y", "s.0")])).run(50)
    for k in range(4):
        blocks = [a[k][i * bl:(i + 1) * bl] for i in range(L1)] + [b[k][i * bl:(i + 1) * bl] for i in range(L2)]
        want = [x for m in mask for x in blocks[max(m, 0)]]
        assert list(res.outputs["y"][k]) == want


# --- pointer payloads on the token plane (seed: "A pointer payload also requires the exact
# module-derived stable-integral PointerLayout(AS) and port capacity for all representation_bits")

def _pointer_graph(actor, inputs, outputs, layout=True):
    from fabric.io import load_document
    from fabric.sim.graph import load_graph_document
    from fabric.sim.synth import configured_fabric, graph_document
    as_i64 = tuple([t.replace("ptr<1>", "i64") for t in x] if isinstance(x, list) else x for x in actor)
    fab = configured_fabric("fab", [as_i64])        # 64-bit ports and capacity, then the pointer actor
    u = fab["mapping"]["uses"][0]["actor"]
    u["inputs"], u["results"] = actor[2], actor[3]
    if layout:
        fab["mapping"]["pointer_layouts"] = [{"address_space": 1, "representation_bits": 64, "address_bits": 48,
                                              "kind": "stable_integral"}]
    return load_graph_document(graph_document("g", "fab", [actor], [], inputs, outputs), load_document(fab))


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_carry_and_invariant_transport_all_64_representation_bits_of_a_pointer(engine):
    from fabric.sim.engine import Simulator
    top = (1 << 64) - 1          # above the 48 address bits: transported unchanged, not masked
    carry = ("c", "dataflow.carry", ["i1", "ptr<1>", "ptr<1>"], ["ptr<1>"], {})
    g = _pointer_graph(carry, [("k", ["c.0"], [1, 0]), ("i", ["c.1"], [5]), ("n", ["c.2"], [top])], [("y", "c.0")])
    res = Simulator(g, engine).run(100)
    assert res.status == "complete" and res.outputs["y"] == [5, top]      # init, then the carried next value
    inv = ("v", "dataflow.invariant", ["i1", "ptr<1>"], ["ptr<1>"], {})
    g = _pointer_graph(inv, [("k", ["v.0"], [1, 1, 0]), ("i", ["v.1"], [top - 1])], [("y", "v.0")])
    res = Simulator(g, engine).run(100)
    assert res.status == "complete" and res.outputs["y"] == [top - 1] * 3   # one per iteration: first, 1, 1


def test_a_pointer_payload_without_its_layout_is_one_fabric_diagnostic():
    from fabric.sim.graph import GraphCode, GraphError
    carry = ("c", "dataflow.carry", ["i1", "ptr<1>", "ptr<1>"], ["ptr<1>"], {})
    with pytest.raises(GraphError) as exc:
        _pointer_graph(carry, [("k", ["c.0"], [0]), ("i", ["c.1"], [5]), ("n", ["c.2"], [])], [("y", "c.0")], layout=False)
    (d,) = exc.value.diagnostics
    assert d.code is GraphCode.FabricInvalid and "PointerLayout(1)" in str(d) and "\n" not in str(d)


# --- physical refinements: the cycle models do not retime, so a retiming selection is refused ---

def _refined(kind, values, value):
    from fabric.io import load_document
    from fabric.sim.graph import load_graph_document
    from fabric.sim.synth import configured_fabric, graph_document
    add = ("add", "arith.addi", ["i16", "i16"], ["i16"], {})
    fab = configured_fabric("fab", [add])
    fab["fus"][0]["nodes"][0]["constraints"].append({"physical_refinement": {"kind": kind, "values": values}})
    fab["mapping"]["physical_refinements"] = [{"op": fab["mapping"]["uses"][0]["op"], "kind": kind, "value": value}]
    doc = graph_document("g", "fab", [add], [], [("a", ["add.0"], [1, 2, 3]), ("b", ["add.1"], [4, 5, 0xFFFF])],
                         [("s", "add.0")])
    return load_graph_document(doc, load_document(fab))


@pytest.mark.parametrize("kind, values, value", [("pipeline_depth", [3, 4], 3), ("result_bypass", [True, False], True)])
def test_a_refinement_that_retimes_is_refused_not_run_at_the_unrefined_timing(kind, values, value):
    """seed: pipeline registers "delay publication", a bypass "publishes ... one cycle earlier";
    the one-cycle elastic cycle model publishes at t + 1 only, so it must not run them."""
    from fabric.sim.graph import GraphCode, GraphError
    with pytest.raises(GraphError) as exc:
        _refined(kind, values, value)
    (d,) = exc.value.diagnostics
    assert d.code is GraphCode.NoCycleModel and d.path == "mapping.physical_refinements[0]" and kind in str(d)


@pytest.mark.parametrize("kind, values, value", [("result_bypass", [True, False], False),
                                                 ("power_mode", ["nominal", "low_power"], "low_power")])
def test_a_refinement_that_keeps_the_timing_runs(kind, values, value):
    """Accepted at 0, 1, 2, published a cycle later: the last result leaves at 3, four cycles."""
    res = Simulator(_refined(kind, values, value)).run(100)
    assert res.status == "complete" and res.cycles == 4 and res.outputs["s"] == [5, 7, (3 + 0xFFFF) % (1 << 16)]

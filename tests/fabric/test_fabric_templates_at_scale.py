"""Capability templates at the documented limits (docs/fabric-format.md §2 and §6).

The per-template rules, as the format states them: every input an active node consumes is
delivered (FU inputs always are; node outputs only from active nodes; demux output k only when
the demux selects k); every live value (delivered and, for FU inputs, consumed by an active node
or an FU output) is consumed by all its consumers (active ops, active demuxes, active muxes
selecting it, FU outputs).  The verifier checks them in time proportional to what each template
activates, so a 1024-way mux/demux FU with 1024 templates is checked in well under a second.
"""
from __future__ import annotations

import copy
import random

from fabric.errors import Diagnostic, DiagnosticCode as C
from fabric.io import load_document, load_text
from fabric.topology import MAX_TEMPLATE_WORK, MuxNode, DemuxNode, check_fu, split_ref, template_work
from fabric.view import check_fabric
from test_fabric_anchors import ADD, MUL, doc, fu_doc
from wide_routing import wide_routing, wide_routing_fu, wide_routing_text


def test_four_1024_way_mux_demux_fus_with_1024_templates_each_are_valid():
    text = wide_routing_text(4, 1024)
    assert len(text) < 8 << 20
    f = load_text(text)
    assert [len(fu.templates) for fu in f.fus] == [1024] * 4
    rep = check_fabric(f)
    assert rep.ok, [str(d) for d in rep.diagnostics[:3]]


def test_each_broken_route_of_a_wide_fu_is_reported_at_its_template():
    d = wide_routing(1, 1024)
    t = d["fus"][0]["templates"]
    t[5] = {"name": "demux_alone", "nodes": ["d"], "selects": {"d": 5}}     # m.0 is never delivered
    t[7] = {"name": "mux_alone", "nodes": ["m"], "selects": {"m": 7}}       # m.0 sinks into inactive d
    rep = check_fabric(load_document(d))
    assert [str(x) for x in rep.diagnostics] == [
        "fus[0].templates[5]: IncoherentRoute: active d consumes m.0, which the template does not deliver",
        "fus[0].templates[7]: ImplicitTokenSink: m.0 is live and broadcast to inactive d: route mutually "
        "exclusive datapaths through explicit fabric.demux/fabric.mux"]


# ---------------------------------------------------------------------------------------------
# The rules, transcribed one sentence at a time (scanning every value and consumer, as slowly as
# the sentences read), to compare with the verifier on many small random FUs.

def _node(fu, name):
    return next((n for n in fu.nodes if n.name == name), None)


def _delivered(fu, t, ref):
    node, k = split_ref(ref)
    if node == "in":
        return True
    if node not in t.nodes:
        return False
    return not isinstance(_node(fu, node), DemuxNode) or dict(t.selects).get(node) == k


def _consumes(fu, t, node, i):
    if node == "yield":
        return True
    if node not in t.nodes:
        return False
    return not isinstance(_node(fu, node), MuxNode) or dict(t.selects).get(node) == i


def reference_template_diagnostics(fu):
    consumers = {}
    for n in fu.nodes:
        for i, ref in enumerate(n.operands):
            consumers.setdefault(ref, []).append((n.name, i))
    for i, ref in enumerate(fu.yields):
        consumers.setdefault(ref, []).append(("yield", i))
    out, seen = [], []
    for j, t in enumerate(fu.templates):
        p = f"{fu.path}.templates[{j}]"
        key = (frozenset(t.nodes), t.selects)
        if key in seen or t.name in [x.name for x in fu.templates[:j]]:
            out.append(Diagnostic(C.DuplicateDeclaration, p, f"template {t.name!r} repeats another template"))
            continue
        seen.append(key)
        sel = dict(t.selects)
        bad = [Diagnostic(C.IncoherentRoute, f"{p}.selects.{name}", f"route {s} does not exist")
               for name, s in t.selects
               if not 0 <= s < (len(_node(fu, name).operands) if isinstance(_node(fu, name), MuxNode)
                                else _node(fu, name).results)]
        bad += [Diagnostic(C.IncoherentRoute, f"{p}.selects", f"active {name} has no selected route")
                for name in t.nodes if isinstance(_node(fu, name), (MuxNode, DemuxNode)) and name not in sel]
        out += bad
        if bad:
            continue
        for name in t.nodes:
            for i, ref in enumerate(_node(fu, name).operands):
                if _consumes(fu, t, name, i) and not _delivered(fu, t, ref):
                    out.append(Diagnostic(C.IncoherentRoute, p, f"active {name} consumes {ref}, which the "
                                                                "template does not deliver"))
        for ref, uses in consumers.items():
            live = _delivered(fu, t, ref) and (split_ref(ref)[0] != "in" or
                                               any(_consumes(fu, t, c, i) for c, i in uses))
            for c, i in uses:
                if live and not _consumes(fu, t, c, i):
                    what = f"unselected input {i} of mux {c}" if c in t.nodes else f"inactive {c}"
                    out.append(Diagnostic(C.ImplicitTokenSink, p, f"{ref} is live and broadcast to {what}: route "
                                                                  "mutually exclusive datapaths through explicit "
                                                                  "fabric.demux/fabric.mux"))
    return out


def _random_fu(rng: random.Random):
    values = ["in.0", "in.1", "in.2", "in.02", "add.0", "mul.0", "m.0", "d.0", "d.1", "d.2"]
    pick = lambda: rng.choice(values)                                   # noqa: E731
    add, mul = ADD([pick(), pick()]), MUL([pick(), pick()])
    add["name"], mul["name"] = "add", "mul"
    nodes = [add, mul,
             {"kind": "mux", "name": "m", "operands": [pick() for _ in range(rng.randint(2, 4))], "type": "bits<32>"},
             {"kind": "demux", "name": "d", "operand": pick(), "results": 3, "type": "bits<32>"}]
    templates = []
    for k in range(rng.randint(1, 6)):
        active = rng.sample(["add", "mul", "m", "d"], rng.randint(1, 4))
        selects = {r: rng.randint(0, 3) for r in ("m", "d") if r in active and rng.random() < 0.9}
        templates.append({"name": f"t{rng.randint(0, 4)}", "nodes": active, "selects": selects})
    yields = [pick() for _ in range(rng.randint(1, 3))]
    return fu_doc(nodes, yields, templates, inputs=["bits<32>"] * 3, outputs=["bits<32>"] * len(yields))


def test_the_verifier_reports_what_the_rules_transcribed_one_by_one_report():
    rng = random.Random(2026)
    checked = 0
    for _ in range(400):
        fu = load_document(doc([_random_fu(rng)])).fus[0]
        got = [d for d in check_fu(fu) if d.path.startswith(f"{fu.path}.templates")]
        assert got == reference_template_diagnostics(fu), fu
        checked += bool(got)
    assert checked > 100          # the sample exercises the rules, not only valid FUs


# ---------------------------------------------------------------------------------------------
# Limits that bound the time: template work and diagnostics per FU.

def _yielded_mux_fu(name: str, n: int) -> dict:
    """Every FU input is both an FU output and a mux input: live in every template, so each
    template checks all n of them (n units of work per template), and all but one sink."""
    fu = wide_routing_fu(name, n)
    fu["nodes"] = fu["nodes"][:1]
    fu["yield"] = [f"in.{k}" for k in range(n)]
    fu["templates"] = [{"name": f"route{k}", "nodes": ["m"], "selects": {"m": k}} for k in range(n)]
    return fu


def test_a_description_whose_templates_cost_more_than_the_limit_is_refused_before_checking():
    d = {"format": "tile-emu-fabric/1", "name": "costly", "fus": [_yielded_mux_fu(f"f{i}", 1024) for i in range(4)]}
    f = load_document(d)
    assert sum(template_work(fu) for fu in f.fus) > MAX_TEMPLATE_WORK
    rep = check_fabric(f)
    assert [(x.code, x.path) for x in rep.diagnostics] == [(C.CapacityLimit, "fus")]
    assert f"the limit is {MAX_TEMPLATE_WORK}" in rep.diagnostics[0].message


def test_an_fu_wrong_in_every_template_stops_after_the_diagnostics_limit():
    f = load_document({"format": "tile-emu-fabric/1", "name": "sinks", "fus": [_yielded_mux_fu("f", 1024)]})
    diags = check_fu(f.fus[0])
    assert {d.code for d in diags[:-1]} == {C.ImplicitTokenSink}
    assert diags[-1].code is C.CapacityLimit and "templates are not checked" in diags[-1].message
    assert len(diags) < 2100


def test_template_work_counts_what_each_template_activates():
    f = load_document(wide_routing(1, 8))
    # per template: 1 + two listed nodes + (mux: 2) + (demux: 2); no FU input is yielded
    assert template_work(f.fus[0]) == 8 * (1 + 2 + 2 + 2)
    g = copy.deepcopy(wide_routing(1, 8))
    g["fus"][0]["yield"][0] = "in.0"
    assert template_work(load_document(g).fus[0]) == 8 * (1 + 2 + 2 + 2 + 1)


# ---------------------------------------------------------------------------------------------
# Internal edges: the route from an op result to an op input through the selected muxes and
# demuxes, each segment at least the semantic width (§3).  Routes are followed once per template
# and shared between edges.

def reference_route(fu, t, src, dst):
    """The route, one hop at a time: dst's port type, then per hop the producer's result type
    (and a routing node's input type) until an op result; None if it is not `src`."""
    node, port = dst
    n = _node(fu, node)
    ref, segments = n.operands[port], [n.operand_type(port)]
    for _ in range(len(fu.nodes) + 1):
        pn, k = split_ref(ref)
        if pn == "in" or pn not in t.nodes:
            return None
        producer = _node(fu, pn)
        segments.append(producer.result_type(k))
        if not isinstance(producer, (MuxNode, DemuxNode)):
            return segments if (pn, k) == src else None
        if isinstance(producer, MuxNode):
            ref = producer.operands[dict(t.selects)[pn]]
        elif dict(t.selects)[pn] == k:
            ref = producer.operand
        else:
            return None
        segments.append(producer.operand_type(0))
    return None


def _routing_fu(rng: random.Random):
    values = ["in.0", "add.0", "mul.0", "m.0", "n.0", "d.0", "d.1"]
    pick = lambda: rng.choice(values)                                   # noqa: E731
    add, mul = ADD([pick(), pick()]), MUL([pick(), pick()])
    width = lambda: f"bits<{rng.choice([8, 16, 32])}>"                  # noqa: E731
    nodes = [add, mul,
             {"kind": "mux", "name": "m", "operands": [pick(), pick()], "type": width()},
             {"kind": "mux", "name": "n", "operands": [pick(), pick(), pick()], "type": width()},
             {"kind": "demux", "name": "d", "operand": pick(), "results": 2, "type": width()}]
    active = rng.sample(["add", "mul", "m", "n", "d"], rng.randint(2, 5))
    selects = {"m": rng.randint(0, 1), "n": rng.randint(0, 2), "d": rng.randint(0, 1)}
    t = {"name": "t", "nodes": active, "selects": {k: v for k, v in selects.items() if k in active}}
    return fu_doc(nodes, ["add.0"], [t], inputs=["bits<32>"])


def test_shared_routes_give_the_routes_and_narrow_segments_of_hop_by_hop_following():
    from fabric.topology import Router
    rng = random.Random(11)
    routed = 0
    for _ in range(300):
        fu = load_document(doc([_routing_fu(rng)])).fus[0]
        t = fu.templates[0]
        router = Router(fu, t)
        for src in (("add", 0), ("mul", 0)):
            for dst in (("add", 0), ("add", 1), ("mul", 0), ("mul", 1)):
                want = reference_route(fu, t, src, dst)
                cell = router.cells(src, dst)
                got = None
                if cell is not None:
                    got, c = [], cell
                    while c is not None:
                        got.append(c[0])
                        c = c[1]
                assert got == want, (fu, src, dst)
                if want is not None:
                    routed += 1
                    for need in (8, 16, 24, 32, 33):
                        first = next((s for s in want if s.width < need), None)
                        assert router.first_narrower(cell, need) == first
    assert routed > 50


def test_many_internal_edges_over_one_long_route_are_checked_once_per_hop():
    from fabric.topology import Router
    n = 4000                             # a chain of n muxes between two ops, 1000 edges over it
    nodes = [{"kind": "mux", "name": f"m{i}", "operands": ["add.0" if i == 0 else f"m{i - 1}.0", "in.0"],
              "type": "bits<32>"} for i in range(n)]
    nodes += [ADD(["in.0", "in.1"]), MUL([f"m{n - 1}.0", "in.1"])]
    t = {"name": "t", "nodes": [x["name"] for x in nodes], "selects": {f"m{i}": 0 for i in range(n)}}
    fu = load_document(doc([fu_doc(nodes, ["mul.0"], [t])])).fus[0]
    router = Router(fu, fu.templates[0])
    for _ in range(1000):
        cell = router.cells(("add", 0), ("mul", 0))
        assert cell is not None and router.first_narrower(cell, 32) is None
        assert router.first_narrower(cell, 33) is not None
    assert len(router.memo) == n + 1

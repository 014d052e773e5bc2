"""The cost of `fabric check` is bounded by what is distinct in a description, never by how
often a resource repeats (issue 21 item 15): the admitted image of a capability is enumerated
once however many FUs hold it, each occurrence keeps its own diagnostics, a whole description
enumerates at most MAX_DESCRIPTION_IMAGE points, and `run --timing --fabric` refuses what
cannot be a PE before verifying anything.  No test times anything: they count calls of the
expensive routines (the admitted-image enumeration and the Supports() it runs per point)."""
import copy
import json
import pathlib

import pytest

import fabric.relation as R
from emulator.timing import DEFAULT_FABRIC, EngineModelError, PEEngines
from fabric.errors import DiagnosticCode as C
from fabric.io import load_document
from fabric.view import check_fabric, render

PE = json.loads(DEFAULT_FABRIC.read_text())


def with_copies(n, fu=0, edit=lambda node, k: None):
    """pe.json plus `n` copies of its FU `fu` (0: VEC, 1: SFU); `edit(node, k)` changes copy k."""
    d = copy.deepcopy(PE)
    for k in range(n):
        twin = copy.deepcopy(PE["fus"][fu])
        twin["name"] = f"{twin['name']}{k}"
        edit(twin["nodes"][0], k)
        d["fus"].append(twin)
    return load_document(d)


@pytest.fixture
def counted(monkeypatch):
    """Counts enumerations and generated-point Supports() calls from a cold seal cache."""
    calls = {"enumerate": 0, "supports": 0}
    enumerate_image, supports = R.enumerate_image, R.supports

    def counting_enumerate(*a, **k):
        calls["enumerate"] += 1
        return enumerate_image(*a, **k)

    def counting_supports(*a, **k):
        calls["supports"] += 1
        return supports(*a, **k)

    monkeypatch.setattr(R, "enumerate_image", counting_enumerate)
    monkeypatch.setattr(R, "supports", counting_supports)
    R.clear_seal_cache()
    yield calls
    R.clear_seal_cache()


def test_a_hundred_copies_of_the_vec_engine_enumerate_its_image_once(counted):
    alone = check_fabric(load_document(PE))
    assert alone.ok and counted["enumerate"] == 2            # VEC and SFU
    per_description = counted["supports"]
    R.clear_seal_cache()
    counted.update(enumerate=0, supports=0)
    rep = check_fabric(with_copies(100))
    assert rep.ok, rep.diagnostics[:3]
    assert len(rep.views) == 102
    assert counted["enumerate"] == 2 and counted["supports"] == per_description
    keys = {v.occurrence: v.semantic_field_relation.keys for v in rep.views}
    assert all(keys[f"vec{k}/vec"] == keys["vec/vec"] for k in range(100))


def test_rendering_copies_describes_each_distinct_relation_once(counted, monkeypatch):
    described = {"n": 0}
    describe_key = R.describe_key

    def counting(*a, **k):
        described["n"] += 1
        return describe_key(*a, **k)

    monkeypatch.setattr(R, "describe_key", counting)
    lines = render(check_fabric(with_copies(20)))
    assert sum("Finite: 849 canonical behaviour key(s)" in line for line in lines) == 21
    assert described["n"] == 849 + 129                        # one line per key of each distinct relation


def test_each_copy_reports_its_own_diagnostics_at_its_own_path(counted):
    # HiF4X2 serves only TCVT, a VEC instruction: on an SFU engine it is an orphan, in every copy
    rep = check_fabric(with_copies(3, fu=1, edit=lambda n, k: n["hw_params"]["datatypes"].append("HiF4X2")))
    orphans = sorted(d.path for d in rep.diagnostics if d.code is C.OrphanDeclaration)
    assert orphans == [f"fus[{i}].nodes[0].hw_params.datatypes[24]" for i in (2, 3, 4)]
    assert counted["enumerate"] == 3                          # VEC, SFU, and the SFU with HiF4X2


def test_copies_that_differ_only_in_where_they_sit_share_a_relation_bound_to_each(counted):
    rep = check_fabric(with_copies(2))
    ops = {v.occurrence: v.semantic_field_relation.op for v in rep.views}
    assert ops["vec0/vec"].path == "fus[2].nodes[0]" and ops["vec1/vec"].path == "fus[3].nodes[0]"
    assert counted["enumerate"] == 2


def test_the_description_image_budget_stops_distinct_resources_and_is_deterministic(counted, monkeypatch):
    # VEC generates 849 points, SFU 129: a 1000-point budget derives both and nothing more
    monkeypatch.setattr(R, "MAX_DESCRIPTION_IMAGE", 1000)
    doc = with_copies(3, edit=lambda n, k: n["hw_params"].update(lanes=1 + k))   # three distinct VEC engines
    rep = check_fabric(doc)
    limits = [d for d in rep.diagnostics if d.code is C.CapacityLimit]
    assert [d.path for d in limits] == [f"fus[{i}].nodes[0]" for i in (2, 3, 4)]
    assert all("1000 admitted-image parameter points" in d.message for d in limits)
    assert counted["supports"] <= 1000 + 1                    # the work stopped at the budget
    # the same description with the seal cache warm: the same verdict (each distinct capability
    # is charged to the description again, whether derived now or remembered)
    again = check_fabric(doc)
    assert [str(d) for d in again.diagnostics] == [str(d) for d in rep.diagnostics]
    # copies of capabilities within the budget cost nothing more
    assert check_fabric(with_copies(50)).ok


def test_run_timing_refuses_a_second_vec_engine_before_verifying_anything(counted):
    with pytest.raises(EngineModelError, match="a PE has one VEC engine; fus\\[0\\].nodes\\[0\\] is already one"):
        PEEngines.from_fabric(with_copies(100))
    assert counted["enumerate"] == 0 and counted["supports"] == 0


def test_a_fabric_without_engines_is_refused_before_verifying(counted):
    loop = load_document(json.loads((pathlib.Path(__file__).resolve().parents[2] / "examples" / "fabric"
                                     / "loop.json").read_text()))
    with pytest.raises(EngineModelError, match="no TileVecEngine or TileSfuEngine"):
        PEEngines.from_fabric(loop)
    assert counted["enumerate"] == 0

"""Coverage as data: `tile-emu golden --coverage DIR [DIR ...] [--format text|json|ucis]`.

One model for every output and both dataset kinds: covergroups (a golden partition, a stream
partition, or the dataset-wide group), each with coverpoints and crosses whose bins carry a
count and a status -- `covered`, `hole` (the generator aims at it and no case has it) or `n/a`
(the partition cannot have it).  Several datasets of one kind merge by adding the counts of
bins of the same covergroup.  The JSON form is the model itself, checked against SCHEMA
(shipped as emulator/golden/coverage.schema.json); the UCIS form is the same covergroups written
with pyucis (the `ucis` extra): docs/golden-format.md, "Coverage as data".
"""
from __future__ import annotations

import hashlib
import json
import pathlib

from . import coverage as C
from . import store
from .dataset import GoldenError
from .streams_coverage import hazard_impossible, stream_coverage, stream_items

FORMAT = "tile-emu coverage"
FORMAT_VERSION = 1
SCHEMA_FILE = pathlib.Path(__file__).with_name("coverage.schema.json")
STATUSES = ("covered", "hole", "n/a")


def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def _manifest_sha(folder) -> str:
    return hashlib.sha256((store.location(folder) / "manifest.json").read_bytes()).hexdigest()


def _source(folder, m: dict) -> dict:
    return {"path": str(folder), "format": m["format"], "format_version": m["format_version"],
            "manifest_sha256": _manifest_sha(folder), "profile": m["profile"], "generator": m["generator"]}


# ---------------------------------------------------------------------------- golden datasets

def golden_model(folder) -> dict:
    """The coverage of one golden dataset, opened through open_dataset (the counts, n/a marks
    and cross counts are checked ones: class counts from the manifest, crosses from the rows)."""
    from . import dataset as D
    from .closure import cells
    ds = D.open_dataset(folder)
    groups, pad_dtype, pad_aimed = [], {}, set()
    for part in ds.partitions:
        counts: dict[str, int] = {}
        for f in ds.files:
            if f.partition == part:
                for c, k in f.record["classes"].items():
                    counts[c] = counts.get(c, 0) + k
        na = set(ds.not_applicable[part])
        seen = ds.crosses.get(part, {})
        aimed = cells(D.points_for(part))
        crosses = []
        for name, axes in C.CROSSES.items():
            mine = [cell for cross, cell in aimed if cross == name]
            extra = sorted(cell for cross, cell in seen if cross == name and cell not in mine)
            if mine or extra:
                crosses.append({"name": name, "axes": list(axes), "bins": [
                    C.bin_record(cell, seen.get((name, cell), 0), values=cell.split("/")) for cell in mine + extra]})
        dst = "predicate" if _dest_kind(part) == "predicate" else (part.dst or part.dtype)
        for cross, cell in seen:
            if cross == "pad_x_dtype":
                pad_dtype[cell] = pad_dtype.get(cell, 0) + seen[(cross, cell)]
        if any(c.cls.name in C.PAD_CLASS_CODES for c in D.points_for(part)):
            pad_aimed.update(f"{code}/{dst}" for code in C.PAD_CODES.values())
        groups.append({"name": part.path, "keys": part.keys(), "coverpoints": [{"name": "class", "bins": [
            C.bin_record(cls.name, counts.get(cls.name, 0), cls.name not in na) for cls in C.CLASSES]}],
            "crosses": crosses})
    cells_ = sorted(pad_aimed | set(pad_dtype))
    if cells_:
        groups.append({"name": "dataset", "keys": {}, "coverpoints": [], "crosses": [
            {"name": "pad_x_dtype", "axes": ["pad", "dtype"],
             "bins": [C.bin_record(c, pad_dtype.get(c, 0), values=c.split("/")) for c in cells_]}]})
    return _document("golden", [_source(folder, ds.manifest)], groups)


def _dest_kind(part) -> str:
    from isa import instructions as I
    return I.lookup(part.op).dest_kind


# ---------------------------------------------------------------------------- stream datasets

def stream_model(folder) -> dict:
    """The coverage of one stream dataset (streams_coverage.stream_coverage, recomputed from the
    decoded streams): per partition the stream classes (n/a where the shape class cannot carry
    one under the dataset's constraint); dataset-wide what the generator aims at
    (streams_coverage.stream_items: the `instruction` and `fault_position` coverpoints, the
    `hazard_x_instruction`, `aliasing_x_instruction` and `fault_x_position` crosses), the
    hazards per instruction pair (impossible pairs n/a, possible ones without a stream holes),
    and the value classes and shape classes per instruction that occur."""
    from isa import instructions as I

    from .coverage import HAZARDS
    from .streams import LEGAL, STREAM_ILLEGAL, stream_class
    from .streams_dataset import classes_for, open_stream_dataset
    ds = open_stream_dataset(folder)
    cov = stream_coverage(ds)
    con = ds.params.constraint
    groups = []
    for part in ds.partitions:
        na = set(classes_for(part.shape, con)[1])
        groups.append({"name": part.path, "keys": part.keys(), "coverpoints": [{"name": "class", "bins": [
            C.bin_record(n, cov["streams"].get((n, part.shape), 0), n not in na)
            for n in [LEGAL] + [stream_class(r) for r in STREAM_ILLEGAL]]}], "crosses": []})
    items = stream_items(ds, cov)
    crosses = list(items["crosses"])
    for kind in HAZARDS:
        bins = []
        for a in I.INSTRUCTIONS:
            for b in I.INSTRUCTIONS:
                ok = hazard_impossible(kind, a, b) is None and a in con.instructions and b in con.instructions
                bins.append(C.bin_record(f"{a.mnemonic}/{b.mnemonic}", cov["hazards"].get((kind, a.mnemonic, b.mnemonic), 0),
                                 ok, (a.mnemonic, b.mnemonic)))
        crosses.append({"name": f"{kind.lower()}_hazard", "axes": ["producer", "consumer"], "bins": bins})
    for name, key, axes in (("value_x_instruction", "values", ["value_class", "instruction"]),
                            ("shape_x_instruction", "shapes", ["shape_class", "instruction"])):
        crosses.append({"name": name, "axes": axes,
                        "bins": [C.bin_record(f"{a}/{b}", k, values=(a, b)) for (a, b), k in sorted(cov[key].items())]})
    groups.append({"name": "dataset", "keys": {}, "coverpoints": items["coverpoints"], "crosses": crosses})
    return _document("streams", [_source(folder, ds.manifest)], groups)


# ---------------------------------------------------------------------------- the document

def _document(kind: str, sources: list[dict], groups: list[dict]) -> dict:
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind, "datasets": sources,
           "covergroups": groups}
    doc["summary"] = _summary(groups)
    return doc


def _summary(groups) -> dict:
    out = {s: 0 for s in STATUSES}
    for g in groups:
        for item in g["coverpoints"] + g["crosses"]:
            for b in item["bins"]:
                out[b["status"]] += 1
    return {"bins": sum(out.values()), "covered": out["covered"], "holes": out["hole"], "not_applicable": out["n/a"]}


def _merge_bins(a: list[dict], b: list[dict]) -> list[dict]:
    by = {x["name"]: dict(x) for x in a}
    order = [x["name"] for x in a]
    for x in b:
        if x["name"] not in by:
            by[x["name"]] = dict(x)
            order.append(x["name"])
            continue
        y = by[x["name"]]
        y["count"] += x["count"]
        applicable = y["status"] != "n/a" or x["status"] != "n/a"
        y["status"] = "n/a" if not applicable else "covered" if y["count"] else "hole"
    return [by[n] for n in order]


def _merge_items(a: list[dict], b: list[dict]) -> list[dict]:
    by = {x["name"]: dict(x) for x in a}
    order = [x["name"] for x in a]
    for x in b:
        if x["name"] in by:
            by[x["name"]]["bins"] = _merge_bins(by[x["name"]]["bins"], x["bins"])
        else:
            by[x["name"]] = dict(x)
            order.append(x["name"])
    return [by[n] for n in order]


def merge(docs: list[dict]) -> dict:
    """Several datasets' coverage as one: covergroups of the same name add their bins' counts
    (a bin applicable in any dataset is applicable in the merge)."""
    groups: dict[str, dict] = {}
    for d in docs:
        for g in d["covergroups"]:
            if g["name"] not in groups:
                groups[g["name"]] = json.loads(json.dumps(g))
                continue
            mine = groups[g["name"]]
            mine["coverpoints"] = _merge_items(mine["coverpoints"], g["coverpoints"])
            mine["crosses"] = _merge_items(mine["crosses"], g["crosses"])
    ordered = [g for name, g in groups.items() if name != "dataset"] + [g for n, g in groups.items() if n == "dataset"]
    return _document(docs[0]["kind"], [s for d in docs for s in d["datasets"]], ordered)


def coverage(folders: list[str]) -> dict:
    """The merged coverage model of dataset folders of one kind (GoldenError naming the odd one
    out of a mix)."""
    from .kinds import detect
    kinds = [detect(f) for f in folders]
    if len(set(kinds)) > 1:
        odd, kind = next((f, k) for f, k in zip(folders, kinds) if k is not kinds[0])
        raise MixedKinds(f"--coverage: {odd} is a {kind.TITLE} dataset and {folders[0]} is not; coverage merges "
                         f"datasets of one kind")
    docs = [k.coverage_model(f) for f, k in zip(folders, kinds)]
    return docs[0] if len(docs) == 1 else merge(docs)


class MixedKinds(GoldenError):
    """--coverage of single-block and stream datasets together (a usage error)."""


# ---------------------------------------------------------------------------- text

def text(doc: dict) -> str:
    """The classes x partitions table (n/a where a partition cannot have the class), then each
    partition's crosses with their holes, then the dataset-wide crosses, then a summary line."""
    parts = [g for g in doc["covergroups"] if g["name"] != "dataset"]
    lines = []
    if parts:
        names = [b["name"] for b in parts[0]["coverpoints"][0]["bins"]]
        labels = [_label(g) for g in parts]
        name_w = max(len(n) for n in names)
        widths = [max(len(x), 7) for x in labels]
        lines.append(" " * name_w + "  " + "  ".join(x.rjust(w) for x, w in zip(labels, widths)))
        cells = [{b["name"]: b for b in g["coverpoints"][0]["bins"]} for g in parts]
        for n in names:
            row = ["n/a" if c[n]["status"] == "n/a" else f"{c[n]['count']:,}" for c in cells]
            lines.append(n.ljust(name_w) + "  " + "  ".join(x.rjust(w) for x, w in zip(row, widths)))
    for g in doc["covergroups"]:
        for cp in g["coverpoints"][1 if g in parts else 0:]:      # (a partition's first: the table)
            holes = [b["name"] for b in cp["bins"] if b["status"] == "hole"]
            aimed = sum(1 for b in cp["bins"] if b["status"] != "n/a")
            lines.append(f"{g['name']}: {cp['name']}: {aimed - len(holes)} of {aimed} bins covered"
                         + (f"; holes: {', '.join(holes)}" if holes else ""))
        for cr in g["crosses"]:
            holes = [b["name"] for b in cr["bins"] if b["status"] == "hole"]
            shown = [f"{b['name']}={b['count']:,}" for b in cr["bins"] if b["status"] == "covered"]
            aimed = sum(1 for b in cr["bins"] if b["status"] != "n/a")
            lines.append(f"{g['name']}: {cr['name']} ({' x '.join(cr['axes'])}): "
                         f"{aimed - len(holes)} of {aimed} cells covered"
                         + (f"; holes: {', '.join(holes)}" if holes else "")
                         + (f"; {' '.join(shown)}" if shown and len(shown) <= 40 else ""))
    s = doc["summary"]
    class_holes = sum(1 for g in parts for b in g["coverpoints"][0]["bins"] if b["status"] == "hole")
    lines.append(f"{len(parts)} partition(s); {class_holes} applicable class cell(s) without cases; "
                 f"{s['holes']} hole(s) of {s['bins'] - s['not_applicable']} bins"
                 + (" (complete)" if not s["holes"] else ""))
    return "\n".join(lines)


def _label(g: dict) -> str:
    k = g["keys"]
    if "op" in k:
        return f"{k['op']}.{k['dtype']}" + (f">{k['dst']}.{k['rmode']}{'.sat' if k['sat'] else ''}" if "dst" in k else "")
    return g["name"]


# ---------------------------------------------------------------------------- UCIS

UCIS_EXTRA = "pip install 'tile-emu[ucis]'"


def check_ucis() -> None:
    """pyucis importable, else a GoldenError naming the extra (checked before any dataset is read)."""
    try:
        import ucis  # noqa: F401
        from ucis.xml.xml_factory import XmlFactory  # noqa: F401
    except ImportError:
        raise NoUcis(f"--format ucis needs pyucis: {UCIS_EXTRA}") from None


class NoUcis(GoldenError):
    """--format ucis without pyucis (exit 3)."""


def write_ucis(doc: dict, fp) -> None:
    """The model as UCIS XML (pyucis): a DU `tile_emu` and an instance named after the dataset
    kind; one covergroup (with one instance) per covergroup; the `class` coverpoint; per cross
    a coverpoint for each axis (bins: its values, counts summed over the cross) and the cross
    (bins `<a,b>`).  `n/a` bins are ignore bins; holes are bins of count 0 (at_least 1)."""
    from ucis.cover_type_t import CoverTypeT
    from ucis.flags_t import FlagsT
    from ucis.mem.mem_ucis import MemUCIS
    from ucis.scope_type_t import ScopeTypeT
    from ucis.source_t import SourceT
    from ucis.xml.xml_factory import XmlFactory
    db = MemUCIS()
    du = db.createScope("tile_emu", None, 1, SourceT.OTHER, ScopeTypeT.DU_MODULE,
                        FlagsT.ENABLED_STMT | FlagsT.INST_ONCE | FlagsT.SCOPE_UNDER_DU)
    inst = db.createInstance(doc["kind"], None, 1, SourceT.OTHER, ScopeTypeT.INSTANCE, du, FlagsT.INST_ONCE)

    def bins(scope, items, cross=False):
        for b in items:
            kind = CoverTypeT.IGNOREBIN if b["status"] == "n/a" else CoverTypeT.CVGBIN
            name = f"<{','.join(b['values'])}>" if cross else b["name"]
            if cross:
                scope.createBin(name, None, 1, b["count"], name)
            else:
                scope.createBin(name, None, 1, b["count"], name, kind)

    for g in doc["covergroups"]:
        cg = inst.createCovergroup(g["name"], None, 1, SourceT.OTHER)
        ci = cg.createCoverInstance(g["name"], None, 1, SourceT.OTHER)
        for cp in g["coverpoints"]:
            bins(ci.createCoverpoint(cp["name"], None, 1, SourceT.OTHER), cp["bins"])
        for cr in g["crosses"]:
            axes = []
            for i, axis in enumerate(cr["axes"]):
                total: dict[str, int] = {}
                for b in cr["bins"]:
                    total[b["values"][i]] = total.get(b["values"][i], 0) + b["count"]
                cp = ci.createCoverpoint(f"{cr['name']}.{axis}", None, 1, SourceT.OTHER)
                bins(cp, [C.bin_record(v, k) for v, k in total.items()])
                axes.append(cp)
            bins(ci.createCross(cr["name"], None, 1, SourceT.OTHER, axes),
                 [b for b in cr["bins"] if b["status"] != "n/a"], cross=True)
    XmlFactory.write(db, fp)

"""Timing mode for block streams: each PE's VEC and SFU engines as fabric resources.

A fabric description (default: the shipped `pe.json`, whose op lists are the instruction table's)
holds one TileVecEngine and one TileSfuEngine `fabric.op`; every PE has one of each.  Two
uses (the model is docs/timing.md):

* admission: `PEEngines.admit(rb)` runs Supports(engine, block actor) for every block the
  machine executes (Machine.engines); a rejection is IllegalBlockException ENGINE_CAPABILITY,
  raised before any effect;
* timing: `stream_timing(blocks, initial, engines)` gives each executed block its issue and
  complete cycles from the engines' lanes and pipeline latency and from the tile dependences
  the execution calculus computes (`emulator.calculus.effects`, renamed destinations).

Nothing here touches architectural state: timing is computed after (and apart from) the run.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from isa.errors import IllegalBlockException
from isa.instructions import ENGINES

DEFAULT_FABRIC = Path(__file__).with_name("pe.json")


class EngineModelError(ValueError):
    """A fabric description that cannot serve as the PE engine model (one line: what, why)."""


@dataclass(frozen=True)
class Engine:
    name: str          # seed engine: VEC or SFU
    op: object         # the fabric.FabricOp resource
    lanes: int         # elements per beat (one beat accepted per cycle)
    latency: int       # cycles from a beat's acceptance to its result


@dataclass
class PEEngines:
    """One PE's engines by seed engine name (an engine may be absent: its blocks reject)."""
    engines: dict[str, Engine]
    fabric_name: str = ""
    _verdicts: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_fabric(cls, fabric) -> "PEEngines":
        """The engines of a verified fabric description (fabric.topology.Fabric).  What cannot be
        a PE (two engines of one kind, none at all) is refused from the resources' families
        alone, before the description is verified."""
        from fabric.families import TILE_ENGINE_FAMILIES
        from fabric.view import check_fabric

        by_family = {f: e for e, f in TILE_ENGINE_FAMILIES.items()}
        ops: dict = {}
        for fu in fabric.fus:
            for node in fu.ops():
                op = node.op
                e = by_family.get(op.family)
                if e is None:
                    continue
                if e in ops:
                    raise EngineModelError(f"{op.path}: a PE has one {e} engine; {ops[e].path} is already one")
                ops[e] = op
        if not ops:
            raise EngineModelError(f"fabric {fabric.name!r} has no TileVecEngine or TileSfuEngine resource")
        rep = check_fabric(fabric)
        if not rep.ok:
            raise EngineModelError(f"invalid fabric description: {rep.diagnostics[0]}"
                                   + (f" (and {len(rep.diagnostics) - 1} more)" if len(rep.diagnostics) > 1 else ""))
        found = {e: Engine(e, op, op.hw_params.lanes, op.hw_params.pipeline_latency) for e, op in ops.items()}
        return cls(found, fabric.name)

    @classmethod
    def load(cls, path=None) -> "PEEngines":
        """Load and verify a fabric description file (default: the shipped pe.json)."""
        from fabric.errors import FormatError
        from fabric.io import load

        path = DEFAULT_FABRIC if path is None else path
        if not str(path):
            raise EngineModelError("an empty path names no fabric description")
        try:
            return cls.from_fabric(load(path))
        except FormatError as exc:
            where = "" if exc.path == str(path) else f"{exc.path}: "
            raise EngineModelError(f"{path}: {where}{exc.reason}") from None
        except EngineModelError as exc:
            raise EngineModelError(f"{path}: {exc}") from None

    def admit(self, rb) -> None:
        """Supports(engine, actor) for resolved block `rb`; ENGINE_CAPABILITY when rejected."""
        instr = rb.instr
        dst = rb.dst_dtype.name if "DataType" in instr.datr else None
        key = (instr.mnemonic, rb.dtype.name, dst)
        why = self._verdicts.get(key, False)
        if why is False:
            why = self._verdicts[key] = self._verdict(instr, rb.dtype.name, dst)
        if why is not None:
            raise IllegalBlockException("ENGINE_CAPABILITY", "BSTART", why)

    def _verdict(self, instr, dtype: str, dst: str | None) -> str | None:
        from fabric.capability import supports
        from fabric.tile_engine import block_actor

        eng = self.engines.get(instr.engine)
        if eng is None:
            return f"the fabric has no {instr.engine} engine to run {instr.mnemonic}"
        v = supports(eng.op, block_actor(instr, dtype, dst))
        return None if v else f"{eng.op.name}: {v.rejection.name}: {v.message}"


# ----------------------------------------------------------------------------------------- timing

@dataclass(frozen=True)
class BlockTiming:
    index: int                 # position in the stream
    mnemonic: str
    engine: str
    pes: tuple[int, ...]       # selected PEs (empty: PE_MASK=0000, no engine time)
    beats: int                 # beats on each selected PE (the largest, when PEs differ)
    issue: int | None          # first cycle a beat of the block enters an engine
    complete: int | None       # cycle its last destination commit is visible to later blocks
    after: tuple[int, ...]     # stream indices of the blocks whose results it waited for


@dataclass
class StreamTiming:
    blocks: list[BlockTiming]
    busy: dict                 # (pe, engine) -> cycles the engine accepted beats
    total: int                 # cycles from the first issue (cycle 0) to the last completion
    engines: PEEngines

    def utilisation(self, pe: int, engine: str) -> float:
        return self.busy.get((pe, engine), 0) / self.total if self.total else 0.0


def stream_timing(blocks, initial, engines: PEEngines) -> StreamTiming:
    """Issue/complete cycles of `blocks` (the executed prefix of a stream, in order) run from
    machine state `initial` on `engines`.  Dependences are the calculus's effect sets with
    renamed destinations: a block waits for the block that wrote each tile version it reads.
    The effects are walked one block at a time and dropped once used, so memory stays that of
    one block's read/write sets plus one entry per tile version."""
    from isa.legality import resolve

    from .calculus import builder as B
    from .calculus.effects import Walker, root_env

    blocks = list(blocks)
    rbs = [resolve(b) for b in blocks]
    writer: dict[str, tuple[int, int]] = {}          # tile version key -> (block, complete)
    free: dict[tuple[int, str], int] = {}            # (pe, engine) -> first cycle it accepts a beat
    busy: dict[tuple[int, str], int] = {}
    out = []
    if blocks:
        program = B.program(B.seq(*[B.block(b) for b in blocks]))
        walker = Walker(program, machines=[initial])   # renamed destinations: true dependences only
        env = root_env(walker)
        leaves = program.body.items
    for i, rb in enumerate(rbs):
        instr = rb.instr
        eng = engines.engines.get(instr.engine)
        if eng is None:        # admission rejects such blocks, so a run never gets here
            raise EngineModelError(f"block {i} ({instr.mnemonic}) needs the {instr.engine} engine, which the fabric lacks")
        walker.walk(leaves[i], env, {})
        rows = []
        for ev in walker.events:                     # one event per selected PE
            writes = [a for a in ev.accesses if a.write]
            beats = -(-sum(len(a.cells) for a in writes) // eng.lanes)
            deps = [writer[a.key] for a in ev.accesses if not a.write and len(a.cells) and a.key in writer]
            slot = (ev.pe, instr.engine)
            issue = max(free.get(slot, 0), max((c for _, c in deps), default=0))   # in order, after producers
            free[slot] = issue + beats
            busy[slot] = busy.get(slot, 0) + beats
            complete = issue + beats + eng.latency
            for a in writes:
                writer[a.key] = (i, complete)
            rows.append((ev.pe, beats, issue, complete, {j for j, _ in deps}))
        walker.events.clear()
        out.append(BlockTiming(
            i, instr.mnemonic, instr.engine, tuple(r[0] for r in rows),
            max((r[1] for r in rows), default=0),
            min((r[2] for r in rows), default=None), max((r[3] for r in rows), default=None),
            tuple(sorted(set().union(*(r[4] for r in rows))))))
    total = max((b.complete for b in out if b.complete is not None), default=0)
    return StreamTiming(out, busy, total, engines)


def render(t: StreamTiming) -> list[str]:
    """The `tile-emu run --timing` report."""
    eng = t.engines.engines
    head = "; ".join(f"{e} {eng[e].lanes} lanes, latency {eng[e].latency}" for e in ENGINES if e in eng)
    out = [f"timing (fabric {t.engines.fabric_name}: {head})",
           f"{'block':>5}  {'mnemonic':<8} {'engine':<6} {'PEs':<8} {'beats':>6} {'issue':>8} {'complete':>8}  after"]
    for b in t.blocks:
        pes = ",".join(map(str, b.pes)) or "-"
        issue = "-" if b.issue is None else str(b.issue)
        done = "no-op" if b.complete is None else str(b.complete)
        after = ",".join(map(str, b.after)) or "-"
        out.append(f"{b.index:>5}  {b.mnemonic:<8} {b.engine:<6} {pes:<8} {b.beats:>6} {issue:>8} {done:>8}  {after}")
    out.append("engine utilisation (cycles accepting beats / total cycles):")
    for pe, e in sorted(t.busy):
        out.append(f"  PE{pe} {e}: {t.busy[(pe, e)]}/{t.total} ({100 * t.utilisation(pe, e):.1f}%)")
    out.append(f"total cycles {t.total}")
    return out

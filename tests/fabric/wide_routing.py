"""A fabric description at the documented limits of routing: FUs that are each one N-way
fabric.mux feeding one N-way fabric.demux, with one capability template per route
(template k selects mux input k and demux result k).  Valid by construction; the largest
(4 FUs, N = 1024: about 280 KB) is the size that once took the verifier 30 s."""
from __future__ import annotations

import json


def wide_routing_fu(name: str, n: int) -> dict:
    return {"name": name,
            "inputs": ["bits<32>"] * n, "outputs": ["bits<32>"] * n,
            "nodes": [{"kind": "mux", "name": "m", "operands": [f"in.{k}" for k in range(n)], "type": "bits<32>"},
                      {"kind": "demux", "name": "d", "operand": "m.0", "results": n, "type": "bits<32>"}],
            "yield": [f"d.{k}" for k in range(n)],
            "templates": [{"name": f"route{k}", "nodes": ["m", "d"], "selects": {"m": k, "d": k}}
                          for k in range(n)]}


def wide_routing(fus: int = 4, n: int = 1024) -> dict:
    return {"format": "tile-emu-fabric/1", "name": f"wide_routing_{fus}x{n}",
            "fus": [wide_routing_fu(f"fu{i}", n) for i in range(fus)]}


def wide_routing_text(fus: int = 4, n: int = 1024) -> str:
    return json.dumps(wide_routing(fus, n), separators=(",", ":"))


if __name__ == "__main__":
    import sys
    args = [int(a) for a in sys.argv[1:]]
    sys.stdout.write(wide_routing_text(*args))

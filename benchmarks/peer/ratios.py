"""Combine the per-contender result files of run_peer.sh into one table: best elem/s per case over
all rounds, and ours / peer for each peer build.  Usage: ratios.py OURS PEER_O2 PEER_O3N (each a
file of "case<TAB>elements<TAB>seconds<TAB>elem/s" lines, rounds appended)."""
import sys

# our case -> the peer's case it is compared with (same op, data type, shape)
PAIRS = {"machine.TADD.FP32.4x128x128": "TADD.FP32.4x128x128",
         "machine.TMUL.FP32.4x128x128": "TMUL.FP32.4x128x128",
         "machine.TFMA.FP32.4x128x128": "TFMA.FP32.4x128x128",
         "machine.TCVT.FP32-FP16.4x128x128": "TCVT.FP32-FP16.4x128x128",
         "TCVT.FP32-FP16.status.4x128x128": "TCVT.FP32-FP16.4x128x128",
         "batch.TADD.FP32.4096x4x16x16": "TADD.FP32.4096x4x16x16"}


def best(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, _, _, rate = line.rstrip("\n").split("\t")
            out[name] = max(out.get(name, 0.0), float(rate))
    return out


def main(argv):
    ours, o2, o3 = (best(p) for p in argv[1:4])
    print(f"{'case (ours)':34} {'ours M/s':>9} {'peer -O2':>9} {'peer -O3n':>9} {'/ -O2':>7} {'/ -O3n':>7}")
    for name, rate in ours.items():
        peer = PAIRS.get(name, name)
        p2, p3 = o2.get(peer), o3.get(peer)
        cell = lambda v: f"{v / 1e6:9.0f}" if v else f"{'-':>9}"          # noqa: E731
        ratio = lambda v: f"{rate / v:7.2f}" if v else f"{'-':>7}"        # noqa: E731
        print(f"{name:34} {rate / 1e6:9.0f} {cell(p2)} {cell(p3)} {ratio(p2)} {ratio(p3)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

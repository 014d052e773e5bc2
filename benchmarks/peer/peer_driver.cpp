// Peer throughput driver: times the public PTO tile library's CPU simulator (hw-native-sys/pto-isa,
// header-only, built with -D__CPU_SIM) on the tile shapes of issue 32, single-threaded
// (PTO_CPU_MAX_THREADS=1).  Only the peer's public headers are included; the include path comes from
// run_peer.sh (PTO_ISA_DIR).  Output: one line per case, "case<TAB>elements<TAB>seconds<TAB>elem/s",
// the best of ROUNDS rounds, each round repeating the whole case until it has run >= MIN_SECONDS.
// PEER_CLOCK=cpu times by this process's CPU time instead of the wall clock (ours.py reads the same
// variable): on a machine shared with other jobs, the time a contender waits for a core then does
// not count against it.
//
// Tiles live in the simulator's UB region (TASSIGN with byte offsets, the library's own CPU-sim path);
// run_peer.sh enlarges that region with PTO_CPU_SIM_UB_BYTES so that 16,384 tiles fit at once.
#include <pto/pto-inst.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace pto;

namespace {

constexpr int ROUNDS = 3;
constexpr double MIN_SECONDS = 0.2;
std::size_t g_next = 0;   // next free UB byte offset

template <typename T, int R, int C>
using VecTile = Tile<TileType::Vec, T, R, C, BLayout::RowMajor>;

// A set of n tiles of one shape, each placed in UB and filled with values from [lo, hi).
template <typename T, int R, int C>
struct TileSet {
    std::vector<VecTile<T, R, C>> tiles;
    TileSet(std::size_t n, float lo, float hi, unsigned seed)
    {
        std::mt19937 gen(seed);
        std::uniform_real_distribution<float> dist(lo, hi);
        tiles.resize(n);
        for (auto& t : tiles) {
            TASSIGN(t, g_next);
            g_next += sizeof(T) * R * C;
            for (int i = 0; i < R * C; ++i) {
                t.data()[i] = static_cast<T>(dist(gen));
            }
        }
    }
};

volatile double g_sink = 0;

// Seconds on the clock PEER_CLOCK names: "cpu" this process's CPU time, anything else the wall clock.
double now()
{
    static const bool cpu = [] { const char* c = std::getenv("PEER_CLOCK"); return c && std::strcmp(c, "cpu") == 0; }();
    if (cpu) {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec + ts.tv_nsec * 1e-9;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename Fn>
void timed(const char* name, std::size_t elements, Fn fn)
{
    fn();   // warm
    double best = 1e30;
    // PEER_PERCALL=N: the 10th percentile of N single calls instead (ours.py reads the same
    // variable): a call's own time, less exposed than a 0.2 s window to waits on a shared machine
    static const long percall = [] { const char* c = std::getenv("PEER_PERCALL"); return c ? std::atol(c) : 0L; }();
    if (percall > 0) {
        std::vector<double> t(percall);
        for (auto& x : t) {
            const double t0 = now();
            fn();
            x = now() - t0;
        }
        std::sort(t.begin(), t.end());
        best = t[percall / 10];
        std::printf("%s\t%zu\t%.9g\t%.6g\n", name, elements, best, elements / best);
        std::fflush(stdout);
        return;
    }
    for (int r = 0; r < ROUNDS; ++r) {
        std::size_t reps = 0;
        const double t0 = now();
        double dt = 0;
        do {
            fn();
            ++reps;
            dt = now() - t0;
        } while (dt < MIN_SECONDS);
        best = std::min(best, dt / reps);
    }
    std::printf("%s\t%zu\t%.9g\t%.6g\n", name, elements, best, elements / best);
    std::fflush(stdout);
}

template <typename T, int R, int C>
void binary_cases(const char* dt, std::size_t n, const char* shape)
{
    std::size_t mark = g_next;
    TileSet<T, R, C> a(n, 0.5f, 2.0f, 1), b(n, 0.5f, 2.0f, 2), d(n, 0.5f, 2.0f, 3);
    const std::size_t elems = n * R * C;
    std::string p = std::string(".") + dt + "." + shape;
    timed(("TADD" + p).c_str(), elems, [&] { for (std::size_t i = 0; i < n; ++i) TADD(d.tiles[i], a.tiles[i], b.tiles[i]); });
    timed(("TSUB" + p).c_str(), elems, [&] { for (std::size_t i = 0; i < n; ++i) TSUB(d.tiles[i], a.tiles[i], b.tiles[i]); });
    timed(("TMUL" + p).c_str(), elems, [&] { for (std::size_t i = 0; i < n; ++i) TMUL(d.tiles[i], a.tiles[i], b.tiles[i]); });
    timed(("TDIV" + p).c_str(), elems, [&] { for (std::size_t i = 0; i < n; ++i) TDIV(d.tiles[i], a.tiles[i], b.tiles[i]); });
    timed(("TSQRT" + p).c_str(), elems, [&] { for (std::size_t i = 0; i < n; ++i) TSQRT(d.tiles[i], a.tiles[i]); });
    // TFMA: the peer's TFUSEDMULADD, dst = src0 * dst + src1 (dst is read and written).  With
    // src0 in [0.5, 0.9) and src1 in [0.1, 0.5) repeated application converges, so values stay normal.
    TileSet<T, R, C> m(n, 0.5f, 0.9f, 4), c(n, 0.1f, 0.5f, 5);
    timed(("TFMA" + p).c_str(), elems, [&] { for (std::size_t i = 0; i < n; ++i) TFUSEDMULADD(d.tiles[i], m.tiles[i], c.tiles[i]); });
    g_next = mark;
}

template <int R, int C>
void cvt_cases(std::size_t n, const char* shape)
{
    std::size_t mark = g_next;
    TileSet<float, R, C> f(n, -100.0f, 100.0f, 6);
    TileSet<half, R, C> h(n, -100.0f, 100.0f, 7);
    const std::size_t elems = n * R * C;
    timed((std::string("TCVT.FP32-FP16.") + shape).c_str(), elems,
          [&] { for (std::size_t i = 0; i < n; ++i) TCVT(h.tiles[i], f.tiles[i], RoundMode::CAST_RINT); });
    TileSet<half, R, C> h2(n, -100.0f, 100.0f, 8);
    timed((std::string("TCVT.FP16-FP32.") + shape).c_str(), elems,
          [&] { for (std::size_t i = 0; i < n; ++i) TCVT(f.tiles[i], h2.tiles[i], RoundMode::CAST_RINT); });
    g_next = mark;
}

} // namespace

int main()
{
    // FP32 4 x 128x128 (one machine, 4 PEs of 128x128)
    binary_cases<float, 128, 128>("FP32", 4, "4x128x128");
    // FP16 16384 x 16x16
    binary_cases<half, 16, 16>("FP16", 16384, "16384x16x16");
#ifdef CPU_SIM_BFLOAT_ENABLED
    binary_cases<bfloat16_t, 16, 16>("BF16", 16384, "16384x16x16");
#endif
    // TCVT FP32 <-> FP16, 4 x 128x128
    cvt_cases<128, 128>(4, "4x128x128");
    // batch shape: 4096 machines x 4 PEs x 16x16 FP32 TADD = 16384 tiles
    {
        std::size_t mark = g_next;
        constexpr std::size_t n = 4096 * 4;
        TileSet<float, 16, 16> a(n, 0.5f, 2.0f, 9), b(n, 0.5f, 2.0f, 10), d(n, 0.5f, 2.0f, 11);
        timed("TADD.FP32.4096x4x16x16", n * 256,
              [&] { for (std::size_t i = 0; i < n; ++i) TADD(d.tiles[i], a.tiles[i], b.tiles[i]); });
        g_next = mark;
    }
    return 0;
}

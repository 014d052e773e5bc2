"""emulator/golden/runner.py: the heap a generation process settles before its first chunk."""
import pickle
import subprocess
import sys

from emulator.golden import dataset as D
from emulator.golden import runner


def test_settle_heap_freezes_what_is_alive_once_and_later_garbage_is_still_collected():
    # in a fresh process: the test process's own heap is not ours to freeze
    code = """
import gc
from emulator.golden.runner import settle_heap
settle_heap()
frozen = gc.get_freeze_count()
settle_heap()                      # once per process
assert gc.get_freeze_count() == frozen > 1000, (frozen, gc.get_freeze_count())
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a            # a cycle made after the freeze
del a, b
assert gc.collect() >= 2
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_settle_heap_raises_only_the_young_generations_threshold_to_20000():
    code = """
import gc
before = gc.get_threshold()
from emulator.golden.runner import settle_heap
settle_heap()
after = gc.get_threshold()
assert after == (20000,) + before[1:], (before, after)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_settle_heap_leaves_collection_off_where_the_caller_turned_it_off():
    code = """
import gc
gc.set_threshold(0)
from emulator.golden.runner import settle_heap
settle_heap()
assert gc.get_threshold()[0] == 0, gc.get_threshold()
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_local_clusters_task_wrapper_pickles_by_reference():
    """A LocalCluster worker gets the task function wrapped (settle_heap, then the chunk): the
    wrapper must pickle like the plain module-level function it holds."""
    w = pickle.loads(pickle.dumps(runner._Settling(D.write_chunk)))
    assert w.fn is D.write_chunk


def _tasks(out, ops="TADD,TCVT", dtypes="FP32", dst=("E4M3",), cases=300, chunk_cases=100):
    p = D.Params(ops=tuple(ops.split(",")), dtypes=tuple(dtypes.split(",")), dst_dtypes=dst, rmodes=("RNE", "RTZ"),
                 sat=(0, 1), cases=cases, seed=3, chunk_cases=chunk_cases)
    return [(str(out), p.to_json(), vars(part), chunk, n, "cpu") for part, chunk, n in D.chunks(p)]


def test_the_warm_up_runs_one_small_chunk_per_distinct_kernel_of_the_job(tmp_path):
    tasks = _tasks(tmp_path / "out")
    warm = runner.warm_tasks(D.write_chunk, tasks)
    # TADD FP32 and TCVT FP32 -> E4M3: the four rounding-mode x saturation partitions of the
    # conversion share one kernel, so two warm-up chunks, each of at most WARM_CASES cases
    kernels = {(part["op"], part["dtype"], part["dst"]) for _, _, part, _, _, _ in tasks}
    assert len(kernels) == 2 and len(warm) == 2
    assert {(w[2]["op"], w[2]["dtype"], w[2]["dst"]) for w in warm} == kernels
    assert all(w[0] is D.write_chunk and w[4] == min(100, runner.WARM_CASES) for w in warm)


def test_the_warm_up_is_bounded_and_writes_nothing_where_the_job_writes(tmp_path):
    from emulator.cluster import Warm
    tasks = _tasks(tmp_path / "out", ops="TADD,TSUB,TMUL,TDIV,TMAX,TMIN", dtypes="FP32,FP16", dst=(), cases=20,
                   chunk_cases=20)
    warm = runner.warm_tasks(D.write_chunk, tasks)
    assert len(warm) == runner.WARM_PARTS < len(tasks)
    seconds = Warm(runner._warm_chunk, warm[:1])()
    assert seconds >= 0 and not (tmp_path / "out").exists()


def test_a_failing_warm_up_task_is_swallowed_and_the_after_step_still_runs():
    ran = []

    def boom(*a):
        ran.append(a)
        raise ValueError("the real task reports this")
    from emulator.cluster import Warm
    Warm(boom, [(1,), (2,)], after=lambda: ran.append("after"))()
    assert ran == [(1,), (2,), "after"]


def test_the_warm_up_pickles_by_reference_for_the_workers(tmp_path):
    from emulator.cluster import Warm
    w = pickle.loads(pickle.dumps(Warm(runner._warm_chunk, runner.warm_tasks(D.write_chunk, _tasks(tmp_path)),
                                       runner.settle_heap)))
    assert w.fn is runner._warm_chunk and w.after is runner.settle_heap and w.tasks[0][0] is D.write_chunk

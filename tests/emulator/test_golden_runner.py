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

"""Loaded by a gateway or store started with this directory on PYTHONPATH (bench/produce_cpu.py
--per-task): with BENCH_TASK_CPU set, every trio.run counts the thread CPU each task's steps
take, and the loop's own time between them, and writes the totals to BENCH_TASK_CPU.<pid>
(JSON: name -> [seconds, steps]) once a second. Bench only: nothing in the gateway imports it.
"""

import os

if os.environ.get("BENCH_TASK_CPU"):
    import collections
    import json
    import time

    import trio

    class _TaskCpu(trio.abc.Instrument):
        def __init__(self, path: str):
            self.path = path
            self.totals = collections.defaultdict(lambda: [0.0, 0])
            self.started = self.step_started = self.waited = time.thread_time()
            self.written = time.monotonic()

        def before_task_step(self, task):
            self.step_started = time.thread_time()

        def after_task_step(self, task):
            total = self.totals[task.name]
            total[0] += time.thread_time() - self.step_started
            total[1] += 1

        def before_io_wait(self, timeout):
            self.waited = time.thread_time()

        def after_io_wait(self, timeout):
            total = self.totals["(waiting for I/O)"]
            total[0] += time.thread_time() - self.waited
            total[1] += 1
            if time.monotonic() - self.written >= 1.0:
                self.written = time.monotonic()
                self.totals["(thread, all of it)"] = [time.thread_time() - self.started, 0]
                with open(self.path + ".tmp", "w") as out:
                    json.dump(self.totals, out)
                os.replace(self.path + ".tmp", self.path)

    _run = trio.run

    def _instrumented_run(*args, **kwargs):
        path = f"{os.environ['BENCH_TASK_CPU']}.{os.getpid()}"
        kwargs["instruments"] = [*kwargs.get("instruments", ()), _TaskCpu(path)]
        return _run(*args, **kwargs)

    trio.run = _instrumented_run

"""A store process the gateway's command started before the loop ran: its exit code is
waited for, and a cancelled wait stops it as trio.run_process stops its own."""

import signal
import subprocess
import sys

import trio

from gateway import store_processes
from gateway.embedded_mesh import exit_code


def started(code: str) -> subprocess.Popen:
    """A process as store_processes.start_stores starts one: its standard input a pipe we hold."""
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


async def test_its_exit_code_is_returned_and_its_pipe_closed():
    with started("raise SystemExit(3)") as process:
        assert await exit_code(process) == 3
        assert process.stdin.closed


async def test_cancelled_it_is_asked_to_stop():
    with started("import time; print('up', flush=True); time.sleep(60)") as process:
        process.stdout.readline()
        with trio.move_on_after(0.2):
            await exit_code(process)
        assert process.returncode == -signal.SIGTERM
        assert process.stdin.closed


async def test_cancelled_one_that_will_not_stop_is_killed(monkeypatch):
    monkeypatch.setattr(store_processes, "STORE_STOP_S", 0.3)
    with started("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                 "print('up', flush=True); time.sleep(60)") as process:
        process.stdout.readline()  # its SIGTERM handler is in place
        with trio.move_on_after(0.2):
            await exit_code(process)
        assert process.returncode == -signal.SIGKILL

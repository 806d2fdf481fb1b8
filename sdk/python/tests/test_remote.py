"""The SDK against a real levers9 stack (controlplane, worker, runner in containers).

Runs only when LEVERS9_TEST_CONTROLPLANE_HOST and LEVERS9_TEST_TOKEN are set
(LEVERS9_TEST_CONTROLPLANE_PORT, and
LEVERS9_TEST_CONTROLPLANE_TLS optional); skipped otherwise. The functions are in functions_app.py.
"""

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import functions_app as app
import stack
from waiting import wait_for
import levers9
from levers9 import RemoteTraceback


pytestmark = stack.marks()



@pytest.mark.smoke
def test_remote_returns_the_value():
    assert app.add.remote(1, b=2) == 3


@pytest.mark.smoke
def test_containers_after_the_first_of_an_image_load_the_sdk_compiled_for_it():
    # The worker compiles the SDK for an image beside the first container
    # that mounts it; only new containers show it, so each try is a new stub.
    def fresh_container(n):
        return levers9.function(env={"SDK_COMPILED_TRY": f"{os.getpid()}-{time.time()}-{n}"})(app.sdk_compiled)

    deadline = time.monotonic() + 60
    n = 0
    while not fresh_container(n).remote():
        assert time.monotonic() < deadline, "no new container loaded the SDK from .pyc files within 60 s"
        n += 1
        time.sleep(0.5)


def test_map_over_1000_inputs_comes_back_in_order():
    assert list(app.square.map(range(1000))) == [i * i for i in range(1000)]


@pytest.mark.smoke
def test_an_exception_comes_back_as_its_type_with_the_remote_traceback():
    with pytest.raises(app.AppError, match="custom failure") as info:
        app.fail.remote("custom failure")
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "functions_app.py" in cause.traceback_text and "raise AppError(message)" in cause.traceback_text
    with pytest.raises(ZeroDivisionError) as info:
        app.divide.remote(1, 0)
    assert "return a / b" in str(info.value.__cause__)


def test_a_function_past_its_timeout_raises_task_timeout():
    started = time.monotonic()
    with pytest.raises(levers9.TaskTimeout):
        app.sleep_past_timeout.remote(10)
    assert time.monotonic() - started < 10


def test_a_failed_attempt_is_retried(capfd):
    assert app.fails_on_first_attempt.remote() == "2"
    assert "retrying" in capfd.readouterr().err


@pytest.mark.smoke
def test_a_warm_container_is_reused():
    assert app.container_id.remote() == app.container_id.remote()


def test_concurrency_runs_inputs_side_by_side_in_one_container():
    app.sleep_and_report.remote(0)  # a warm container takes all four
    reports = list(app.sleep_and_report.map([2] * 4))
    assert len({container for container, _, _ in reports}) == 1
    # Side by side: every input started before any of them ended.
    assert max(start for _, start, _ in reports) < min(end for _, _, end in reports)


def test_a_spawned_call_can_be_awaited_or_cancelled():
    assert app.add.spawn(20, 22).get(timeout=120) == 42
    call = app.sleep_for.spawn(120)
    time.sleep(2)
    call.cancel()
    with pytest.raises(levers9.TaskCancelled):
        call.get(timeout=60)
    with pytest.raises(TimeoutError):
        app.sleep_for.spawn(30).get(timeout=1)


def test_cancelling_an_input_that_waits_in_its_container_keeps_the_container():
    # After a few fast calls the controlplane sends the container more
    # inputs than it runs at once; the extra one waits in its runner.
    warm = {app.nap.remote(0) for _ in range(5)}
    assert len(warm) == 1
    running = app.nap.spawn(3)
    time.sleep(0.5)
    waiting = app.nap.spawn(0)
    time.sleep(0.5)
    waiting.cancel()
    with pytest.raises(levers9.TaskCancelled):
        waiting.get(timeout=60)
    # The runner dropped the waiting input; the running one was not
    # stopped and run again in another container.
    assert running.get(timeout=60) == warm.pop()


def test_ctrl_c_in_the_caller_cancels_its_task():
    caller = subprocess.Popen(
        [sys.executable, app.__file__],
        cwd=os.path.dirname(app.__file__),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = caller.stdout.readline()
        match = re.match(r"task (\S+) started", line)
        assert match, f"the caller printed {line!r}; stderr: {caller.stderr.read() if caller.poll() is not None else ''}"
        caller.send_signal(signal.SIGINT)
        _, stderr = caller.communicate(timeout=30)
    finally:
        caller.kill()
    assert caller.returncode != 0
    assert "KeyboardInterrupt" in stderr
    with pytest.raises(levers9.TaskCancelled):
        levers9.FunctionCall.from_id(match.group(1)).get(timeout=60)


def test_a_task_that_a_call_started_can_be_followed_by_its_id(capfd):
    # Only a spawned task's end is told on its own channel; the follower of
    # a call's task sees the end in the task's row.
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(app.announce_then_sleep.remote, 2)
        seen = []
        match = wait_for(
            lambda: seen.append(capfd.readouterr().out) or re.search(r"task (\S+) started", "".join(seen)),
            within=60,
        )
        assert levers9.FunctionCall.from_id(match.group(1)).get(timeout=30) == 2
        assert running.result(timeout=30) == 2


def test_50_mb_argument_and_result_round_trip():
    data = bytes(range(256)) * (50 * 1024 * 1024 // 256)
    assert app.echo.remote(data) == data


@pytest.mark.smoke
def test_unicode_output_shows_in_the_callers_terminal(capfd):
    assert app.say.remote("héllo ✓") == 7
    captured = capfd.readouterr()
    assert "héllo ✓" in captured.out
    assert "to stderr: héllo ✓" in captured.err


def test_async_forms():
    async def main():
        value = await app.add.remote.aio(1, 1)
        values = [v async for v in app.square.map.aio(range(5))]
        return value, values

    assert asyncio.run(main()) == (2, [0, 1, 4, 9, 16])


@pytest.mark.skipif(not os.environ.get("LEVERS9_TEST_REVOKED_TOKEN"), reason="needs LEVERS9_TEST_REVOKED_TOKEN")
def test_a_revoked_token_is_an_auth_error_that_says_so(monkeypatch):
    monkeypatch.setenv("LEVERS9_TOKEN", os.environ["LEVERS9_TEST_REVOKED_TOKEN"])
    with pytest.raises(levers9.AuthError, match="revoked"):
        app.add.remote(1, 2)


@pytest.mark.smoke
def test_a_wrong_token_is_an_auth_error_about_the_token(monkeypatch):
    monkeypatch.setenv("LEVERS9_TOKEN", "l9_not-a-real-token")
    with pytest.raises(levers9.AuthError, match="token"):
        app.add.remote(1, 2)

"""The client against an in-process fake controlplane: stubs, Run, spawn, errors."""

import asyncio
import io
import zipfile

import pytest

pytest.importorskip("grpc")

import fake_app  # noqa: E402
import levers9  # noqa: E402
from levers9.errors import RemoteTraceback  # noqa: E402


def test_remote_returns_the_value_and_creates_the_stub_once(fake):
    assert fake_app.add.remote(2, b=3) == 5
    assert fake_app.add.remote(4) == 4
    assert len(fake.stub_requests) == 1
    request = fake.stub_requests[0]
    assert request.name == "fake_app.add"
    assert request.function_name == "add"
    assert request.module_path == "fake_app.py"
    assert request.config.cpu_millicores == 500
    assert request.config.memory_mib == 256
    assert request.config.retries == 2
    assert dict(request.config.env) == {"MODE": "test"}
    assert request.config.image == ""
    assert request.code_digest in fake.objects and request.sdk_digest in fake.objects


def test_code_and_sdk_objects_hold_what_the_container_needs(fake):
    fake_app.identity.remote(1)
    request = fake.stub_requests[0]
    code = zipfile.ZipFile(io.BytesIO(fake.objects[request.code_digest])).namelist()
    assert "fake_app.py" in code
    assert not any("__pycache__" in name for name in code)
    sdk = zipfile.ZipFile(io.BytesIO(fake.objects[request.sdk_digest])).namelist()
    assert "levers9/runner/__main__.py" in sdk and "cloudpickle/__init__.py" in sdk
    assert not any(name.startswith("levers9/v1/") for name in sdk)


def test_objects_already_stored_are_not_uploaded_again(fake):
    fake_app.identity.remote(1)
    puts = fake.put_calls
    fake_app.add.remote(1, 2)  # same code directory and SDK
    assert fake.put_calls == puts


def test_a_remote_exception_is_raised_as_itself_with_the_remote_traceback(fake):
    with pytest.raises(fake_app.AppError, match="it broke") as info:
        fake_app.fail.remote("it broke")
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert 'raise AppError(message)' in cause.traceback_text
    assert "fake_app.py" in cause.traceback_text


def test_an_unpicklable_result_is_a_clear_error(fake):
    with pytest.raises(TypeError, match="cannot be pickled"):
        fake_app.unpicklable.remote()


def test_unpicklable_arguments_fail_before_anything_is_sent(fake):
    import threading

    with pytest.raises(TypeError, match="arguments cannot be pickled"):
        fake_app.identity.remote(threading.Lock())
    assert fake.stub_requests == []


@pytest.mark.parametrize(
    "state, error",
    [("timeout", levers9.TaskTimeout), ("cancelled", levers9.TaskCancelled), ("lost", levers9.TaskFailed)],
)
def test_task_states_map_to_their_exceptions(fake, state, error):
    with pytest.raises(error, match="the message"):
        fake_app.end_in.remote(state, "the message")


def test_output_is_printed_live_by_stream_and_split_characters_stay_whole(fake, capsys):
    check = "✓".encode()
    fake.outputs["printer"] = [("stdout", b"h\xc3\xa9llo " + check[:1]), ("stdout", check[1:] + b"\n"), ("stderr", b"warn\n")]
    assert fake_app.printer.remote() == "printed"
    captured = capsys.readouterr()
    assert captured.out == "héllo ✓\n"
    assert captured.err == "warn\n"


def test_a_retry_is_noted_on_stderr(fake, capsys):
    fake.retry_first.add("flaky")
    assert fake_app.flaky.remote() == "second time lucky"
    assert "retrying (attempt 2)" in capsys.readouterr().err


def test_map_yields_in_input_order_even_when_results_finish_out_of_order(fake):
    delays = [0.2, 0.0, 0.1, 0.0]
    assert list(fake_app.sleepy.map(delays, range(4))) == [0, 1, 2, 3]


def test_map_can_yield_in_completion_order(fake):
    results = list(fake_app.sleepy.map([0.3, 0.0], ["slow", "fast"], order_outputs=False))
    assert results == ["fast", "slow"]


def test_map_raises_the_first_failure_or_returns_exceptions(fake):
    with pytest.raises(ValueError, match="bad input 2"):
        list(fake_app.fail_on.map(range(5), [2] * 5))
    results = list(fake_app.fail_on.map(range(4), [2] * 4, return_exceptions=True))
    assert results[:2] == [0, 1] and results[3] == 3
    assert isinstance(results[2], ValueError)


def test_map_over_nothing_makes_no_calls(fake):
    assert list(fake_app.identity.map([])) == []
    assert fake.stub_requests == []


def test_map_of_10000_inputs_over_grpc_keeps_order_and_the_in_flight_bound(fake):
    fake_app.identity.remote(0)  # stub and uploads out of the way
    n = 10_000
    results = list(fake_app.identity.map(range(n)))
    assert results == list(range(n))
    assert fake.max_in_flight <= 1000
    # Throughput is a benchmark's business (bench/functions), not a test's.


def test_an_error_in_the_callers_iterable_is_raised(fake):
    def inputs():
        yield 1
        raise KeyError("from the iterable")

    with pytest.raises(KeyError, match="from the iterable"):
        list(fake_app.identity.map(inputs()))


def test_spawn_get_and_cancel(fake):
    call = fake_app.add.spawn(1, 2)
    assert call.object_id == call.task_id
    assert call.get(timeout=10) == 3
    slow = fake_app.sleepy.spawn(5, "late")
    with pytest.raises(TimeoutError, match="still running"):
        slow.get(timeout=0.3)
    slow.cancel()
    with pytest.raises(levers9.TaskCancelled):
        levers9.FunctionCall.from_id(slow.task_id).get(timeout=10)


def test_async_forms(fake):
    async def main():
        value = await fake_app.add.remote.aio(20, 22)
        mapped = [v async for v in fake_app.identity.map.aio(range(5))]
        call = await fake_app.add.spawn.aio(1, 1)
        spawned = await call.get.aio(timeout=10)
        return value, mapped, spawned

    assert asyncio.run(main()) == (42, [0, 1, 2, 3, 4], 2)


def test_a_wrong_token_is_an_auth_error_naming_the_token(fake, monkeypatch):
    monkeypatch.setenv("LEVERS9_TOKEN", "wrong")
    with pytest.raises(levers9.AuthError, match="LEVERS9_TOKEN"):
        fake_app.identity.remote(1)


def test_an_unreachable_controlplane_says_so(clean_env):
    clean_env.setenv("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1")
    clean_env.setenv("LEVERS9_CONTROLPLANE_PORT", "9")  # discard: nothing listens
    clean_env.setenv("LEVERS9_TOKEN", "t")
    with pytest.raises(levers9.ControlplaneUnavailable, match="cannot reach the controlplane at 127.0.0.1:9"):
        fake_app.identity.remote(1)


def test_no_configuration_is_a_clear_error(clean_env):
    with pytest.raises(levers9.ConfigError, match="levers9 up"):
        fake_app.identity.remote(1)


def test_enum_values_show_as_the_words_they_were_on_the_wire():
    from levers9.v1 import container_pb2, function_pb2
    from levers9.words import word

    assert word(container_pb2.ContainerState, container_pb2.CONTAINER_STATE_RUNNING) == "running"
    assert word(function_pb2.AttemptOutcome, function_pb2.ATTEMPT_OUTCOME_UNSPECIFIED) == ""
    assert word(function_pb2.FinalTaskState, 99) == "99"

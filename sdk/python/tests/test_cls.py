"""@cls classes against a real stack: enter once per container, methods by
name, parameters as stub identity, exit when the container stops.

Runs only when LEVERS9_TEST_CONTROLPLANE_HOST and LEVERS9_TEST_TOKEN are set
(see test_remote.py); the classes are in cls_app.py.
"""

import asyncio
import uuid

import pytest

import cls_app as app
import stack
from levers9 import Cls, Dict, Queue, RemoteError
from levers9.deployment import deploy


pytestmark = stack.marks()



@pytest.mark.smoke
def test_enter_runs_once_per_container_across_calls():
    counter = app.Counter("smoke")
    first = counter.bump.remote(1)
    second = counter.bump.remote(2)
    # One container (concurrency 1, sequential calls): entered once, state kept.
    assert first["pid"] == second["pid"]
    assert (first["entered"], second["entered"]) == (1, 1)
    assert second["calls"] == first["calls"] + 1
    assert (second["label"], second["x"]) == ("smoke", 2)


def test_two_parameter_sets_are_two_stubs_and_equal_ones_one():
    a, b = app.Counter("a"), app.Counter("b")
    assert a.bump.remote(0)["label"] == "a"
    assert b.bump.remote(0)["label"] == "b"
    assert a._client_and_stub()[1] != b._client_and_stub()[1]
    assert app.Counter(label="a")._client_and_stub()[1] == a._client_and_stub()[1]


def test_map_spawn_and_aio_call_a_method():
    counter = app.Counter("map")
    assert list(counter.square.map(range(6))) == [0, 1, 4, 9, 16, 25]
    assert counter.square.spawn(7).get(timeout=120) == 49

    async def both():
        return await counter.square.remote.aio(3), [x async for x in counter.square.map.aio([4, 5])]

    assert asyncio.run(both()) == (9, [16, 25])


def test_a_method_that_yields_streams_its_items_in_the_instances_container():
    counter = app.Counter("gen")
    pid = counter.bump.remote(0)["pid"]
    items = list(counter.countdown.remote_gen(3))
    assert [(item["label"], item["i"]) for item in items] == [("gen", 3), ("gen", 2), ("gen", 1)]
    # The instance's one container, entered once, serves both kinds of call.
    assert {(item["pid"], item["entered"]) for item in items} == {(pid, 1)}

    async def streamed():
        return [item["i"] async for item in counter.countdown.remote_gen.aio(2)]

    assert asyncio.run(streamed()) == [2, 1]
    with pytest.raises(TypeError, match="Counter.countdown is a generator method"):
        counter.countdown.remote(3)


def test_exit_runs_when_an_idle_container_stops():
    name = f"cls-exit-{uuid.uuid4().hex[:8]}"
    done = Queue.from_name(name, create_if_missing=True)
    try:
        reporter = app.Reporter(name)
        pid = reporter.see.remote("a")
        assert reporter.see.remote("b") == pid
        # keep_warm_seconds=2: the idle container is stopped, running @exit.
        assert done.get(timeout=90) == {"seen": ["a", "b"], "pid": pid}
    finally:
        Queue.delete(name)


def test_a_failing_enter_fails_the_call_naming_the_method():
    with pytest.raises(RemoteError, match=r"(?s)@enter method Unready.load failed.*FileNotFoundError: /weights/model.bin"):
        app.Unready().predict.remote(1)


def test_enter_reads_and_writes_a_dict_the_caller_filled():
    name = f"cls-settings-{uuid.uuid4().hex[:8]}"
    settings = Dict.from_name(name, create_if_missing=True)
    try:
        settings["size"] = "large"
        seen = app.Configured(name).settings.remote()
        assert seen["size"] == "large"
        assert settings["entered"] == seen["pid"]
    finally:
        Dict.delete(name)
    # A Dict call that fails in @enter (a dict nobody made) fails it like
    # any exception there.
    with pytest.raises(RemoteError, match=r"(?s)@enter method Configured.load failed.*NOT_FOUND"):
        app.Configured(f"{name}-missing").settings.remote()


def test_a_deployed_class_is_looked_up_by_name_with_its_default_parameters():
    name = f"cls-{uuid.uuid4().hex[:8]}"
    _, version, deployed = deploy(app, name)
    assert {"Counter", "Reporter", "Unready"} <= {n for n, _ in deployed}
    model = Cls.lookup(name, "Counter")
    assert model.version == version
    assert model.bump.remote(5)["label"] == "plain"
    assert list(model().square.map([2, 3])) == [4, 9]
    assert [item["i"] for item in model.countdown.remote_gen(2)] == [2, 1]
    # Without the code here, the container checks the kind of call.
    with pytest.raises(TypeError, match="Counter.countdown is a generator method"):
        model.countdown.remote(2)
    with pytest.raises(TypeError, match="deployed with its default parameters only"):
        model("other")
    with pytest.raises(ValueError, match=r"Counter has no @method 'nothing'"):
        model.nothing.remote()

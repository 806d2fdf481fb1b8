"""Generator functions against a real stack: items streamed with back-pressure.

Runs only when LEVERS9_TEST_CONTROLPLANE_HOST and LEVERS9_TEST_TOKEN are set
(see test_remote.py); the functions are in generators_app.py.
"""

import asyncio
import time

import pytest

import generators_app as app
import stack
from levers9 import RemoteTraceback
from levers9.deployment import DeployedFunction
from levers9.errors import ControlplaneError
from levers9.runner.stream import WINDOW_ITEMS
from levers9.generator import ACK_EVERY_ITEMS


pytestmark = stack.marks()



@pytest.mark.smoke
def test_remote_gen_yields_the_items_in_order():
    assert list(app.countdown.remote_gen(5)) == [5, 4, 3, 2, 1]


def test_an_async_generator_streams_to_async_for():
    async def take():
        return [square async for square in app.async_squares.remote_gen.aio(6)]

    assert asyncio.run(take()) == [0, 1, 4, 9, 16, 25]


def test_an_exception_mid_stream_comes_after_the_items_before_it():
    taken = []
    with pytest.raises(app.StreamError, match="failed after 3") as info:
        for item in app.fails_after.remote_gen(3):
            taken.append(item)
    assert taken == [0, 1, 2]
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert 'raise StreamError(f"failed after {n}")' in cause.traceback_text


def test_a_slow_consumer_holds_the_generator_back():
    taken_at = []
    made_at = []
    for i, made in app.stamped.remote_gen(40):
        taken_at.append(time.time())
        made_at.append(made)
        time.sleep(0.05)
    # Item i leaves only once the caller acknowledged all but a window of
    # the items before it, and acknowledgements go every few items taken.
    behind = WINDOW_ITEMS + ACK_EVERY_ITEMS + 2
    for i in range(behind, 40):
        assert made_at[i] >= taken_at[i - behind], f"item {i} was made before item {i - behind} was taken"


def test_items_over_a_mebibyte_come_whole():
    size = 3 * 1024 * 1024
    items = list(app.big_items.remote_gen(3, size))
    assert [(len(b), b[:1]) for b in items] == [(size, bytes([i])) for i in range(3)]


def test_leaving_early_stops_the_generator_and_keeps_its_container():
    stream = app.endless.remote_gen()
    first = [next(stream) for _ in range(3)]
    stream.close()
    container = first[0][0]
    assert [i for _, i in first] == [0, 1, 2]
    # max_containers=1: had the cancel cost the container, the next call
    # would run in a new one.
    deadline = time.time() + 30
    while True:
        stream = app.endless.remote_gen()
        again, _ = next(stream)
        stream.close()
        if again == container or time.time() > deadline:
            break
        time.sleep(0.5)
    assert again == container


@pytest.mark.smoke
def test_the_wrong_call_for_the_kind_of_function_says_which_to_use():
    with pytest.raises(TypeError, match=r"countdown is a generator function: iterate over countdown.remote_gen"):
        app.countdown.remote(3)
    with pytest.raises(TypeError, match=r"countdown is a generator function"):
        app.countdown.spawn(3)
    with pytest.raises(TypeError, match=r"plain is not a generator function: call it with plain.remote"):
        list(app.plain.remote_gen(3))


def test_the_controlplane_refuses_the_wrong_call_for_a_stub_it_knows():
    # As a looked-up function is called: by stub id, without the code.
    client, generator_stub = app.countdown._client_and_stub()
    _, plain_stub = app.plain._client_and_stub()
    generator = DeployedFunction(client, "app", "countdown", generator_stub, 1)
    plain = DeployedFunction(client, "app", "plain", plain_stub, 1)
    with pytest.raises(ControlplaneError, match=r"FAILED_PRECONDITION: .*countdown is a generator function"):
        generator.remote(3)
    with pytest.raises(ControlplaneError, match=r"FAILED_PRECONDITION: .*countdown is a generator function"):
        generator.spawn(3)
    with pytest.raises(ControlplaneError, match=r"FAILED_PRECONDITION: .*plain is not a generator function"):
        list(plain.remote_gen(3))
    assert list(generator.remote_gen(2)) == [2, 1]

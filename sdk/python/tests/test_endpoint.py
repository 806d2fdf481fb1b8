"""``@endpoint``: the decorator's checks, and the runner answering a JSON
input with JSON (and a pickled one, on the same container, with a pickle).

Served over HTTP end to end: crates/levers9-cli/tests/endpoints.rs.
"""

import json

import cloudpickle
import pytest
from test_runner import make_worker  # noqa: F401

from levers9 import Endpoint, Function, endpoint
from levers9.wire import write_frame

APP = """
import datetime
from levers9 import endpoint

@endpoint(public=True)
def greet(name="world", excited=False):
    return {"greeting": "hello " + name + ("!" if excited else "")}

@endpoint
def boom(reason):
    raise KeyError(reason)

@endpoint
def when():
    return datetime.date(2024, 1, 2)

@endpoint
async def later(x):
    return [x, x]
"""


def send_json(worker, task_id, kwargs):
    write_frame(worker.conn, {"type": "input", "task_id": task_id, "attempt": 1}, json.dumps(kwargs).encode())


def test_a_json_input_gets_json_back_and_a_pickled_one_a_pickle(make_worker):  # noqa: F811
    worker = make_worker("greet", app=APP)
    worker.read()
    send_json(worker, "t1", {"name": "Ada", "excited": True})
    worker.send_input("t2", "Bob")
    results, _ = worker.results(2)
    assert results["t1"] == ({"type": "result", "task_id": "t1", "state": "complete"}, b'{"greeting": "hello Ada!"}')
    assert cloudpickle.loads(results["t2"][1]) == {"greeting": "hello Bob"}
    assert worker.close() == 0


def test_an_async_endpoint_is_awaited(make_worker):  # noqa: F811
    worker = make_worker("later", app=APP)
    worker.read()
    send_json(worker, "t1", {"x": "é"})
    header, body = worker.results(1)[0]["t1"]
    assert header["state"] == "complete"
    assert json.loads(body) == ["é", "é"]


def test_an_exception_or_a_value_json_cannot_hold_is_an_error_with_its_message(make_worker):  # noqa: F811
    worker = make_worker("boom", app=APP)
    worker.read()
    send_json(worker, "t1", {"reason": "gone"})
    header, _ = worker.results(1)[0]["t1"]
    assert (header["state"], header["message"]) == ("error", "KeyError: 'gone'")
    worker.close()

    worker = make_worker("when", app=APP)
    worker.read()
    send_json(worker, "t1", {})
    header, _ = worker.results(1)[0]["t1"]
    assert header["state"] == "error"
    assert header["message"].startswith("TypeError: when returned a datetime.date, which is not JSON ("), header


def test_the_decorator_names_the_endpoint_and_keeps_the_function_resources():
    def hello(name):
        return name

    made = endpoint(cpu=1, timeout=5, max_containers=3)(hello)
    assert isinstance(made, Endpoint) and isinstance(made, Function)
    assert (made.endpoint_name, made.public) == ("hello", False)
    assert (made.config.cpu_millicores, made.config.timeout_seconds, made.config.max_containers) == (1000, 5, 3)
    assert made("x") == "x"
    named = endpoint(name="say-hi.v2", public=True)(hello)
    assert (named.endpoint_name, named.public) == ("say-hi.v2", True)
    assert endpoint(hello).endpoint_name == "hello"


def test_the_decorator_refuses_what_cannot_be_served_at_decoration():
    def hello():
        return 1

    def numbers():
        yield 1

    with pytest.raises(ValueError, match=r"endpoint name 'a/b' is not valid"):
        endpoint(name="a/b")
    with pytest.raises(TypeError, match="takes no schedule"):
        endpoint(schedule=None)
    with pytest.raises(TypeError, match="public is True or False"):
        endpoint(public="yes")
    with pytest.raises(TypeError, match="is a generator; an endpoint returns one JSON value"):
        endpoint(numbers)
    with pytest.raises(ValueError, match="cpu"):
        endpoint(cpu=-1)(hello)

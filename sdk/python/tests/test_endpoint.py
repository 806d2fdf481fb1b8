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


ASGI_APP = """
import json
from levers9 import asgi

started = []

async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        message = await receive()
        started.append(message["type"])
        await send({"type": "lifespan.startup.complete"})
        return
    request = await receive()
    body = json.dumps({
        "method": scope["method"], "path": scope["path"], "raw_path": scope["raw_path"].decode(),
        "query": scope["query_string"].decode(), "body": request["body"].decode("latin-1"),
        "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
        "started": started,
    }).encode()
    await send({"type": "http.response.start", "status": 201,
                "headers": [(b"content-type", b"application/json"), (b"x-caf", b"caf\\xe9")]})
    await send({"type": "http.response.body", "body": body})

async def events(scope, receive, send):
    # Server-sent events: as many as the path says, or until cancelled.
    if scope["type"] != "http":
        return
    count = scope["path"].strip("/")
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    i = 0
    while count == "forever" or i < int(count):
        await send({"type": "http.response.body", "body": b"data: %d\\n\\n" % i, "more_body": True})
        i += 1
    await send({"type": "http.response.body", "body": b""})

@asgi
def make_events():
    return events

@asgi(name="api")
def make_app():
    return app

@asgi
def not_an_app():
    return 42

async def no_lifespan(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})

@asgi
def make_no_lifespan():
    return no_lifespan
"""


def test_an_asgi_app_that_ignores_the_lifespan_scope_is_served_without_it(make_worker):  # noqa: F811
    worker = make_worker("make_no_lifespan", app=ASGI_APP)
    worker.read()
    write_frame(worker.conn, {"type": "input", "task_id": "t1", "attempt": 1}, asgi_request("GET", "/"))
    header, body = worker.results(1)[0]["t1"]
    assert header["state"] == "complete", header
    assert asgi_answer(body) == ({"status": 204, "headers": []}, b"")


def asgi_request(method, path, body=b"", headers=()):
    head = {"method": method, "path": path, "raw_path": path, "query_string": "q=1", "root_path": "/endpoint/w/api",
            "headers": [list(h) for h in headers]}
    return json.dumps(head).encode() + b"\n" + body


def asgi_answer(body):
    split = body.index(b"\n")
    return json.loads(body[:split]), body[split + 1 :]


def test_an_asgi_app_answers_whole_requests_after_its_lifespan_startup(make_worker):  # noqa: F811
    worker = make_worker("make_app", app=ASGI_APP, concurrency=2)
    worker.read()
    for i in range(2):
        write_frame(
            worker.conn,
            {"type": "input", "task_id": f"t{i}", "attempt": 1},
            asgi_request("PUT", f"/items/{i}", b"raw\nbody", [("x-bytes", "caf\u00e9")]),
        )
    results, _ = worker.results(2)
    for i in range(2):
        header, body = results[f"t{i}"]
        assert header["state"] == "complete", header
        head, answer = asgi_answer(body)
        assert head == {"status": 201, "headers": [["content-type", "application/json"], ["x-caf", "caf\u00e9"]]}
        seen = json.loads(answer)
        assert (seen["method"], seen["path"], seen["query"], seen["body"]) == ("PUT", f"/items/{i}", "q=1", "raw\nbody")
        assert seen["headers"] == [["x-bytes", "caf\u00e9"]]
        # One app per container: its startup ran once, before the first request.
        assert seen["started"] == ["lifespan.startup"]


def items_then_result(worker):
    """The item frames' bodies in order, then the result frame."""
    items = []
    while True:
        header, body = worker.read()
        if header["type"] == "item":
            assert header["index"] == len(items)
            items.append(body)
        elif header["type"] == "result":
            return items, (header, body)


def test_a_streamed_answer_goes_as_items_the_head_with_the_first_chunk(make_worker):  # noqa: F811
    worker = make_worker("make_events", app=ASGI_APP)
    worker.read()
    write_frame(worker.conn, {"type": "input", "task_id": "t1", "attempt": 1}, asgi_request("GET", "/3"))
    items, (header, body) = items_then_result(worker)
    assert asgi_answer(items[0]) == ({"status": 200, "headers": [["content-type", "text/event-stream"]]}, b"data: 0\n\n")
    assert items[1:] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert (header["state"], body) == ("complete", b"3")


def test_a_streamed_answer_waits_for_acknowledgements_and_a_cancel_stops_the_app(make_worker):  # noqa: F811
    from levers9.runner.stream import WINDOW_ITEMS
    from test_runner_generators import ack, nothing_more_within

    worker = make_worker("make_events", app=ASGI_APP)
    worker.read()
    write_frame(worker.conn, {"type": "input", "task_id": "t1", "attempt": 1}, asgi_request("GET", "/forever"))
    for index in range(WINDOW_ITEMS):
        header, _ = worker.read()
        assert (header["type"], header["index"]) == ("item", index)
    assert nothing_more_within(worker, 0.5)
    ack(worker, "t1", 4)
    for index in range(WINDOW_ITEMS, WINDOW_ITEMS + 4):
        header, body = worker.read()
        assert (header["type"], header["index"], body) == ("item", index, b"data: %d\n\n" % index)
    write_frame(worker.conn, {"type": "cancel", "task_id": "t1"}, b"")
    header, _ = worker.read()
    assert (header["type"], header["state"]) == ("result", "cancelled"), header
    assert header["message"] == f"cancelled by the caller after {WINDOW_ITEMS + 4} items"
    # The container stays and serves the next request.
    write_frame(worker.conn, {"type": "input", "task_id": "t2", "attempt": 1}, asgi_request("GET", "/1"))
    items, (header, _) = items_then_result(worker)
    assert len(items) == 1 and header["state"] == "complete"


def test_an_asgi_function_that_returns_no_app_fails_the_request_saying_so(make_worker):  # noqa: F811
    worker = make_worker("not_an_app", app=ASGI_APP)
    worker.read()
    write_frame(worker.conn, {"type": "input", "task_id": "t1", "attempt": 1}, asgi_request("GET", "/"))
    header, _ = worker.results(1)[0]["t1"]
    assert header["state"] == "error"
    assert header["message"] == "TypeError: not_an_app returned a int, not an ASGI app: an @asgi function returns the app, e.g. a FastAPI() or Starlette() instance"


def test_asgi_marks_the_endpoint_and_refuses_an_async_factory():
    from levers9 import asgi

    def make():
        return None

    made = asgi(name="api", public=True)(make)
    assert (made.endpoint_name, made.public, made.asgi) == ("api", True, True)
    assert endpoint(make).asgi is False

    async def make_async():
        return None

    with pytest.raises(TypeError, match="is async; an @asgi function returns its app"):
        asgi(make_async)

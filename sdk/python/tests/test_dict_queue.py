"""Dict and Queue against a real stack: from the caller, and limits and isolation.

Runs only against a stack, like test_remote.py; the other-workspace check
also needs LEVERS9_TEST_OTHER_TOKEN (a token of a second workspace).
"""

import queue
import threading
import time
import uuid

import pytest

import dict_queue_app as app
import stack
from levers9 import ControlplaneError, Dict, Queue
from stack import OTHER_TOKEN, TOKEN
from waiting import wait_for

pytestmark = stack.marks()



def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.smoke
def test_a_dict_keeps_what_is_put_in_it():
    d = Dict.from_name(unique("cache"), create_if_missing=True)
    d["model"] = {"version": 3}
    d[("a", 1)] = [1, 2]
    assert d["model"] == {"version": 3}
    assert d.get(("a", 1)) == [1, 2]
    assert d.get("missing", "default") == "default"
    with pytest.raises(KeyError):
        d["missing"]
    assert "model" in d and "missing" not in d
    assert d.put("model", "kept?", skip_if_exists=True) is False
    assert d["model"] == {"version": 3}
    d.update({"x": 1}, y=2)
    assert len(d) == 4
    assert sorted(map(str, d.keys())) == sorted(map(str, ["model", ("a", 1), "x", "y"]))
    assert dict(d.items())["y"] == 2
    assert d.pop("x") == 1 and d.pop("x", None) is None
    with pytest.raises(KeyError):
        d.pop("x")
    d.clear()
    assert d.len() == 0
    # Another handle on the same name is the same dict.
    d["k"] = "v"
    assert Dict.from_name(d.name)["k"] == "v"


def test_a_dict_that_does_not_exist_is_not_found_and_deleted_is_gone():
    name = unique("nothing")
    # Lazy: looked up on first use.
    missing = Dict.from_name(name)
    with pytest.raises(ControlplaneError, match="create_if_missing=True") as info:
        missing.get("k")
    assert info.value.code == "NOT_FOUND"
    d = Dict.from_name(name, create_if_missing=True)
    d["k"] = 1
    Dict.delete(name)
    with pytest.raises(ControlplaneError) as info:
        d.get("k")
    assert info.value.code == "NOT_FOUND"
    assert Dict.from_name(name, create_if_missing=True).len() == 0


@pytest.mark.smoke
def test_a_queue_is_first_in_first_out():
    q = Queue.from_name(unique("jobs"), create_if_missing=True)
    q.put({"id": 1})
    q.put_many([2, None, 3])
    assert q.len() == 4
    assert q.get() == {"id": 1}
    assert q.get_many(10) == [2, None, 3]
    with pytest.raises(queue.Empty):
        q.get(block=False)
    assert q.get_many(5, block=False) == []
    q.put_many(range(3))
    q.clear()
    assert len(q) == 0


def test_a_blocking_get_waits_for_a_put_and_times_out_with_queue_empty():
    q = Queue.from_name(unique("wait"), create_if_missing=True)
    started = time.monotonic()
    with pytest.raises(queue.Empty):
        q.get(timeout=1)
    waited = time.monotonic() - started
    assert 0.9 <= waited < 10, waited
    threading.Timer(0.5, q.put, args=("late",)).start()
    started = time.monotonic()
    assert q.get(timeout=30) == "late"
    assert time.monotonic() - started < 10


def test_values_over_the_size_limit_are_refused_with_what_to_do():
    d = Dict.from_name(unique("big"), create_if_missing=True)
    with pytest.raises(ControlplaneError, match="1048576-byte limit") as info:
        d["big"] = b"x" * (2 << 20)
    assert info.value.code == "INVALID_ARGUMENT"
    assert "Volume" in str(info.value)
    assert "big" not in d
    q = Queue.from_name(unique("big"), create_if_missing=True)
    with pytest.raises(ControlplaneError, match="maxValueBytes"):
        q.put(b"x" * (2 << 20))
    assert q.len() == 0


def test_more_entries_than_the_limit_are_refused_whole():
    q = Queue.from_name(unique("full"), create_if_missing=True)
    q.put("first")
    with pytest.raises(ControlplaneError, match="limit of 100000") as info:
        q.put_many(range(100_000))
    assert info.value.code == "RESOURCE_EXHAUSTED"
    assert q.len() == 1
    d = Dict.from_name(unique("full"), create_if_missing=True)
    with pytest.raises(ControlplaneError, match="maxDictEntries"):
        d.update({i: i for i in range(100_001)})
    assert d.len() == 0


def test_names_are_checked():
    with pytest.raises(ControlplaneError, match="invalid dict name") as info:
        Dict.from_name("no spaces", create_if_missing=True).len()
    assert info.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ControlplaneError, match="invalid queue name"):
        Queue.from_name("a:b", create_if_missing=True).put(1)


@pytest.mark.skipif(not OTHER_TOKEN, reason="needs LEVERS9_TEST_OTHER_TOKEN")
def test_another_workspace_has_its_own_objects_of_the_same_name(monkeypatch):
    name = unique("shared-name")
    mine = Dict.from_name(name, create_if_missing=True)
    mine["k"] = "mine"
    Queue.from_name(name, create_if_missing=True).put("mine")
    monkeypatch.setenv("LEVERS9_TOKEN", OTHER_TOKEN)
    with pytest.raises(ControlplaneError) as info:
        Dict.from_name(name).len()
    assert info.value.code == "NOT_FOUND"
    with pytest.raises(ControlplaneError) as info:
        mine.get("k")
    assert info.value.code == "NOT_FOUND"
    with pytest.raises(ControlplaneError) as info:
        Queue(name).get(block=False)
    assert info.value.code == "NOT_FOUND"
    theirs = Dict.from_name(name, create_if_missing=True)
    assert theirs.get("k") is None
    theirs["k"] = "theirs"
    monkeypatch.setenv("LEVERS9_TOKEN", TOKEN)
    assert mine["k"] == "mine"


@pytest.mark.smoke
def test_a_function_in_a_container_reads_and_writes_back():
    name = unique("shared")
    d = Dict.from_name(name, create_if_missing=True)
    d["in"] = 21
    Queue.from_name(name, create_if_missing=True).put_many([1, 2, 3])
    answer = app.use_objects.remote("round_trip", name)
    assert answer == {"len": 2, "waited": "empty", "too_big": "INVALID_ARGUMENT", "missing": "NOT_FOUND"}
    assert d["out"] == 42
    assert Queue.from_name(f"{name}-done").get_many(10, block=False) == [10, 20, 30]


def test_a_container_blocked_on_a_get_takes_what_the_caller_puts():
    name = unique("handoff")
    d = Dict.from_name(name, create_if_missing=True)
    jobs = Queue.from_name(name, create_if_missing=True)
    # Handles are lazy: these first uses create what the function opens.
    assert jobs.len() == 0 and d.len() == 0
    call = app.use_objects.spawn("wait_for_one", name)
    # The function says so just before it blocks in its get.
    wait_for(lambda: d.get("waiting"), within=120, every=0.1)
    jobs.put({"job": 7})
    assert call.get(timeout=120) == "got it"
    assert d["got"] == {"job": 7}

"""Image builds against a real stack: a build pool worker, the test registry.

Runs only when LEVERS9_TEST_IMAGE_BUILDS is set as well as the variables of
test_remote.py (crates/levers9-cli/tests/images.rs sets them all).
"""

import os
import threading
import uuid

import grpc
import pytest

import images_app as app
import stack
from levers9 import Image
from levers9.imagebuild import ImageBuildError
from levers9.v1 import container_pb2, container_pb2_grpc
from stack import HOST, TOKEN


SHORT_TIMEOUT = os.environ.get("LEVERS9_TEST_SHORT_BUILD_TIMEOUT")

pytestmark = stack.marks(
    os.environ.get("LEVERS9_TEST_IMAGE_BUILDS"),
    reason="set LEVERS9_TEST_IMAGE_BUILDS and the stack variables to run image builds",
)


@pytest.fixture(autouse=True)
def no_forced_rebuild(monkeypatch):
    monkeypatch.delenv("LEVERS9_FORCE_REBUILD", raising=False)


@pytest.fixture(autouse=True)
def timeout_stack_runs_only_the_timeout_test(request):
    """The stack with a short build timeout runs the timeout test alone."""
    is_timeout_test = request.node.name == "test_a_build_past_its_timeout_is_stopped_and_fails"
    if bool(SHORT_TIMEOUT) != is_timeout_test:
        pytest.skip("runs on the stack with the short build timeout" if is_timeout_test else "not on that stack")


def build_containers():
    """Ids of the build containers the controlplane started so far."""
    channel = grpc.insecure_channel(f"{HOST}:{os.environ['LEVERS9_TEST_CONTROLPLANE_PORT']}")
    stub = container_pb2_grpc.ContainerServiceStub(channel)
    listed = stub.ListContainers(
        container_pb2.ListContainersRequest(), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=30
    )
    channel.close()
    return {c.container_id for c in listed.containers if "levers9.builder" in c.args}


def unique():
    """A spec no other test (or earlier run) built."""
    return Image().with_env({"TEST_RUN": uuid.uuid4().hex})


def test_a_function_runs_in_an_image_with_a_pip_and_an_apt_package():
    assert app.use_tools.remote('{"a": [1, 2]}') == ("six", "[1,2]")


def test_deleted_files_are_gone_at_run_time():
    seen = app.look_around.remote()
    assert seen == {"gone": False, "kept": "two", "env": False, "sh": True, "mode": "pruned"}


def test_the_same_spec_twice_is_built_once():
    spec = unique().add_commands(["echo built > /built"])
    before = build_containers()
    first = spec.build()
    started = build_containers() - before
    assert len(started) == 1
    again = unique_copy(spec).build()
    assert again == first
    assert build_containers() - before == started, "a cache hit started a container"


def unique_copy(image):
    copy = Image(image.python_version, image.base_image)
    copy.steps = list(image.steps)
    return copy


def test_identical_builds_asked_for_at_once_run_once():
    spec = unique().add_commands(["python3 -c 'import time; time.sleep(2)'", "echo once > /once"])
    before = build_containers()
    refs = []
    threads = [threading.Thread(target=lambda: refs.append(unique_copy(spec).build())) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(refs) == 2 and refs[0] == refs[1]
    assert len(build_containers() - before) == 1


def test_a_failing_step_fails_the_build_with_its_exit_code_and_log():
    spec = unique().add_commands(["echo ok"]).add_commands(["echo about to fail; exit 3"])
    with pytest.raises(ImageBuildError) as info:
        spec.build()
    message = str(info.value)
    assert "step 3 of 3" in message and "exit code 3" in message, message
    assert "about to fail" in message, message


def test_a_missing_base_image_is_named():
    with pytest.raises(Exception, match="no-such-image:1"):
        Image(base_image="no-such-image:1").add_commands(["true"]).build()


def test_force_rebuild_builds_again(monkeypatch):
    spec = unique().add_commands(["python3 -c 'import time; print(time.time_ns())' > /stamp"])
    other = unique().add_commands(["echo other > /other"])
    other_ref = other.build()
    spec.build()
    before = build_containers()
    assert unique_copy(spec).build() is not None
    assert build_containers() == before
    rebuilt = unique_copy(spec).build(force_rebuild=True)
    assert rebuilt.split("@")[0].endswith("/images")
    assert len(build_containers() - before) == 1
    # The environment switch does the same.
    monkeypatch.setenv("LEVERS9_FORCE_REBUILD", "1")
    assert unique_copy(spec).build().split("@")[0].endswith("/images")
    assert len(build_containers() - before) == 2
    # Other images' cache is untouched.
    monkeypatch.delenv("LEVERS9_FORCE_REBUILD")
    assert unique_copy(other).build() == other_ref
    assert len(build_containers() - before) == 2


def test_a_build_past_its_timeout_is_stopped_and_fails():
    spec = unique().add_commands(["python3 -c 'import time; time.sleep(600)'"])
    with pytest.raises(ImageBuildError, match="buildTimeoutSeconds") as info:
        spec.build()
    assert f"ran past {SHORT_TIMEOUT} s" in str(info.value)

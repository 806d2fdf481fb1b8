"""Secret and Volume objects against a real stack.

The secret tests run in the SDK suite (crates/levers9-cli/tests/functions.rs);
the volume tests need volume storage, which that stack has not, so they run
in crates/levers9-cli/tests/sdk_objects.rs (JuiceFS), which sets
LEVERS9_TEST_VOLUMES, LEVERS9_TEST_CLI (the levers9 binary) and
LEVERS9_TEST_INLINE_SECRET, and after this file checks that the inline value
is nowhere in the database, Redis or the controlplane's log.
"""

import io
import os
import subprocess

import pytest

import levers9
import levers9.volume
import objects_app as app
import stack
from levers9 import ControlplaneError, Secret, Volume, VolumeFileNotFound, VolumeNotFound
from levers9.client import get_client
from levers9.v1 import secret_pb2, secret_pb2_grpc
from stack import HOST, TOKEN

VOLUMES = os.environ.get("LEVERS9_TEST_VOLUMES")
CLI = os.environ.get("LEVERS9_TEST_CLI")

pytestmark = stack.marks()
needs_volumes = pytest.mark.skipif(
    not VOLUMES, reason="the stack has no volume storage: crates/levers9-cli/tests/sdk_objects.rs runs these on JuiceFS"
)



def secret_names():
    client = get_client()
    stub = client.service(secret_pb2_grpc.SecretServiceStub)
    listed = stub.ListSecrets(secret_pb2.ListSecretsRequest(), timeout=30, metadata=client.metadata)
    return [s.name for s in listed.secrets]


def test_an_inline_secret_reaches_the_container_under_its_variables_only():
    got = app.env_digests.remote(["L9_INLINE_A", "L9_INLINE_B", "L9_PLAIN"])
    assert got == {name: app.sha256(value) for name, value in [("L9_INLINE_A", app.INLINE_VALUE), ("L9_INLINE_B", "second inline value"), ("L9_PLAIN", "plain")]}
    # Stored sealed under derived names that do not show the value.
    names = secret_names()
    for variable in ("L9_INLINE_A", "L9_INLINE_B"):
        assert any(n.startswith("LEVERS9_INLINE_") and n.endswith("_" + variable) for n in names), names
    assert not any(app.INLINE_VALUE in n for n in names)
    assert "<hidden>" in repr(app.INLINE) and app.INLINE_VALUE not in repr(app.INLINE)


def test_the_same_inline_values_are_stored_once_and_new_values_get_new_names():
    client = get_client()
    again = Secret.from_dict({"L9_INLINE_A": app.INLINE_VALUE, "L9_INLINE_B": "second inline value"})
    first = app.INLINE.resolve(client)
    assert again.resolve(client) == first
    before = secret_names()
    changed = Secret.from_dict({"L9_INLINE_A": app.INLINE_VALUE + "-changed"}).resolve(client)
    assert len(changed) == 1 and changed[0] not in first and changed[0].endswith("_L9_INLINE_A")
    assert sorted(secret_names()) == sorted(before + list(changed))


def test_an_inline_secret_is_not_on_any_command_line_in_the_container():
    assert app.processes_showing.remote("L9_INLINE_A") == []


def test_a_missing_named_secret_fails_the_call_naming_it():
    with pytest.raises(ControlplaneError) as info:
        app.needs_a_missing_secret.remote()
    message = str(info.value)
    assert info.value.code == "INVALID_ARGUMENT"
    assert "L9_SECRET_THAT_DOES_NOT_EXIST" in message
    assert "levers9 secret create L9_SECRET_THAT_DOES_NOT_EXIST" in message


def cli_ls(volume, path=""):
    """`levers9 volume ls` as rows of (path, type, size, modified)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LEVERS9_TOKEN": TOKEN,
        "LEVERS9_CONTROLPLANE_HOST": HOST,
        "LEVERS9_CONTROLPLANE_PORT": os.environ.get("LEVERS9_TEST_CONTROLPLANE_PORT", ""),
    }
    out = subprocess.run([CLI, "volume", "ls", volume, path], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["PATH", "TYPE", "SIZE", "MODIFIED"]
    return [tuple(row.split()) for row in rows]


@needs_volumes
def test_files_round_trip_and_agree_with_the_cli_and_a_mounted_function(tmp_path, monkeypatch):
    vol = app.VOLUME
    vol.put_file(b"hello from bytes", "/docs/a.txt")
    local = tmp_path / "b.bin"
    local.write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    # Parts of 1 MiB, so the file goes (and comes back) in four calls.
    monkeypatch.setattr(levers9.volume, "_SEGMENT_BYTES", 1024 * 1024)
    assert vol.put_file(str(local), "/docs/") == local.stat().st_size
    vol.put_file(io.BytesIO(b"from a file object"), "docs/sub/c.txt")

    assert vol.read_file("/docs/a.txt") == b"hello from bytes"
    assert vol.read_file("docs/b.bin") == local.read_bytes()
    chunks = list(vol.iter_file("docs/b.bin"))
    assert len(chunks) >= 4 and b"".join(chunks) == local.read_bytes()
    sink = io.BytesIO()
    assert vol.read_file_into_fileobj("docs/sub/c.txt", sink) == len(b"from a file object")

    entries = list(vol.iterdir("/docs"))
    assert [(e.path, e.type) for e in entries] == [("docs/a.txt", "file"), ("docs/b.bin", "file"), ("docs/sub", "dir")]
    assert [e.size for e in entries] == [16, local.stat().st_size, 0]
    assert all(e.mtime > 0 and e.modified_at for e in entries)
    if CLI:
        shown = [(e.path, e.type, "-" if e.is_dir else str(e.size), e.modified_at) for e in entries]
        assert cli_ls(vol.name, "/docs") == shown
        assert cli_ls(vol.name, "docs/a.txt") == [shown[0]]
    assert [e.path for e in vol.iterdir("docs/a.txt")] == ["docs/a.txt"]

    # What the caller put, a function mounting the volume reads.
    assert app.read_mounted.remote("docs/sub/c.txt") == b"from a file object"

    with pytest.raises(IsADirectoryError, match="recursive=True"):
        vol.remove_file("docs/sub")
    with pytest.raises(IsADirectoryError):
        vol.read_file("docs")
    vol.remove_file("docs/a.txt")
    with pytest.raises(VolumeFileNotFound) as info:
        vol.read_file("docs/a.txt")
    assert isinstance(info.value, FileNotFoundError)
    assert "'docs/a.txt'" in str(info.value) and "sdk-objects" in str(info.value) and "levers9 volume ls" in str(info.value)
    vol.remove_file("docs", recursive=True)
    assert [e.path for e in vol.iterdir("/")] == []
    if CLI:
        assert cli_ls(vol.name) == []


@needs_volumes
def test_a_missing_volume_or_file_is_named_with_what_to_do():
    with pytest.raises(VolumeNotFound) as info:
        Volume.from_name("sdk-no-such-volume").read_file("x.txt")
    assert "sdk-no-such-volume" in str(info.value) and "levers9 volume create sdk-no-such-volume" in str(info.value)
    assert "sdk-no-such-volume" not in [v for v in _volume_names()]
    with pytest.raises(VolumeFileNotFound, match="no file or directory 'nope/x.txt' in volume 'sdk-objects'"):
        app.VOLUME.remove_file("nope/x.txt")
    made = Volume.from_name("sdk-made-on-use", create_if_missing=True)
    assert list(made.iterdir()) == []
    assert "sdk-made-on-use" in _volume_names()
    # A function mounting one makes it before its stub.
    assert app.list_made.remote() == []
    assert "sdk-made-for-a-mount" in _volume_names()


def _volume_names():
    from levers9.v1 import volume_pb2, volume_pb2_grpc

    client = get_client()
    stub = client.service(volume_pb2_grpc.VolumeServiceStub)
    return list(stub.ListVolumes(volume_pb2.ListVolumesRequest(), timeout=30, metadata=client.metadata).names)

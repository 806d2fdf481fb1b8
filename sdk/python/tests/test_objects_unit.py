"""Secret and Volume objects without a stack: what is checked before anything
is sent, and what never reaches a repr or an error message."""

import subprocess
import sys

import pytest

from levers9 import FileEntry, Secret, Volume, function
from levers9.resources import build_config
from levers9.volume import _mtime


def test_bad_secrets_are_refused_before_anything_is_sent():
    with pytest.raises(ValueError, match="environment variable"):
        Secret.from_name("not-a-variable")
    with pytest.raises(ValueError, match="reserved"):
        Secret.from_dict({"LEVERS9_X": "v"})
    with pytest.raises(ValueError, match="non-empty dict"):
        Secret.from_dict({})
    with pytest.raises(ValueError, match="must be a string") as info:
        Secret.from_dict({"K": 12345})
    assert "12345" not in str(info.value)
    with pytest.raises(ValueError, match="0 bytes"):
        Secret.from_dict({"K": ""})
    with pytest.raises(ValueError, match="secrets is a list"):
        build_config(secrets=Secret.from_name("A"))


def test_inline_values_never_show_and_named_secrets_become_names():
    inline = Secret.from_dict({"B": "hunter2", "A": "x"})
    assert "hunter2" not in repr(inline) and repr(inline) == "Secret.from_dict({'A': <hidden>, 'B': <hidden>})"
    assert inline.variables == ("A", "B") and inline.name is None
    assert inline == Secret.from_dict({"A": "x", "B": "hunter2"}) != Secret.from_dict({"A": "x", "B": "other"})
    config = build_config(secrets=["PLAIN", Secret.from_name("NAMED"), inline])
    assert config.secrets == ("PLAIN", "NAMED", inline)


def test_the_decorator_and_from_name_import_no_grpc():
    code = (
        "import sys\n"
        "from levers9 import Secret, Volume, function\n"
        "@function(secrets=[Secret.from_dict({'K': 'v'})], volumes=[Volume.from_name('v', create_if_missing=True)])\n"
        "def f(): pass\n"
        "assert 'grpc' not in sys.modules, 'grpc imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_volume_names_and_the_old_form_still_work():
    assert Volume("data", mount_path="/d") == Volume.from_name("data", mount_path="/d")
    with pytest.raises(ValueError, match="invalid volume name"):
        Volume.from_name("no/slash")

    @function(volumes=[Volume("a", mount_path="/a"), Volume.from_name("b", mount_path="/b")])
    def f():
        pass

    assert f.config.volumes == (("a", "/a"), ("b", "/b"))
    made = Volume.from_name("c", mount_path="/c", create_if_missing=True)
    assert build_config(volumes=[Volume("a"), made]).volumes_to_create == (made,)


def test_modified_times_parse_with_nanoseconds():
    assert _mtime("2026-12-04T18:00:00.5+00:00") == pytest.approx(1796407200.5)
    assert _mtime("2026-12-04T18:00:00.123456789Z") == pytest.approx(1796407200.123456789)
    assert _mtime("") == 0.0
    entry = FileEntry(path="d", type="dir", size=0, mtime=0.0, modified_at="")
    assert entry.is_dir

"""Code objects: deterministic zips and the ignore rules."""

import io
import os
import stat
import zipfile

import pytest

from levers9.archive import ArchiveTooLarge, build_zip, code_archive, collect_tree
from levers9.ignore import parse_ignore_file


def _tree(root, files):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def _names(archive):
    return zipfile.ZipFile(io.BytesIO(archive.data)).namelist()


APP = {
    "app.py": "def f(): pass\n",
    "lib/util.py": "X = 1\n",
    "lib/__pycache__/util.cpython-311.pyc": b"\x00",
    "stale.pyc": b"\x00",
    ".git/HEAD": "ref\n",
    ".venv/bin/python": "#!\n",
    "venv/lib.py": "",
    "node_modules/x/index.js": "",
}


def test_the_same_tree_gives_the_same_digest_wherever_and_whenever_it_is_built(tmp_path):
    one = _tree(tmp_path / "one", APP)
    two = _tree(tmp_path / "two", APP)
    os.utime(two / "app.py", (1_000_000, 1_000_000))  # mtimes must not matter
    assert code_archive(str(one)).digest == code_archive(str(two)).digest
    assert code_archive(str(one)).data == code_archive(str(one)).data
    assert code_archive(str(one)).digest.startswith("sha256:") and len(code_archive(str(one)).digest) == 71


def test_caches_vcs_and_environments_are_skipped(tmp_path):
    root = _tree(tmp_path, APP)
    assert _names(code_archive(str(root))) == ["app.py", "lib/util.py"]


def test_a_change_of_content_name_or_mode_changes_the_digest(tmp_path):
    root = _tree(tmp_path, APP)
    before = code_archive(str(root)).digest
    (root / "app.py").write_text("def f(): return 1\n")
    after_content = code_archive(str(root)).digest
    assert after_content != before
    (root / "app.py").chmod(0o755)
    after_mode = code_archive(str(root)).digest
    assert after_mode != after_content
    (root / "new.txt").write_text("")
    assert code_archive(str(root)).digest != after_mode


def test_entries_are_sorted_with_fixed_time_and_permissions(tmp_path):
    root = _tree(tmp_path, {"b.py": "", "a/z.py": "", "run.sh": "#!/bin/sh\n"})
    (root / "run.sh").chmod(0o700)
    (root / "b.py").chmod(0o600)
    infos = zipfile.ZipFile(io.BytesIO(code_archive(str(root)).data)).infolist()
    assert [i.filename for i in infos] == ["a/z.py", "b.py", "run.sh"]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    modes = {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in infos}
    assert modes == {"a/z.py": 0o644, "b.py": 0o644, "run.sh": 0o755}


def test_levers9ignore_is_honoured(tmp_path):
    root = _tree(
        tmp_path,
        {
            "app.py": "",
            "data/big.csv": "",
            "nested/data/keep.txt": "",
            "notes.txt": "",
            "sub/notes.txt": "",
            "logs/a.log": "",
            "deep/x/y.log": "",
            "build": "a file named build, kept: the rule is for directories",
            "out/build/artifact": "",
            "docs/guide.md": "",
            "docs/api/ref.md": "",
            ".levers9ignore": "# comment\n\n/data\n/notes.txt\n*.log\nbuild/\ndocs/*.md\n",
        },
    )
    assert _names(code_archive(str(root))) == [
        ".levers9ignore",
        "app.py",
        "build",
        "nested/data/keep.txt",
        "sub/notes.txt",
    ]


def test_ignore_patterns_parse_like_gitignore():
    patterns = parse_ignore_file("a\n/b\nc/\nd/e\n**/f\n")
    shapes = [(p.glob, p.anchored, p.dir_only) for p in patterns]
    assert shapes == [("a", False, False), ("b", True, False), ("c", False, True), ("d/e", True, False), ("f", False, False)]


def test_negated_ignore_patterns_are_refused_with_the_line():
    with pytest.raises(ValueError, match=r":2: re-including with '!' is not supported"):
        parse_ignore_file("*.csv\n!keep.csv\n", ".levers9ignore")


def test_a_tree_over_the_limit_is_refused_with_advice(tmp_path):
    root = _tree(tmp_path, {"a.bin": os.urandom(4096), "b.bin": os.urandom(4096)})
    with pytest.raises(ArchiveTooLarge, match=r"\.levers9ignore"):
        build_zip(collect_tree(str(root)), limit=5000, what="code object")


def test_symlinks_to_files_are_followed_and_broken_links_skipped(tmp_path):
    root = _tree(tmp_path / "root", {"real.py": "X = 1\n"})
    (root / "alias.py").symlink_to(root / "real.py")
    (root / "broken.py").symlink_to(root / "missing.py")
    archive = zipfile.ZipFile(io.BytesIO(code_archive(str(root)).data))
    assert archive.namelist() == ["alias.py", "real.py"]
    assert archive.read("alias.py") == b"X = 1\n"

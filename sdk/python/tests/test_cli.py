"""`python -m levers9 run file.py::fn args`."""

import os
import subprocess
import sys

from levers9.__main__ import main, parse_arguments

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = '''
from levers9 import function

@function
def shout(text):
    return text.upper()

def undecorated():
    pass

if __name__ == "__main__":
    raise SystemExit("the __main__ block ran")
'''


def test_arguments_are_literals_or_strings_and_name_value_pairs_are_keywords():
    args, kwargs = parse_arguments(["3", "hello world", "[1, 2]", "'quoted'", "n=4", "label=x y", "a==b", "1=2"])
    assert args == [3, "hello world", [1, 2], "quoted", "a==b", "1=2"]
    assert kwargs == {"n": 4, "label": "x y"}


def _run_cli(*argv, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEVERS9_")}
    env["HOME"] = str(cwd)
    return subprocess.run([sys.executable, "-m", "levers9", *argv], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_missing_or_undecorated_function_lists_the_functions_in_the_file(tmp_path):
    (tmp_path / "app.py").write_text(SCRIPT)
    missing = _run_cli("run", "app.py::nope", cwd=tmp_path)
    assert missing.returncode == 2
    assert "app.py has no function 'nope'; levers9 functions there: shout" in missing.stderr
    plain = _run_cli("run", "app.py::undecorated", cwd=tmp_path)
    assert plain.returncode == 2
    assert "undecorated in app.py is not decorated with @levers9.function" in plain.stderr
    assert "__main__ block ran" not in missing.stderr + plain.stderr


def test_bad_usage_exits_2(tmp_path):
    assert _run_cli("run", "app.py", cwd=tmp_path).returncode == 2
    assert _run_cli("frobnicate", cwd=tmp_path).returncode == 2
    assert _run_cli("run", "missing.py::f", cwd=tmp_path).returncode == 2


def test_without_configuration_the_call_fails_with_exit_1_and_advice(tmp_path):
    (tmp_path / "app.py").write_text(SCRIPT)
    result = _run_cli("run", "app.py::shout", "hi", cwd=tmp_path)
    assert result.returncode == 1
    assert "no levers9 controlplane configured" in result.stderr


def test_the_result_is_printed(fake, capsys):
    assert main(["run", os.path.join(HERE, "fake_app.py::add"), "2", "b=3"]) == 0
    assert capsys.readouterr().out == "5\n"


def test_none_is_not_printed(fake, capsys):
    assert main(["run", os.path.join(HERE, "fake_app.py::identity"), "None"]) == 0
    assert capsys.readouterr().out == ""


def test_a_remote_exception_exits_1_with_the_remote_traceback(fake, capsys):
    assert main(["run", os.path.join(HERE, "fake_app.py::fail"), "no luck"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "raise AppError(message)" in err
    assert err.rstrip().endswith("AppError: no luck")

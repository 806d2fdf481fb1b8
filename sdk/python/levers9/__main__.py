"""``python -m levers9 run path/file.py::fn [args...]``: call a function remotely from a shell.
``python -m levers9 deploy path/file.py [--name APP]``: deploy the file's functions as an app.

The file is imported under its stem (its ``if __name__ == "__main__":`` block
does not run) and its directory is the code root. Each argument is a Python
literal (``3``, ``'a b'``, ``[1, 2]``) or, failing that, the raw string;
``name=value`` arguments are keyword arguments. The result is printed unless
it is None. The ``levers9 run`` command of the CLI execs this.

Exit codes: 0 success, 1 the call failed (remote traceback on stderr),
2 bad usage (no such file or function), 130 interrupted.
"""

from __future__ import annotations

import ast
import os
import sys
import traceback
from typing import List, Tuple

USAGE = (
    "usage: python -m levers9 run path/to/file.py::function [arg ...] [name=value ...]\n"
    "       python -m levers9 deploy path/to/file.py [--name APP]"
)

_EXIT_FAILED = 1
_EXIT_USAGE = 2
_EXIT_INTERRUPTED = 130


def parse_value(text: str):
    """A Python literal if it is one, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_arguments(raw: List[str]) -> Tuple[list, dict]:
    args, kwargs = [], {}
    for item in raw:
        name, sep, value = item.partition("=")
        # "a==b" reads as text, not as a="=b".
        if sep and name.isidentifier() and not value.startswith("="):
            kwargs[name] = parse_value(value)
        else:
            args.append(parse_value(item))
    return args, kwargs


def find_function(path: str, name: str):
    """The levers9 Function `name` in the file at `path`; SystemExit(2) with the choices otherwise."""
    from . import Function
    from .modules import LoadError, find_attribute, load_file

    try:
        module = load_file(path)
    except LoadError as e:
        raise SystemExit(_usage_error(str(e)))
    try:
        target = find_attribute(module, name)
    except LoadError:
        target = None
    if isinstance(target, Function):
        return target
    available = sorted(k for k, v in vars(module).items() if isinstance(v, Function))
    listed = ", ".join(available) if available else "none (decorate one with @levers9.function)"
    if target is None:
        raise SystemExit(_usage_error(f"{os.path.basename(path)} has no function {name!r}; levers9 functions there: {listed}"))
    raise SystemExit(
        _usage_error(f"{name} in {os.path.basename(path)} is not decorated with @levers9.function; levers9 functions there: {listed}")
    )


def _usage_error(message: str) -> int:
    print(f"levers9: {message}", file=sys.stderr)
    return _EXIT_USAGE


def report_failure(exc: BaseException) -> None:
    """The remote traceback when there is one, else the error as one line."""
    from .errors import Levers9Error, RemoteTraceback

    cause = exc.__cause__
    if isinstance(cause, RemoteTraceback):
        print(cause.traceback_text.rstrip("\n"), file=sys.stderr)
    elif isinstance(exc, Levers9Error):
        print(f"levers9: {exc}", file=sys.stderr)
    else:
        traceback.print_exception(type(exc), exc, exc.__traceback__)


def run(argv: List[str]) -> int:
    if not argv or "::" not in argv[0]:
        return _usage_error(USAGE.replace("usage: ", "expected "))
    path, _, name = argv[0].rpartition("::")
    if not path or not name:
        return _usage_error(USAGE)
    fn = find_function(path, name)
    args, kwargs = parse_arguments(argv[1:])
    try:
        result = fn.remote(*args, **kwargs)
    except KeyboardInterrupt:
        print("levers9: interrupted; the call was cancelled", file=sys.stderr)
        return _EXIT_INTERRUPTED
    except Exception as e:
        report_failure(e)
        return _EXIT_FAILED
    if result is not None:
        print(result)
    return 0


def deploy(argv: List[str]) -> int:
    from .deployment import deploy as deploy_module
    from .modules import LoadError, load_file

    name = None
    if len(argv) == 3 and argv[1] == "--name":
        name = argv[2]
    elif len(argv) != 1:
        return _usage_error(USAGE)
    try:
        module = load_file(argv[0])
    except LoadError as e:
        return _usage_error(str(e))
    try:
        app, version, functions = deploy_module(module, name)
    except Exception as e:
        report_failure(e)
        return _EXIT_FAILED
    print(f"deployed app {app} version {version}")
    for function_name, stub_id in functions:
        schedule = getattr(module, function_name).schedule
        print(f"  {function_name}  {stub_id}" + (f"  {schedule!r}" if schedule is not None else ""))
    return 0


def main(argv: List[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else _EXIT_USAGE
    if argv[0] == "deploy":
        return deploy(argv[1:])
    if argv[0] != "run":
        return _usage_error(f"unknown command {argv[0]!r}\n{USAGE}")
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

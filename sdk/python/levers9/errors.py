"""The exceptions the SDK raises, one per thing that can go wrong for a caller.

Everything levers9 itself raises derives from `Levers9Error`, so a caller can
tell "my function raised" (the function's own exception, re-raised here) from
"the platform could not run it" (a `Levers9Error`).
"""


class Levers9Error(Exception):
    """Base of every error the SDK raises on its own account."""


class ConfigError(Levers9Error):
    """No controlplane configured, or the configuration is not readable."""


class AuthError(Levers9Error):
    """The controlplane refused the token (missing, wrong, revoked, or not allowed)."""


class ControlplaneUnavailable(Levers9Error):
    """The controlplane could not be reached."""


class ControlplaneError(Levers9Error):
    """The controlplane answered a call with an error.

    `code` is the gRPC status code name (e.g. ``"INVALID_ARGUMENT"``), so a
    caller can branch on it without importing grpc.
    """

    def __init__(self, message, code=""):
        super().__init__(message)
        self.code = code


class RemoteError(Levers9Error):
    """The function raised an exception that could not be brought back as itself
    (it could not be pickled in the container, or not unpickled here); the
    message carries the remote message and traceback."""


class TaskTimeout(Levers9Error):
    """The function ran longer than its `timeout`."""


class TaskCancelled(Levers9Error):
    """The task was cancelled before it finished."""


class TaskFailed(Levers9Error):
    """The task could not run to an answer for a reason outside the function,
    e.g. its container failed to start."""


class RemoteTraceback(Exception):
    """Carries the traceback printed in the container.

    Set as ``__cause__`` of a re-raised remote exception so that Python's own
    traceback display shows where the function failed remotely, followed by
    where the call was made locally.
    """

    def __init__(self, traceback_text):
        super().__init__(traceback_text)
        self.traceback_text = traceback_text

    def __str__(self):
        # Bare text: Python prints "RemoteTraceback: " before it, and a
        # leading newline keeps the remote traceback's first line aligned.
        return "\n" + self.traceback_text.rstrip("\n")

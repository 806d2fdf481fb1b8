"""Schedules of deployed functions: ``@function(schedule=Cron("*/5 * * * *"))``
or ``@function(schedule=Period(minutes=5))``.

A schedule takes effect when the function's file is deployed (``levers9
deploy``): the controlplane then calls the function with no arguments at
every tick, once per tick across its replicas, and each run is a task
(``levers9 task list``). Times are UTC. A function that is only called with
``.remote()`` is never run on its schedule.

Stdlib only: the runner imports the user's module, and with it this, in
images that have nothing else.
"""

from __future__ import annotations

import re

# The longest period the controlplane takes: a year.
MAX_PERIOD_SECONDS = 366 * 24 * 3600

_NICKNAMES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@hourly")
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_WEEKDAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
# (name, lowest, highest, names) per field, in order.
_FIELDS = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _WEEKDAYS),
)
_HELP = 'give five fields, minute hour day-of-month month day-of-week (UTC), e.g. "*/5 * * * *"'


class Cron:
    """At the times a cron expression matches, in UTC.

    Five fields, ``minute hour day-of-month month day-of-week``, each ``*``,
    a number, a range ``a-b``, a list ``a,b`` or a step ``*/n`` / ``a-b/n``
    (months and weekdays also by name: ``jan``, ``mon-fri``); or one of
    ``@hourly``, ``@daily``, ``@weekly``, ``@monthly``, ``@yearly``.
    An expression that does not parse raises ValueError.
    """

    def __init__(self, expression: str):
        if not isinstance(expression, str):
            raise TypeError(f"Cron takes a string; got a {type(expression).__name__}")
        self.expression = " ".join(expression.split())
        problem = _cron_problem(self.expression)
        if problem:
            raise ValueError(f"cron expression {expression!r} does not parse ({problem}): {_HELP}")

    def __repr__(self):
        return f"Cron({self.expression!r})"

    def __eq__(self, other):
        return isinstance(other, Cron) and other.expression == self.expression

    def __hash__(self):
        return hash(("cron", self.expression))


class Period:
    """Every so many seconds, minutes, hours or days (added up), at the
    multiples of the period since the Unix epoch: ``Period(minutes=5)`` runs
    at :00, :05, :10… of every hour. At least 1 second, at most a year, a
    whole number of seconds."""

    def __init__(self, *, seconds: float = 0, minutes: float = 0, hours: float = 0, days: float = 0):
        parts = {"seconds": seconds, "minutes": minutes, "hours": hours, "days": days}
        for name, value in parts.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"Period({name}={value!r}): give a number of {name}, 0 or more")
        total = seconds + 60 * minutes + 3600 * hours + 86400 * days
        if total != int(total) or not 1 <= total <= MAX_PERIOD_SECONDS:
            raise ValueError(
                f"a period of {total} seconds is not valid: give a whole number of seconds "
                f"from 1 to {MAX_PERIOD_SECONDS}, e.g. Period(minutes=5)"
            )
        self.seconds = int(total)

    def __repr__(self):
        return f"Period(seconds={self.seconds})"

    def __eq__(self, other):
        return isinstance(other, Period) and other.seconds == self.seconds

    def __hash__(self):
        return hash(("period", self.seconds))


def check_schedule(schedule, fn) -> None:
    """Raises for a schedule that is neither Cron nor Period, or a function
    that cannot be called with no arguments (which is how a tick calls it)."""
    if schedule is None:
        return
    if not isinstance(schedule, (Cron, Period)):
        raise TypeError(
            f"schedule= takes levers9.Cron(\"*/5 * * * *\") or levers9.Period(minutes=5); got {schedule!r}"
        )
    import inspect

    try:
        inspect.signature(fn).bind()
    except TypeError:
        raise ValueError(
            f"{fn.__qualname__} has a schedule, so it is called with no arguments: "
            "give its parameters defaults"
        ) from None


def to_proto(schedule, pb):
    """The API's Schedule for a Cron or Period (`pb`: the function_pb2 module)."""
    if isinstance(schedule, Cron):
        return pb.Schedule(cron=schedule.expression)
    return pb.Schedule(period_seconds=schedule.seconds)


def _cron_problem(expression: str):
    """Why the expression does not parse, or None."""
    if expression.lower() in _NICKNAMES:
        return None
    fields = expression.split(" ") if expression else []
    if len(fields) != 5:
        return f"{len(fields)} fields"
    for text, (name, low, high, names) in zip(fields, _FIELDS):
        problem = _field_problem(text.lower(), low, high, names)
        if problem:
            return f"{name} {text!r}: {problem}"
    return None


_ITEM = re.compile(r"^(?P<base>\*|\?|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>\d+))?$")
# Day-of-month L, nW, LW; day-of-week nL, n#k: the controlplane's parser knows them.
_SPECIAL = re.compile(r"^(l|lw|\d{1,2}w|[0-7a-z]{1,3}l|[0-7a-z]{1,3}#[1-5])$")


def _field_problem(text: str, low: int, high: int, names: dict):
    for item in text.split(","):
        if _SPECIAL.match(item) and not item.isdigit():
            continue
        match = _ITEM.match(item)
        if not match:
            return f"{item!r} is not *, a value, a range a-b or a step */n"
        base, step = match.group("base"), match.group("step")
        if step is not None and int(step) == 0:
            return "a step of 0"
        if base in ("*", "?"):
            continue
        bounds = base.split("-")
        if step is not None and len(bounds) == 1:
            return f"a step after a single value ({item!r}): use */n or a-b/n"
        values = []
        for bound in bounds:
            value = names.get(bound)
            if value is None:
                if not bound.isdigit():
                    return f"{bound!r} is not a number" + (" or a name" if names else "")
                value = int(bound)
            if not low <= value <= high:
                return f"{value} is outside {low}-{high}"
            values.append(value)
        if len(values) == 2 and values[0] > values[1]:
            return f"the range {base!r} runs backwards"
    return None

"""Schedules: what ``schedule=`` accepts, the errors a user reads at
decoration, and what a deploy sends."""

import types

import pytest

from levers9 import Cron, Function, Period, function
from levers9 import deployment
from levers9.v1 import function_pb2 as pb


@pytest.mark.parametrize(
    "expression",
    ["*/5 * * * *", "0 9 * * mon-fri", "30 2 1,15 jan,jul *", "0 0-23/2 * * *", "@daily", "@HOURLY", "0 0 L * *", "0 0 * * fri#2", "0 0 * * 7"],
)
def test_cron_takes_five_fields_or_a_nickname(expression):
    assert Cron(expression).expression == expression


@pytest.mark.parametrize(
    "expression, says",
    [
        ("*/5 * * *", "4 fields"),
        ("* * * * * *", "6 fields"),
        ("61 * * * *", "minute '61': 61 is outside 0-59"),
        ("0 24 * * *", "hour '24': 24 is outside 0-23"),
        ("0 0 0 * *", "day-of-month '0': 0 is outside 1-31"),
        ("0 0 * 13 *", "month '13'"),
        ("0 0 * * funday", "day-of-week 'funday'"),
        ("*/0 * * * *", "a step of 0"),
        ("5-1 * * * *", "runs backwards"),
        ("every five minutes", "3 fields"),
        ("", "0 fields"),
    ],
)
def test_a_cron_that_does_not_parse_is_a_value_error_saying_why(expression, says):
    with pytest.raises(ValueError) as raised:
        Cron(expression)
    text = str(raised.value)
    assert "does not parse" in text and says in text, text
    assert 'e.g. "*/5 * * * *"' in text


def test_period_adds_up_its_units():
    assert Period(seconds=2).seconds == 2
    assert Period(minutes=5).seconds == 300
    assert Period(hours=1, minutes=30).seconds == 5400
    assert Period(days=1).seconds == 86400
    assert Period(minutes=0.5).seconds == 30


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"seconds": 0}, {"seconds": 1.5}, {"seconds": -1}, {"minutes": "5"}, {"days": 400}, {"seconds": True}],
)
def test_a_period_that_is_not_a_whole_positive_number_of_seconds_is_a_value_error(kwargs):
    with pytest.raises(ValueError, match="Period|period"):
        Period(**kwargs)


def test_a_scheduled_function_keeps_its_schedule_outside_its_stub_config():
    @function(schedule=Period(minutes=5))
    def report(day=None):
        return day

    @function
    def plain():
        pass

    assert report.schedule == Period(seconds=300)
    assert plain.schedule is None
    assert report.config == plain.config  # same options, so the same stub
    assert report.local() is None


def test_schedule_takes_only_cron_or_period():
    with pytest.raises(TypeError, match=r"schedule= takes levers9.Cron"):

        @function(schedule="*/5 * * * *")
        def f():
            pass


def test_a_scheduled_function_must_be_callable_with_no_arguments():
    with pytest.raises(ValueError, match="called with no arguments: give its parameters defaults"):

        @function(schedule=Cron("@hourly"))
        def needs(x):
            return x


class _FakeClient:
    def __init__(self):
        self.calls = []

    def call(self, method, request):
        self.calls.append((method, request))
        return pb.DeployResponse(version=3)


def test_a_deploy_sends_each_functions_schedule(monkeypatch):
    client = _FakeClient()
    monkeypatch.setattr(Function, "_client_and_stub", lambda self: (client, f"stub-{self.raw_f.__name__}"))
    module = types.ModuleType("jobs")
    module.__file__ = "/somewhere/jobs.py"
    exec(
        "from levers9 import Cron, Period, function\n"
        "@function(schedule=Cron('*/5 * * * *'))\n"
        "def every_five():\n    pass\n"
        "@function(schedule=Period(seconds=2))\n"
        "def often():\n    pass\n"
        "@function\n"
        "def plain(x):\n    return x\n",
        module.__dict__,
    )

    app, version, functions = deployment.deploy(module)

    assert (app, version) == ("jobs", 3)
    assert [name for name, _ in functions] == ["every_five", "often", "plain"]
    method, request = client.calls[0]
    assert method == "Deploy"
    sent = {f.function_name: f for f in request.functions}
    assert sent["every_five"].schedule.cron == "*/5 * * * *"
    assert sent["often"].schedule.period_seconds == 2
    assert not sent["plain"].HasField("schedule")

"""@cls without a stack: parameters, stub identity and the errors that say what to do.

Stub requests go to the in-process fake controlplane (conftest's `fake`),
which records them; nothing runs remotely here (test_cls.py does that).
"""

import threading
import types

import cloudpickle
import pytest

from levers9 import cls, enter, exit, method
from levers9.deployment import deploy
from levers9.errors import Levers9Error


@cls(keep_warm_seconds=5)
class Model:
    def __init__(self, size: str = "small", layers: int = 2):
        self.size = size
        self.layers = layers

    @enter
    def load(self):
        self.loaded = f"{self.size}/{self.layers}"

    @method
    def predict(self, x):
        return self.loaded, x

    @method()
    async def apredict(self, x):
        return x * 2

    @method
    def stream(self, n):
        yield from range(n)

    def helper(self):
        return "local only"

    @exit()
    def close(self):
        pass


@cls
class NoInit:
    @method
    def ping(self):
        return "pong"


def _stub_config(fake, instance):
    instance._client_and_stub()
    return fake.stub_requests[-1]


def test_equal_parameters_are_one_stub_and_different_ones_another(fake):
    first = _stub_config(fake, Model("large"))
    # The same parameters written another way (defaults, keywords): the same stub.
    same = Model(size="large", layers=2)
    same._client_and_stub()
    assert len(fake.stub_requests) == 1
    assert same.parameters == Model("large").parameters
    other = _stub_config(fake, Model("large", layers=3))
    assert len(fake.stub_requests) == 2
    assert first.config.class_parameters != other.config.class_parameters
    assert cloudpickle.loads(first.config.class_parameters) == (("large", 2), {})
    assert (first.function_name, first.name) == ("Model", "test_cls_unit.Model")
    assert first.config.keep_warm_seconds == 5
    assert not first.config.generator


def test_a_class_without_init_has_empty_parameters(fake):
    assert _stub_config(fake, NoInit()).config.class_parameters == cloudpickle.dumps(((), {}))


def test_local_runs_the_method_here_on_one_entered_instance():
    instance = Model("tiny")
    assert instance.predict.local(1) == ("tiny/2", 1)
    assert instance.apredict.local(4) == 8
    assert instance._local_instance() is instance._local_instance()


def test_parameters_that_do_not_fit_init_or_do_not_pickle_say_so():
    with pytest.raises(TypeError, match=r"Model\(\.\.\.\): .*unexpected keyword argument 'colour'"):
        Model(colour="red")
    with pytest.raises(TypeError, match=r"parameters of Model\(\.\.\.\) cannot be pickled .*load anything bigger in an @enter"):
        Model(threading.Lock())
    with pytest.raises(TypeError, match="NoInit has no __init__, so it takes no parameters"):
        NoInit(1)


def test_remote_calls_need_an_instance_and_a_method():
    with pytest.raises(TypeError, match=r"Model is a class: call a @method of an instance, e.g. Model\(\).predict.remote"):
        Model.remote(1)
    with pytest.raises(TypeError, match=r"Model.predict belongs to an instance: call Model\(\).predict.remote"):
        Model.predict.remote(1)
    with pytest.raises(TypeError, match="Model.helper is not a @method: decorate it with @levers9.method"):
        Model().helper.remote()
    with pytest.raises(TypeError, match="Model.load is @enter: the container runs it"):
        Model().load.remote()
    with pytest.raises(AttributeError, match=r"Model has no @method 'nothing' \(its @methods: predict, apredict, stream\)"):
        Model().nothing
    with pytest.raises(TypeError, match=r"Model.stream is a generator method: iterate over .remote_gen\(...\)"):
        Model().stream.remote(3)
    with pytest.raises(TypeError, match="Model.stream is a generator method"):
        list(Model().stream.map([3]))
    with pytest.raises(TypeError, match=r"Model.predict is not a generator: call it with .remote\(...\)"):
        list(Model().predict.remote_gen(3))


def test_a_generator_call_names_its_method_as_items():
    from levers9.classes import Items

    # What the runner tells the two kinds of call apart by: a str subclass,
    # so code that reads the name as a string still works.
    name = cloudpickle.loads(cloudpickle.dumps(Items("stream")))
    assert isinstance(name, Items) and name == "stream"
    assert list(Model().stream.local(3)) == [0, 1, 2]


def test_methods_of_a_class_without_cls_say_to_add_it():
    class Plain:
        @method
        def predict(self, x):
            return x + 1

    assert Plain().predict(1) == 2
    with pytest.raises(TypeError, match=r"Plain.predict is a @method of .*Plain, which is not decorated with @levers9.cls"):
        Plain().predict.remote(1)


def test_decorators_refuse_what_they_cannot_use():
    with pytest.raises(TypeError, match="has no @method: mark the methods to call remotely"):

        @cls
        class Empty:
            pass

    with pytest.raises(TypeError, match="already marked @method: a function has one role"):
        enter(method(lambda self: None))
    with pytest.raises(TypeError, match="@exit method .* yields"):

        def gen(self):
            yield 1

        exit(gen)
    with pytest.raises(TypeError, match="@cls decorates a class"):
        cls(lambda: None)


def test_a_class_whose_init_needs_parameters_cannot_be_deployed():
    module = types.ModuleType("needs_parameters")
    module.__file__ = __file__

    class Sized:
        def __init__(self, size):
            self.size = size

        @method
        def get(self):
            return self.size

    Sized.__module__ = module.__name__
    module.Sized = cls(Sized)
    with pytest.raises(Levers9Error, match="Sized cannot be deployed: .*missing a required argument: 'size'; .*give every parameter of its __init__ a default"):
        deploy(module, "app")


def test_a_subclass_inherits_marked_methods_and_an_override_replaces_them():
    class Base:
        @enter
        def load(self):
            self.order = ["base"]

        @method
        def a(self):
            return "a"

        @method
        def b(self):
            return "b"

    @cls
    class Child(Base):
        @enter
        def more(self):
            self.order.append("child")

        def b(self):  # no longer a @method
            return "plain"

        @method
        def c(self):
            return self.order

    assert list(Child.methods) == ["a", "c"]
    assert Child().c.local() == ["base", "child"]
    with pytest.raises(TypeError, match="Child.b is not a @method"):
        Child().b

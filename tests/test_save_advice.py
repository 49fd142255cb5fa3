"""Every fix a save error advises works when followed, and no error advises a fix that
cannot: each test below provokes an error, reads its advice, follows it, and saves and
loads the result. test_every_advice_site_is_followed keeps the list complete."""

import ast
import importlib
import io
import re
import textwrap
import socket
import struct
import sys
import subprocess
import threading
from pathlib import Path

import pytest

import autosave
from autosave.model.adapters.base import ADAPTERS_BY_NAME, ADAPTERS_BY_TYPE, ON_REGISTER
from modtools import fresh_name, load_module, unload

PACKAGE = Path(autosave.__file__).parent


@pytest.fixture
def module():
    names = []

    def make(source, trusted=True):
        name = fresh_name()
        names.append(name)
        if trusted:
            autosave.allow(name)
        return load_module(name, source)
    yield make
    for name in names:
        unload(name)


def save_error(root):
    with pytest.raises(autosave.SaveError) as info:
        autosave.dumps(root)
    return str(info.value)


# -- handles on the outside world ------------------------------------------------------------

HOLDER = """
    import socket, threading, autosave

    class Holder:
        def __init__(self, thing):
            self.thing = thing

    class Reopening:
        __autosave_transient__ = ("file",)

        def __init__(self, path):
            self.path = path
            self.__autosave_loaded__()

        def __autosave_loaded__(self):
            self.file = open(self.path, "rb")

    class Reconnecting:
        __autosave_transient__ = ("sock", "worker")

        def __init__(self):
            self.__autosave_loaded__()

        def __autosave_loaded__(self):
            self.sock = socket.socket()
            self.worker = threading.Thread(target=lambda: None)
"""


@pytest.mark.parametrize("kind", ["text", "binary", "raw", "random"])
def test_an_open_file_is_refused_with_advice_that_works(module, tmp_path, kind):
    game = module(HOLDER)
    path = tmp_path / "level.txt"
    path.write_text("map")
    mode = {"text": "r", "binary": "rb", "raw": "rb", "random": "r+b"}[kind]
    with open(path, mode, **({"buffering": 0} if kind == "raw" else {})) as f:
        message = save_error(game.Holder(f))
    assert message.startswith("root.thing: ")
    assert "open file" in message and "cannot be saved" in message
    assert "autosave.transient" in message and "__autosave_loaded__(self)" in message
    assert "save its path" in message
    assert "register" not in message        # an adapter cannot give a file back
    loaded = autosave.copy(game.Reopening(str(path)))     # the advice, followed
    try:
        assert loaded.path == str(path) and loaded.file.read() == b"map"
    finally:
        loaded.file.close()


def test_in_memory_streams_are_not_called_handles():
    # Their state is their bytes: whether they save depends on the Python version's
    # BytesIO (a reduce of its own since 3.12), never on a file on disk.
    try:
        autosave.dumps(io.BytesIO(b"abc"))
    except autosave.SaveError as e:
        assert "open file" not in str(e) and "register an adapter" in str(e)


@pytest.mark.parametrize("make,words", [
    (socket.socket, ("an open socket", "reconnect", "its address")),
    (lambda: threading.Thread(target=print), ("a thread", "start a new one")),
])
def test_sockets_and_threads_are_refused_with_advice_that_works(module, make, words):
    game = module(HOLDER)
    thing = make()
    try:
        message = save_error(game.Holder(thing))
    finally:
        if isinstance(thing, socket.socket):
            thing.close()
    assert message.startswith("root.thing: ")
    assert all(w in message for w in words), message
    assert "autosave.allow(" not in message     # trusting socket would not help
    loaded = autosave.copy(game.Reconnecting())
    try:
        assert isinstance(loaded.sock, socket.socket) and not loaded.worker.is_alive()
    finally:
        loaded.sock.close()


# -- functions and classes a load finds by name ---------------------------------------------

def test_a_lambda_in_a_module_body_is_not_told_to_move_to_module_level(module):
    game = module("""
        class Holder:
            def __init__(self, thing):
                self.thing = thing
        held = Holder(lambda: 1)
        NAMED = lambda: 2
        def named():
            return 3
    """)
    message = save_error(game.held)
    assert "module level" not in message.replace("module-level name", "")
    assert "written in the body of module" in message and "root.thing" in message
    for followed in (game.NAMED, game.named):         # assigned to a name; written as a def
        assert autosave.copy(game.Holder(followed)).thing() == followed()


def test_a_rebound_module_level_function_says_so(module):
    game = module("""
        class Holder:
            def __init__(self, thing):
                self.thing = thing
        def tick():
            return 1
        original = tick
        def tick():
            return 2
    """)
    message = save_error(game.Holder(game.original))
    assert "is written at module level" in message and "no longer this function" in message
    assert "define it at module level" not in message
    game.tick = game.original                           # the name kept bound to it
    assert autosave.copy(game.Holder(game.original)).thing() == 1


def test_a_closure_whose_outer_function_was_replaced_says_so(module):
    game = module("""
        class Holder:
            def __init__(self, thing):
                self.thing = thing
        def make():
            return lambda: 5
        made = make()
        original = make
        def make():
            return None
    """)
    message = save_error(game.Holder(game.made))
    assert "written inside" in message and ".make" in message and "keep make bound" in message
    game.make = game.original
    assert autosave.copy(game.Holder(game.made)).thing() == 5


def test_a_function_made_by_exec_is_not_told_to_move(module):
    game = module("""
        class Holder:
            def __init__(self, thing):
                self.thing = thing
        made = {}
        exec(compile("f = lambda: 1", "<generated>", "exec"), made)
    """)
    made = game.made["f"]
    made.__module__ = game.__name__
    message = save_error(game.Holder(made))
    assert "exec(), eval() or compile()" in message and "module level" not in message


def test_a_class_defined_in_a_function_follows_either_fix(module):
    game = module("""
        import autosave
        def local():
            class Local:
                pass
            return Local()
        def named():
            @autosave.saveable(name=__name__ + ".Named")
            class Named:
                pass
            return Named()
    """)
    message = save_error(game.local())
    assert "move it to module level, or give it @autosave.saveable(name=...) and call" \
        in message
    assert type(autosave.copy(game.named())).__qualname__ == "named.<locals>.Named"


def test_a_class_whose_name_was_rebound_follows_either_fix(module):
    game = module("""
        import autosave
        class Unit:
            pass
        Kept = Unit
        Unit = None
        class Named:
            pass
        Renamed = autosave.saveable(name=__name__ + ".Renamed")(Named)
        Named = None
    """)
    message = save_error(game.Kept())
    assert "keep it bound to that name" in message and "saveable(name=...)" in message
    assert "define it at module level" not in message
    game.Unit = game.Kept
    assert type(autosave.copy(game.Kept())) is game.Kept
    assert type(autosave.copy(game.Renamed())) is game.Renamed


def test_a_class_outside_the_allowed_namespaces_loads_once_allowed(module):
    game = module("""
        class Crate:
            def __init__(self):
                self.items = [1, 2]
    """, trusted=False)
    message = save_error(game.Crate())
    assert f"call autosave.allow({game.__name__!r})" in message
    autosave.allow(game.__name__)
    assert autosave.copy(game.Crate()).items == [1, 2]


# -- objects of C classes and reduce values -----------------------------------------------------

@pytest.fixture
def unregister():
    """Adapters are process-wide: the ones a test registers are removed after it, so
    that later tests see locks refused again."""
    made = []
    yield made.append
    for adapter in made:
        dict.pop(ADAPTERS_BY_NAME, adapter.name, None)
        for t in adapter.types:
            dict.pop(ADAPTERS_BY_TYPE, t, None)
    for callback in ON_REGISTER:
        callback()


def test_a_c_object_loads_once_an_adapter_is_registered(unregister):
    lock_type = type(threading.Lock())
    message = save_error(threading.Lock())
    assert "register an adapter for it with autosave.register(...)" in message
    unregister(autosave.register(lock_type, save=lambda lock: [lock.locked()],
                                 load=lambda locked: threading.Lock(), args=(bool,)))
    assert type(autosave.copy(threading.Lock())) is lock_type


def test_a_subclass_of_a_c_class_loads_once_it_has_getstate(module):
    game = module("""
        import struct
        class Packer(struct.Struct):
            pass
        class StatefulPacker(struct.Struct):
            def __getstate__(self):
                return {"format": self.format}
            def __setstate__(self, state):
                self.__init__(state["format"])
    """)
    message = save_error(game.Packer("<i"))
    assert "give the class __getstate__/__setstate__" in message
    assert autosave.copy(game.StatefulPacker("<i")).pack(7) == struct.pack("<i", 7)


REDUCING = """
    import autosave
    def make(x):
        return Coin(x)
    class Coin:
        def __init__(self, x):
            self.x = x
        def __reduce__(self):
            return make, (self.x,)
    class StatefulCoin:
        def __init__(self, x):
            self.x = x
        def __getstate__(self):
            return {"x": self.x}
        def __setstate__(self, state):
            self.x = state["x"]
"""


def test_a_reduce_calling_a_function_follows_each_fix(module, unregister):
    game = module(REDUCING)
    message = save_error(game.Coin(3))
    assert f"register it with autosave.reconstructor({game.__name__}.make)" in message
    assert "replace Coin.__reduce__ with __getstate__/__setstate__" in message
    assert autosave.copy(game.StatefulCoin(3)).x == 3         # __reduce__ replaced
    autosave.reconstructor(game.make)                          # the first fix, as written
    try:
        assert autosave.copy(game.Coin(3)).x == 3
    finally:
        from autosave.model.reconstructors import unregister as forget
        forget(game.make)
    unregister(autosave.register(game.Coin, save=lambda c: [c.x], load=game.Coin,
                                 args=(int,)))
    assert autosave.copy(game.Coin(3)).x == 3


def test_a_reduce_passing_a_callable_follows_the_fix(module):
    game = module("""
        import autosave
        def on_hit():
            return "ouch"
        class Hook:
            def __init__(self, callback):
                self.callback = callback
            def __reduce__(self):
                return Hook, (self.callback,)
    """)
    message = save_error(game.Hook(game.on_hit))
    fix = f"autosave.reconstructor({game.__name__}.Hook, callables=(0,))"
    assert fix in message
    autosave.reconstructor(game.Hook, callables=(0,))
    try:
        assert autosave.copy(game.Hook(game.on_hit)).callback() == "ouch"
    finally:
        from autosave.model.reconstructors import unregister as forget
        forget(game.Hook)


def test_a_c_reduce_calling_a_function_does_not_suggest_replacing_it():
    import array
    message = save_error(array.array("i", [1]).__iter__())
    assert "replace" not in message or "__reduce__ with" not in message


def test_a_game_class_whose_reduce_passes_a_callable_follows_the_fix(module):
    game = module("""
        import autosave
        def on_hit():
            return "ouch"
        @autosave.save_root
        class Trap:
            def __init__(self, callback):
                self.callback = callback
            def __reduce__(self):
                return Trap, (self.callback,)
    """)
    message = save_error(game.Trap(game.on_hit))
    assert "is written to take a callable there" in message
    fix = f"autosave.reconstructor({game.__name__}.Trap, callables=(0,))"
    assert fix in message
    autosave.reconstructor(game.Trap, callables=(0,))
    try:
        assert autosave.copy(game.Trap(game.on_hit)).callback() == "ouch"
    finally:
        from autosave.model.reconstructors import unregister as forget
        forget(game.Trap)


def test_a_state_holding_an_iterator_follows_the_fix(module):
    game = module("""
        import autosave
        def double(x):
            return 2 * x
        class Feed:
            def __init__(self, items):
                self.pending, self.cache = map(double, items), {}
            def __getstate__(self):
                return {"pending": self.pending}
            def __setstate__(self, state):
                self.__dict__.update(state, cache={})
        class PlainFeed:                    # the fix: no __getstate__/__setstate__ of its own
            def __init__(self, items):
                self.pending = map(double, items)
    """)
    message = save_error(game.Feed(iter([1, 2])))
    assert "drop Feed's own __getstate__/__setstate__" in message
    assert list(autosave.copy(game.PlainFeed(iter([1, 2]))).pending) == [2, 4]


def test_a_reduce_naming_an_untrusted_class_loads_once_registered(module):
    other = module("""
        class Point:
            def __init__(self, x):
                self.x = x
    """, trusted=False)
    game = module(f"""
        from {other.__name__} import Point
        class Marker:
            def __init__(self, x):
                self.x = x
            def __reduce__(self):
                return Point, (self.x,)
    """)
    message = save_error(game.Marker(4))
    assert f"register it with autosave.reconstructor({other.__name__}.Point)" in message
    autosave.reconstructor(other.Point)      # no allow(): the registration is the trust
    try:
        assert autosave.copy(game.Marker(4)).x == 4
    finally:
        from autosave.model.reconstructors import unregister as forget
        forget(other.Point)


def test_a_plain_generator_loads_once_decorated(tmp_path, monkeypatch):
    # @autosave.coroutine compiles from the function's source: a real file
    name = fresh_name()
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import autosave
        def plain():
            yield 1
            yield 2
        @autosave.coroutine
        def decorated():
            yield 1
            yield 2
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    game = importlib.import_module(name)
    autosave.allow(name)
    gen = game.plain()
    next(gen)
    assert "decorate its function with @autosave.coroutine" in save_error(gen)
    gen = game.decorated()
    next(gen)
    assert next(autosave.copy(gen)) == 2


# -- a load in a process that has not imported the game (plans.py) --------------------------

GAME_PACKAGE = {
    "__init__.py": "",
    "world.py": """
        import attrs, autosave

        @autosave.save_root
        @attrs.define
        class Level:
            name: str
    """,
}


def run_python(tmp_path, code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("allow_first", [False, True])
def test_loading_before_importing_the_game_names_the_module_once(tmp_path, allow_first):
    package = fresh_name("mygame")
    (tmp_path / package).mkdir()
    for file, source in GAME_PACKAGE.items():
        (tmp_path / package / file).write_text(textwrap.dedent(source))
    saved = run_python(tmp_path, f"""
        import autosave, {package}.world as w
        autosave.save("slot.sav", w.Level("gate"))
    """)
    assert saved.returncode == 0, saved.stderr
    allow = f"autosave.allow({package!r})" if allow_first else ""
    refused = run_python(tmp_path, f"""
        import autosave
        {allow}
        try:
            autosave.load("slot.sav")
        except autosave.LoadError as e:
            print(type(e).__name__, e)
    """)
    kind, _, message = refused.stdout.strip().partition(" ")
    assert kind == ("IncompatibleSaveError" if allow_first else "UntrustedTypeError"), message
    fix = re.search(r"\(import ([\w.]+), if that is where it is defined\)", message).group(1)
    assert fix == f"{package}.world"
    loaded = run_python(tmp_path, f"""
        import autosave
        {allow}
        import {fix}
        print(autosave.load("slot.sav"))
    """)
    assert loaded.returncode == 0 and "Level(name='gate')" in loaded.stdout, loaded.stderr
    # (A stranger's name keeps "outside the allowed namespaces; nothing was imported":
    # tests/test_trust.py.)


def test_a_coroutine_defined_in_a_function_first_fix_move_it(tmp_path, monkeypatch):
    # @autosave.coroutine compiles from the function's source: real files
    monkeypatch.syspath_prepend(str(tmp_path))
    v1, v2 = fresh_name(), fresh_name()
    (tmp_path / f"{v1}.py").write_text(textwrap.dedent("""
        import autosave
        def make_guard(post):
            @autosave.coroutine
            def patrol(steps):
                while True:
                    steps += 1
                    yield (post, steps)
            return patrol(0)
    """))
    brain = importlib.import_module(v1).make_guard("gate")
    next(brain)
    message = save_error([brain])
    assert ("move the @autosave.coroutine function to module level, passing what it used "
            "from make_guard as arguments") in message and "saveable" not in message
    (tmp_path / f"{v2}.py").write_text(textwrap.dedent("""
        import autosave
        @autosave.coroutine
        def patrol(post, steps):
            while True:
                steps += 1
                yield (post, steps)

        def make_guard(post):
            return patrol(post, 0)
    """))
    autosave.allow(v2)
    brain = importlib.import_module(v2).make_guard("gate")
    next(brain)
    assert next(autosave.loads(autosave.dumps([brain]))[0]) == ("gate", 2)


# Advice a save error gives, per module, with the test above that follows it. A new
# advice string fails this test until a test following it is added here.
ADVICE = {
    "model/advice.py": {"autosave.transient and": "test_an_open_file_is_refused_with_advice_that_works",
                  "assign the lambda": "test_a_lambda_in_a_module_body_is_not_told_to_move_to_module_level",
                  "keep the name bound": "test_a_rebound_module_level_function_says_so",
                  "bound to its name": "test_a_closure_whose_outer_function_was_replaced_says_so",
                  "write it in the module's source": "test_a_function_made_by_exec_is_not_told_to_move",
                  "move the @autosave.coroutine function to module level":
                      "test_a_coroutine_defined_in_a_function_first_fix_move_it"},
    "loading/plans.py": {"call autosave.allow(": "test_loading_before_importing_the_game_names_the_module_once"},
    "model/registry.py": {"call autosave.allow(": "test_a_class_outside_the_allowed_namespaces_loads_once_allowed",
                    "move it to module level": "test_a_class_defined_in_a_function_follows_either_fix",
                    "keep it bound to that name": "test_a_class_whose_name_was_rebound_follows_either_fix"},
    "model/schema.py": {"autosave.register(": "test_a_c_object_loads_once_an_adapter_is_registered",
                  "give the class __getstate__": "test_a_subclass_of_a_c_class_loads_once_it_has_getstate"},
    "model/dispatch.py": {"@autosave.coroutine": "test_a_plain_generator_loads_once_decorated"},
    "model/adapters/callables.py": {"autosave.reconstructor({}{}){}": "test_a_reduce_calling_a_function_follows_each_fix",
                              "__getstate__/__setstate__": "test_a_reduce_calling_a_function_follows_each_fix",
                              "is written to take a callable there": "test_a_game_class_whose_reduce_passes_a_callable_follows_the_fix"},
    "model/reconstructors.py": {"autosave.reconstructor(": "test_a_reduce_naming_an_untrusted_class_loads_once_registered",
                          "__getstate__/__setstate__": "test_a_state_holding_an_iterator_follows_the_fix"},
}
_ADVICE_WORDS = re.compile(
    r"call autosave\.allow\(|autosave\.register\(\.\.\.\)|with @autosave\.coroutine|autosave\.reconstructor\("
    r"|__getstate__/__setstate__|module level|bound to|assign the|module's source|autosave\.transient and")


def _messages(path):
    """The string literals of ``path`` (adjacent ones joined, as Python joins them;
    docstrings left out), each as one line with {} for what is formatted in."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    inner = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
             for part in ast.walk(node) if part is not node}
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inner:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):
            yield "".join(p.value if isinstance(p, ast.Constant) else "{}"
                          for p in node.values)


def _advice(path):
    return [m for m in _messages(path) if _ADVICE_WORDS.search(m)]


@pytest.mark.parametrize("relative", sorted(ADVICE))
def test_every_advice_site_is_followed(relative):
    found = _advice(PACKAGE / relative)
    for message in found:
        assert any(key in message for key in ADVICE[relative]), (
            f"{relative}: advice {message!r} is not followed by any test in this file")
    for key, test in ADVICE[relative].items():
        assert test in globals(), test
        assert any(key in message for message in found), f"{relative}: {key!r} is gone"


def test_no_advice_outside_the_files_checked_above():
    for path in [p for folder in ("", "model/", "saving/", "loading/", "format/", "checks/",
                               "model/adapters/")
                 for p in PACKAGE.glob(folder + "*.py")]:
        relative = path.relative_to(PACKAGE).as_posix()
        if relative not in ADVICE:
            assert not _advice(path), f"{relative}: advice no test here follows"

"""autosave-codegen says what it covered: the classes with generated code, the ones
left to reflection and why, and the annotations to add."""

from test_codegen import make_package, run

GAME = '''
import typing
import attrs
import autosave

@autosave.save_root
@attrs.define(eq=False)
class World:
    units: "list[Unit]"
    cargo: {cargo} = attrs.Factory(dict)
    extra: object = None
    anything: typing.Any = None
    seen: int = 0

@attrs.define(eq=False)
class Unit:
    name: str
    coin: "Coin | None" = None

class Coin:
    def __init__(self, value):
        self.value = value
    def __reduce__(self):
        return Coin, (self.value,)

class Notes:
    def __init__(self):
        self.lines = []

@attrs.define(frozen=True)
class Loot:                       # hashed by value: a record, with generated code
    weight: int

class GameOver(Exception):
    pass
'''


def report(tmp_path, cargo="dict", *flags):
    pkg = make_package(tmp_path, GAME.format(cargo=cargo))
    made = run(tmp_path, [*flags, pkg])
    assert made.returncode == 0, made.stderr
    return pkg, made.stdout


def test_the_run_reports_generated_and_reflective_classes_and_why(tmp_path):
    pkg, out = report(tmp_path)
    m = f"{pkg}.model"
    assert f"{pkg}: 2 classes saved in batches (no code needed), generated code for 0, " \
           f"3 left to reflection" in out
    assert f"reflection {m}.Coin: defines __reduce__: saved through it" in out
    for unreached in ("Loot", "Notes"):
        assert f"reflection {m}.{unreached}: no field annotation reaches it from a root " \
               f"({tmp_path / pkg / 'model.py'}:" in out
    assert f"{m}.World.cargo: is typed dict: its items' type is not said" in out
    assert f"{m}.World.extra: is typed object: anything may be there" in out
    assert f"{m}.World.anything: is typed Any: anything may be there" in out
    assert "World.seen" not in out and "World.units" not in out      # these are followed
    assert "GameOver" not in out                  # an error is not game state
    assert "hint: where a field holds instances of the game's classes, annotate it" in out
    assert "a field holding a coroutine or other generator" in out   # not told to annotate
    assert f"batches    {m}.World" not in out     # listed only with --verbose


def test_verbose_lists_every_class(tmp_path):
    pkg, out = report(tmp_path, "dict", "--verbose")
    for cls, kind in (("World", "slots"), ("Unit", "slots")):
        assert f"batches    {pkg}.model.{cls} ({kind}: {tmp_path / pkg / 'model.py'}:" in out


def test_following_the_hint_gives_the_class_generated_code(tmp_path):
    pkg, out = report(tmp_path, '"dict[str, Loot]"')
    assert f"{pkg}: 2 classes saved in batches (no code needed), generated code for 1, " \
           f"2 left to reflection" in out
    assert "World.cargo" not in out and f"{pkg}.model.Loot:" not in out
    generated = (tmp_path / pkg / "_autosave_generated.py").read_text()
    assert f"from {pkg}.model import Loot as _Loot" in generated and "def save_Loot(" in generated


def test_a_class_whose_attributes_are_not_annotated_is_named(tmp_path):
    pkg = make_package(tmp_path, '''
        import autosave

        @autosave.save_root
        class Party:
            def __init__(self):
                self.members = []
    ''')
    made = run(tmp_path, [pkg])
    assert made.returncode == 0, made.stderr
    assert (f"{pkg}.model.Party: its attributes are set at run time and none is annotated "
            f"in the class body") in made.stdout

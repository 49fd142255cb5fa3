"""`autosave-codegen PACKAGE [PACKAGE ...] [--out DIR] [--check] [--compile]`."""

import argparse
import importlib
import importlib.machinery
import json
import os
import sys
import tempfile
from pathlib import Path

from autosave.coroutines.transform import state_machine_source
from autosave.errors import CoroutineError
from autosave.model.generated import COROUTINES, MODULE
from autosave.model.schema import schema_of
from autosave.saving.walk import Walker

from . import manifest as manifest_
from .collect import collect, coroutine_functions, inside, where
from .emit import generate
from .errors import CodegenError
from .report import coverage, lines as report_lines
from .source import ModuleSource

MANIFEST = "autosave_manifest.json"


def outputs(packages, out_dir):
    """{path: text} of everything the run writes, computed before anything is written;
    a text of None means the file must not exist (a module nothing needs any more)."""
    own, external = collect(packages)
    for cls in own:
        check_class(cls)
    coroutines = coroutine_functions(packages)
    files = {}
    for package in packages:
        def mine(module, package=package):
            return inside(module, [package]) and not any(
                inside(module, [p]) and len(p) > len(package) for p in packages)
        classes = [c for c in own if mine(c.__module__)]
        funcs = [f for f in coroutines if mine(f.__module__)]
        directory = Path(out_dir) if out_dir else package_dir(package)
        manifest_path = directory / MANIFEST
        previous = previous_labels(manifest_path)
        machines, labels = coroutine_module(package, funcs, previous)
        files[directory / f"{MODULE}.py"] = generate([package], classes, package)
        files[directory / f"{COROUTINES}.py"] = machines
        manifest = manifest_.build([package], classes, external, coroutines=labels)
        files[manifest_path] = manifest_.dumps(manifest)
    return files


def previous_labels(manifest_path):
    """{function: labels} of the manifest a previous run wrote, so resume points keep
    their labels across edits."""
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {name: entry.get("labels") for name, entry in
            (manifest.get("coroutines") or {}).items() if isinstance(entry, dict)}


def coroutine_module(package, funcs, previous):
    """(source of the state-machine module or None, {function: {"labels": ...}})."""
    if not funcs:
        return None, {}
    module = ModuleSource([package], package, COROUTINE_ABOUT,
                          f"Generated coroutine state machines for {package}.",
                          COROUTINE_IMPORTS)
    labels = {}
    for func in funcs:
        qualified = f"{func.__module__}.{func.__qualname__}"
        try:
            source, info = state_machine_source(func, previous.get(qualified))
        except CoroutineError as e:
            raise CodegenError(str(e)) from None
        labels[qualified] = {"labels": info}
        module.section(qualified, source)
    return module.text(), labels


COROUTINE_ABOUT = """\
State machines of the package's @autosave.coroutine functions, found by the decorator
before it would transform a function's source; each carries the fingerprint of the
code it was made from, and a function changed since is transformed at run time."""
COROUTINE_IMPORTS = ["from autosave.coroutines import register_precompiled",
                     "from autosave.model.generated import require_abi as _require_abi"]


def check_class(cls):
    """Refuse what a save could never hold, naming the class's file:line."""
    try:
        schema = schema_of(cls)
    except Exception as e:
        raise CodegenError(f"{where(cls)}: {cls.__qualname__} cannot be inspected: "
                           f"{type(e).__name__}: {e}") from e
    if "<locals>" in cls.__qualname__:
        raise CodegenError(f"{where(cls)}: {cls.__qualname__} is defined inside a function, "
                           f"so a load could not find it by name; move it to module level")
    try:
        Walker().plain_handler_for(cls)
    except Exception as e:
        raise CodegenError(f"{where(cls)}: {cls.__module__}.{cls.__qualname__} cannot be "
                           f"saved: {getattr(e, 'reason', e)}") from None
    return schema


def package_dir(package):
    module = importlib.import_module(package)
    paths = list(getattr(module, "__path__", []))
    if not paths:
        raise CodegenError(f"{package} is a module, not a package: generated code lives in a "
                           f"package (a directory with __init__.py); pass --out DIR to write "
                           f"it elsewhere")
    return Path(paths[0])


def write_all(files):
    """Write every file or none: each goes to a temporary file first."""
    staged = []
    try:
        for path, text in files.items():
            if text is None:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".autosave-codegen-", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            staged.append((tmp, path))
    except BaseException:
        for tmp, _ in staged:
            os.unlink(tmp)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)
    for path, text in files.items():
        if text is None and path.exists():
            path.unlink()


def stale(files):
    return [path for path, text in files.items()
            if (text is None and path.exists()) or (text is not None and (
                not path.exists() or path.read_text(encoding="utf-8") != text))]


def compiled_modules(directory):
    return [directory / f"{MODULE}{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES
            if (directory / f"{MODULE}{suffix}").exists()]


def compile_module(path):
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext
    except ImportError as e:
        raise CodegenError(f"--compile needs Cython and setuptools ({e}): "
                           f"pip install 'autosave[cython]'") from None
    directory = path.parent
    with tempfile.TemporaryDirectory() as build:
        extension = Extension(MODULE, [str(path)])
        modules = cythonize([extension], language_level=3, quiet=True,
                            build_dir=build, compiler_directives={"binding": False})
        dist = Distribution({"ext_modules": modules})
        cmd = build_ext(dist)
        cmd.build_temp = build
        cmd.build_lib = str(directory)
        cmd.ensure_finalized()
        cmd.run()
    return compiled_modules(directory)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="autosave-codegen",
        description="Write generated save/load code and the schema manifest into each "
                    "PACKAGE (docs/codegen.md).")
    parser.add_argument("packages", nargs="+", metavar="PACKAGE", help="importable package name")
    parser.add_argument("--out", metavar="DIR", help="write here instead of into the package "
                        "(generated code is picked up at run time only inside the package)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the files on disk are not current")
    parser.add_argument("--compile", action="store_true",
                        help="also compile the generated module with Cython")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="list every class that got generated code, not only the ones "
                             "left to reflection")
    args = parser.parse_args(argv)
    if args.out and len(args.packages) > 1:
        parser.error("--out takes one PACKAGE")
    sys.path.insert(0, os.getcwd())
    try:
        files = outputs(args.packages, args.out)
        if args.check:
            old = stale(files)
            for path in old:
                print(f"autosave-codegen: {path} is stale; run: autosave-codegen "
                      f"{' '.join(args.packages)}", file=sys.stderr)
            return 1 if old else 0
        write_all(files)
        for path in sorted(p for p, text in files.items() if text is not None):
            print(f"wrote {path}")
        own, _ = collect(args.packages)          # imported already: no second import
        for package in args.packages:
            for line in report_lines(coverage(package, own), verbose=args.verbose):
                print(line)
        for path in sorted(p for p, text in files.items() if p.name == f"{MODULE}.py"):
            old_builds = compiled_modules(path.parent)
            if args.compile:
                for built in compile_module(path):
                    print(f"compiled {built}")
            else:
                for built in old_builds:     # a compiled module would shadow the new source
                    built.unlink()
                    print(f"removed the outdated compiled module {built}")
    except CodegenError as e:
        print(f"autosave-codegen: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

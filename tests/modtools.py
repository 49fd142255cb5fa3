"""Build throwaway game modules from source, to simulate a game before and after a patch."""

import sys
import textwrap
import types
import uuid


def fresh_name(prefix="game"):
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def load_module(name, source):
    """Execute ``source`` as module ``name`` (replacing any earlier version of it)."""
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module
    exec(compile(textwrap.dedent(source), f"<{name}>", "exec"), module.__dict__)
    return module


def unload(name):
    sys.modules.pop(name, None)

"""Loads one forged file in a process of its own and reports what happened, as JSON on
stdout: the outcome, the modules the load imported, the audit events it raised, the CPU
time and the peak memory it took. Used by tests/test_safe_load.py.

    python hostile_child.py FILE [allow ...] [+module ...]

``+module`` imports that module before the load (the game's own modules, as a game
imports them), without allowing anything more.
"""

import json
import resource
import sys
import time
import tracemalloc

import autosave

# What a load must never do. The audit hook sees them however deep in C they happen.
WATCHED = ("os.system", "subprocess.Popen", "os.exec", "os.spawn", "os.posix_spawn",
           "exec", "compile", "import", "os.remove", "os.unlink", "os.rename",
           "shutil.", "socket.", "ctypes.", "builtins.input", "os.fork", "os.kill")
events = []
opened = []           # files opened during the load (zoneinfo reads the system's TZPATH)
armed = False


def hook(event, args):
    if armed and event.startswith(WATCHED):
        events.append(event)
    if armed and event == "open":
        opened.append(f"{args[0]} {args[1]}")


sys.addaudithook(hook)


def main():
    global armed
    path, *args = sys.argv[1:]
    data = open(path, "rb").read()
    for name in args:
        if name.startswith("+"):
            sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
            __import__(name[1:])
        else:
            autosave.allow(name)
    # a bomb fails fast with MemoryError instead of thrashing the machine
    soft = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
    before = set(sys.modules)
    tracemalloc.start()
    cpu = time.process_time()
    armed = True
    root = None
    try:
        root = autosave.loads(data)
        outcome = "loaded"
        kind = type(root).__name__
    except autosave.LoadError as e:
        outcome, kind = "refused", f"{type(e).__name__}: {str(e)[:300]}"
    except BaseException as e:      # noqa: BLE001 -- reported, and the test fails
        outcome, kind = "crashed", f"{type(e).__name__}: {str(e)[:300]}"
    armed = False
    cpu = time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(json.dumps({"outcome": outcome, "kind": kind, "cpu": cpu, "peak": peak,
                      "bytes": len(data), "imported": sorted(set(sys.modules) - before),
                      "events": sorted(set(events)), "opened": opened}))
    sys.stdout.flush()
    del root                        # a graph that loads must also free
    import gc
    gc.collect()
    print("freed")


if __name__ == "__main__":
    main()

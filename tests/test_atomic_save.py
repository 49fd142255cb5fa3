"""``autosave.save`` is atomic and leaves nothing behind (docs/durability.md).

Processes are killed with SIGKILL at random instants of saving a big graph: the target
always loads, holding the old graph or the new one. The temporary files the killed
saves leave are removed by the next save of the same target, and only those: a live
process's file (another process, another thread, another machine) is never touched.
The target keeps its mode and owner; a symlink is written through; failures of write,
fsync, close and rename leave the old file and no temporary file.

Longer kill campaigns: AUTOSAVE_FUZZ_EXAMPLES=2000 python -m pytest tests/test_atomic_save.py
"""

import errno
import os
import random
import stat
import subprocess
import sys
import threading
import time

import pytest

import autosave
import autosave.files
from autosave.files import process_start, temporary_name, this_process

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0"))

GRAPH = '''
def graph(n, size=30_000):
    rows = [[n, k, f"row {k}"] for k in range(size // 10)]
    return {"n": n, "payload": [f"{n}:{k}:" + "x" * 40 for k in range(size)],
            "rows": rows, "again": rows[::3]}
'''
exec(GRAPH)

CHILD = GRAPH + '''
import os, sys, time
import autosave

target, first, slow, count = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
if slow:
    real_fsync = os.fsync

    def fsync(fd):                 # a slow disk: the temporary file lives longer
        time.sleep(slow)
        real_fsync(fd)

    os.fsync = fsync
print("ready", flush=True)
n = first
while count:
    autosave.save(target, graph(n))
    print(n, flush=True)
    n += 1
    count -= 1
'''


def start_saver(target, first, slow=0.0, count=-1):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(first), str(slow),
                             str(count)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def temporaries(directory):
    return sorted(name for name in os.listdir(directory) if ".autosave-" in name)


def check_holds_a_whole_graph(target, allowed, size=30_000):
    loaded = autosave.load(target)
    assert loaded["n"] in allowed, f"the save holds graph {loaded['n']}, expected one of {allowed}"
    expected = graph(loaded["n"], size)
    assert loaded == expected
    assert loaded["again"][1] is loaded["rows"][3]
    return loaded["n"]


@pytest.mark.slow
def test_sigkill_at_random_instants_leaves_old_or_new_and_the_next_save_cleans_up(tmp_path):
    target = tmp_path / "slot1.sav"
    autosave.save(target, graph(0))
    current = 0
    rng = random.Random(5)
    rounds = max(8, FUZZ // 100)
    for round_ in range(rounds):
        in_window = round_ % 2 == 1 or round_ == rounds - 1
        proc = start_saver(target, current + 1, slow=0.4 if in_window else 0.0)
        if in_window:
            # Wait for this process's temporary file, then kill it before the rename.
            while not any(f"-{proc.pid}-" in name for name in temporaries(tmp_path)):
                assert proc.poll() is None
                time.sleep(0.001)
            time.sleep(rng.uniform(0, 0.1))
        else:
            time.sleep(rng.uniform(0, 0.4))
        proc.kill()
        out, _ = proc.communicate()
        done = [int(line) for line in out.split()]
        last = done[-1] if done else current
        # Killed after a rename, before it printed: the next graph is there. Else the last.
        current = check_holds_a_whole_graph(target, {last, last + 1})
        if in_window:
            assert any(f"-{proc.pid}-" in name for name in temporaries(tmp_path)), \
                "the kill was meant to land while the temporary file existed"
    # Each saver's first save removed what the ones before it left; the last one's is here.
    assert [f"-{proc.pid}-" in name for name in temporaries(tmp_path)] == [True]
    autosave.save(target, graph(current + 1))
    assert temporaries(tmp_path) == []
    assert os.listdir(tmp_path) == ["slot1.sav"]
    check_holds_a_whole_graph(target, {current + 1})


@pytest.mark.slow
def test_concurrent_saves_of_one_slot_never_remove_each_others_files(tmp_path):
    target = tmp_path / "slot.sav"
    autosave.save(target, graph(0, size=100))
    # A slow saver holds its temporary file open for long stretches while a fast one
    # saves again and again: were the fast one to remove the slow one's file, the slow
    # one's rename would fail.
    slow = start_saver(target, 1000, slow=0.3, count=3)
    fast = start_saver(target, 1, count=25)
    assert fast.wait(60) == 0 and slow.wait(60) == 0
    assert temporaries(tmp_path) == []
    assert autosave.load(target)["n"] in set(range(1, 26)) | {1000, 1001, 1002}


def test_concurrent_saves_from_threads(tmp_path):
    target = tmp_path / "slot.sav"
    errors = []

    def saver(k):
        try:
            for i in range(8):
                autosave.save(target, graph(k * 100 + i, size=2000))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=saver, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert temporaries(tmp_path) == []
    loaded = autosave.load(target)
    assert loaded == graph(loaded["n"], size=2000)


# -- which temporary files a save removes --------------------------------------------------


@pytest.fixture
def live_process():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_only_stale_temporaries_of_this_target_and_host_are_removed(tmp_path, live_process):
    target = tmp_path / "slot1.sav"
    autosave.save(target, 1)
    host, start = this_process()
    gone = dead_pid()
    live_start = process_start(live_process)
    assert live_start is not None and live_start != start
    other_host = format(int(host, 16) ^ 1, "08x")
    stale = {
        "a dead process's": temporary_name("slot1.sav", gone, host, "01234567"),
        "a dead process's, start unknown": temporary_name("slot1.sav", gone, host, "00000000"),
        "a reused pid's": temporary_name("slot1.sav", live_process, host, "89abcdef"),
        "an earlier process with this pid": temporary_name("slot1.sav", os.getpid(), host,
                                                           "fedcba98"),
    }
    kept = {
        "a live process's": temporary_name("slot1.sav", live_process, host, live_start),
        "a live process's, start unknown": temporary_name("slot1.sav", live_process, host,
                                                          "00000000"),
        "another thread's": temporary_name("slot1.sav", os.getpid(), host, start),
        "another machine's": temporary_name("slot1.sav", gone, other_host, "01234567"),
        "another target's": temporary_name("slot2.sav", gone, host, "01234567"),
        "a longer target's": temporary_name("slot1.sav.bak", gone, host, "01234567"),
        "an older autosave's": ".autosave-k2j3h4g5.tmp",
        "the user's": ".slot1.sav.autosave-notes.tmp",
        "pid 0": f".slot1.sav.autosave-{host}-0-01234567-00000000.tmp",
        "uppercase": f".slot1.sav.autosave-{host.upper()}-{gone}-01234567-00000000.tmp",
        "a directory": temporary_name("slot1.sav", gone + 1, host, "01234567"),
    }
    for what, name in {**stale, **kept}.items():
        if what == "a directory":
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_bytes(b"partial")
    autosave.save(target, 2)
    left = set(os.listdir(tmp_path))
    for what, name in stale.items():
        assert name not in left, f"{what} temporary file was not removed"
    for what, name in kept.items():
        assert name in left, f"{what} file was removed"
    assert autosave.load(target) == 2


def test_temporary_names_recognise_their_target():
    host, start = this_process()
    for target in ["slot1.sav", "a.autosave-b", "ü n i c ø d e.sav", "x" * 255, "ab\udcff"]:
        name = temporary_name(autosave.files._stem(target), 12345, host, start)
        assert len(os.fsencode(name)) <= 255
        assert name.startswith(".") and name.endswith(".tmp")


def test_long_target_names_save_and_clean_up(tmp_path):
    target = tmp_path / ("é" * 120 + ".sav")           # 244 bytes
    autosave.save(target, 1)
    host, _ = this_process()
    stray = tmp_path / temporary_name(autosave.files._stem(target.name), dead_pid(), host,
                                      "01234567")
    stray.write_bytes(b"partial")
    autosave.save(target, 2)
    assert os.listdir(tmp_path) == [target.name]
    assert autosave.load(target) == 2


# -- mode and owner --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664, 0o444, 0o755])
def test_the_targets_mode_is_kept(tmp_path, mode):
    target = tmp_path / "slot.sav"
    autosave.save(target, 1)
    os.chmod(target, mode)
    autosave.save(target, 2)
    assert stat.S_IMODE(os.stat(target).st_mode) == mode
    assert autosave.load(target) == 2


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077, 0o002])
def test_a_new_file_gets_the_mode_open_gives(tmp_path, umask):
    old = os.umask(umask)
    try:
        autosave.save(tmp_path / "new.sav", 1)
        with open(tmp_path / "by-open", "wb"):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.sav").st_mode) == 0o666 & ~umask
    assert os.stat(tmp_path / "new.sav").st_mode == os.stat(tmp_path / "by-open").st_mode


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another user")
def test_the_targets_owner_group_and_set_id_bits_are_kept(tmp_path):
    target = tmp_path / "slot.sav"
    autosave.save(target, 1)
    os.chown(target, 4321, 8765)
    os.chmod(target, 0o2640)
    autosave.save(target, 2)
    st = os.stat(target)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 8765, 0o2640)


def test_the_group_is_kept_when_the_owner_cannot_be(tmp_path, monkeypatch):
    # As a user who may change a file's group but not its owner.
    target = tmp_path / "slot.sav"
    autosave.save(target, 1)
    me = os.stat(target)
    calls = []

    def fchown(fd, uid, gid):
        calls.append((uid, gid))
        if uid != -1:
            raise PermissionError(errno.EPERM, "not permitted")

    # The new file, as that user makes it: owned by them, in their own group.
    monkeypatch.setattr(autosave.files.os, "fstat", lambda fd: os.stat_result(
        (me.st_mode, 0, 0, 1, me.st_uid + 1, me.st_gid + 1) + (0,) * 4))
    monkeypatch.setattr(autosave.files.os, "fchown", fchown)
    autosave.save(target, 2)
    assert calls == [(me.st_uid, me.st_gid), (-1, me.st_gid)]
    assert autosave.load(target) == 2


# -- symlinks and odd targets -------------------------------------------------------------


def test_a_symlink_is_written_through(tmp_path):
    real_dir, link_dir = tmp_path / "cloud", tmp_path / "saves"
    real_dir.mkdir()
    link_dir.mkdir()
    real = real_dir / "slot1.sav"
    autosave.save(real, 1)
    os.chmod(real, 0o640)
    (link_dir / "latest.sav").symlink_to(real)
    (link_dir / "chain.sav").symlink_to(link_dir / "latest.sav")
    autosave.save(link_dir / "chain.sav", 2)
    assert (link_dir / "latest.sav").is_symlink() and (link_dir / "chain.sav").is_symlink()
    assert autosave.load(real) == 2 and autosave.load(link_dir / "chain.sav") == 2
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    # The temporary file lived beside the real file: a rename is atomic only there.
    host, _ = this_process()
    stray = real_dir / temporary_name("slot1.sav", dead_pid(), host, "01234567")
    stray.write_bytes(b"partial")
    autosave.save(link_dir / "latest.sav", 3)
    assert os.listdir(real_dir) == ["slot1.sav"]
    assert sorted(os.listdir(link_dir)) == ["chain.sav", "latest.sav"]


def test_a_dangling_symlink_gets_its_file(tmp_path):
    (tmp_path / "slot.sav").symlink_to(tmp_path / "real.sav")
    autosave.save(tmp_path / "slot.sav", 1)
    assert (tmp_path / "slot.sav").is_symlink()
    assert autosave.load(tmp_path / "real.sav") == 1


def test_a_symlink_loop_is_an_error_and_creates_nothing(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError) as info:
        autosave.save(tmp_path / "a", 1)
    assert info.value.errno == errno.ELOOP
    assert sorted(os.listdir(tmp_path)) == ["a", "b"] and (tmp_path / "a").is_symlink()


def test_a_directory_or_device_is_not_replaced(tmp_path):
    (tmp_path / "dir.sav").mkdir()
    with pytest.raises(IsADirectoryError):
        autosave.save(tmp_path / "dir.sav", 1)
    os.mkfifo(tmp_path / "fifo.sav")
    with pytest.raises(OSError) as info:
        autosave.save(tmp_path / "fifo.sav", 1)
    assert info.value.errno == errno.EINVAL
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo.sav").st_mode)
    assert sorted(os.listdir(tmp_path)) == ["dir.sav", "fifo.sav"]


def test_paths_as_bytes_and_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    autosave.save(b"slot.sav", 1)
    autosave.save("slot.sav", 2)
    assert autosave.load(b"slot.sav") == 2 and os.listdir(tmp_path) == ["slot.sav"]


# -- failures leave the old file and nothing else -----------------------------------------


def failing_after(calls, exc):
    """A stand-in for an os function that works ``calls`` times, then raises ``exc``."""
    def make(real):
        count = [0]

        def fn(*args):
            count[0] += 1
            if count[0] > calls:
                raise exc
            return real(*args)
        return fn
    return make


def closing_then_failing(fd, real_close=os.close):
    """close() as NFS may do it: the descriptor is gone, and a delayed write error told."""
    real_close(fd)
    raise OSError(errno.EDQUOT, "Disk quota exceeded")


def os_write_partially(fd, data, real_write=os.write):
    return real_write(fd, bytes(data)[:max(1, len(data) // 3)])


@pytest.mark.parametrize("name, make, error", [
    ("write", failing_after(0, OSError(errno.ENOSPC, "No space left on device")), OSError),
    ("write", failing_after(2, OSError(errno.EIO, "I/O error")), OSError),
    ("write", failing_after(1, KeyboardInterrupt()), KeyboardInterrupt),
    ("fsync", failing_after(0, OSError(errno.EIO, "I/O error")), OSError),
    ("close", lambda real: closing_then_failing, OSError),
    ("replace", failing_after(0, OSError(errno.EXDEV, "Invalid cross-device link")), OSError),
    ("replace", failing_after(0, PermissionError(errno.EACCES, "Permission denied")), OSError),
    ("fchmod", failing_after(0, OSError(errno.EIO, "I/O error")), OSError),
    ("open", failing_after(0, OSError(errno.EMFILE, "Too many open files")), OSError),
])
def test_a_failing_save_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, name, make,
                                                             error):
    target = tmp_path / "slot.sav"
    autosave.save(target, graph(1, size=3000))
    os.chmod(target, 0o644)
    before = target.read_bytes()
    real = getattr(os, name)
    if name == "write":
        # Short writes first, so that the save must loop to write everything.
        real = os_write_partially
    with monkeypatch.context() as m:
        m.setattr(autosave.files.os, name, make(real))
        with pytest.raises(error):
            autosave.save(target, graph(2, size=3000))
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["slot.sav"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    autosave.save(target, graph(3, size=3000))          # and the next save works
    check_holds_a_whole_graph(target, {3}, size=3000)


def test_short_writes_still_write_everything(tmp_path, monkeypatch):
    monkeypatch.setattr(autosave.files.os, "write", os_write_partially)
    autosave.save(tmp_path / "slot.sav", graph(4, size=3000))
    check_holds_a_whole_graph(tmp_path / "slot.sav", {4}, size=3000)


def test_no_file_descriptor_leaks_on_failure(tmp_path, monkeypatch):
    opened, closed = [], []
    real_open, real_close = os.open, os.close

    def spy_open(*args, **kwargs):
        fd = real_open(*args, **kwargs)
        opened.append(fd)
        return fd

    def spy_close(fd):
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(autosave.files.os, "open", spy_open)
    monkeypatch.setattr(autosave.files.os, "close", spy_close)
    monkeypatch.setattr(autosave.files.os, "fsync",
                        failing_after(0, OSError(errno.EIO, "I/O error"))(os.fsync))
    with pytest.raises(OSError):
        autosave.save(tmp_path / "slot.sav", 1)
    assert opened and sorted(opened) == sorted(closed)


def test_an_unsaveable_graph_touches_no_file(tmp_path):
    target = tmp_path / "slot.sav"
    autosave.save(target, 1)
    with pytest.raises(autosave.SaveError):
        autosave.save(target, [(x for x in ())])
    assert autosave.load(target) == 1 and os.listdir(tmp_path) == ["slot.sav"]


def test_the_directory_is_flushed_after_the_rename(tmp_path, monkeypatch):
    events = []
    real_replace, real_fsync_directory = os.replace, autosave.files.fsync_directory
    monkeypatch.setattr(autosave.files.os, "replace",
                        lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    monkeypatch.setattr(autosave.files, "fsync_directory",
                        lambda d: (events.append(("fsync dir", d)),
                                   real_fsync_directory(d))[1])
    autosave.save(tmp_path / "slot.sav", 1)
    assert events == ["replace", ("fsync dir", str(tmp_path))]


def test_the_first_error_is_the_one_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(autosave.files.os, "fsync",
                        failing_after(0, OSError(errno.ENOSPC, "No space left on device"))(None))
    monkeypatch.setattr(autosave.files.os, "close", closing_then_failing)
    with pytest.raises(OSError) as info:
        autosave.save(tmp_path / "slot.sav", 1)
    assert info.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path) == []

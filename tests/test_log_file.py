"""The checkpoint log's storage layer (docs/log-format.md): what a flush made durable
survives any crash; a torn tail is cut and reported; corruption inside committed data is
a CorruptLogError naming the offset."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autosave import CorruptLogError
from autosave.log import LogFile, LogLockedError
from autosave.log.file import CHUNK, PAYLOAD, SLOT_OFFSETS

BLOCK = 256   # small blocks put every record across boundaries


def open_log(path, **kw):
    kw.setdefault("block_size", BLOCK)
    return LogFile(path, **kw)


def events(log):
    """(snapshot state or None, [events of each delta since]) of the log's metadata."""
    snapshot, deltas = log.metadata()
    return (snapshot[1] if snapshot else None), [content for _, content in deltas]


def commit_payloads(log, payloads, event):
    offsets = [log.append(PAYLOAD, p) for p in payloads]
    log.commit([event], lambda: {"snapshot": event})
    return offsets


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=700), max_size=4), min_size=1, max_size=6))
def test_records_round_trip_across_blocks(tmp_path_factory, commits):
    path = tmp_path_factory.mktemp("log") / "p.log"
    log = open_log(path)
    written = []
    for n, payloads in enumerate(commits):
        written += zip(commit_payloads(log, payloads, n), payloads)
    log.close()
    with open_log(path, writable=False) as log:
        assert [log.read(offset) for offset, _ in written] == [(PAYLOAD, p) for _, p in written]
        assert events(log) == (None, [[n] for n in range(len(commits))])
        assert log.recovered == 0


def test_pending_records_are_readable_before_the_commit(tmp_path):
    log = open_log(tmp_path / "p.log")
    offset = log.append(PAYLOAD, b"not flushed yet")
    assert log.read(offset) == (PAYLOAD, b"not flushed yet")


def test_snapshots_bound_what_opening_replays(tmp_path):
    path = tmp_path / "p.log"
    log = open_log(path, deltas_per_snapshot=3)
    history = []
    for n in range(10):
        history.append(n)
        log.commit([n], lambda: {"events so far": list(history)})
    log.close()
    snapshot, deltas = events(open_log(path))
    # Commits 3 and 7 wrote snapshots (each including its own events) instead of deltas.
    assert snapshot == {"events so far": [0, 1, 2, 3, 4, 5, 6, 7]}
    assert deltas == [[8], [9]]


@pytest.fixture
def two_commits(tmp_path):
    """A log with commit A, the file bytes after it, and after commit B."""
    path = tmp_path / "p.log"
    log = open_log(path)
    rng = random.Random(4)
    payloads_a = [rng.randbytes(300), rng.randbytes(40)]
    a = dict(zip(commit_payloads(log, payloads_a, "A"), payloads_a))
    after_a = path.read_bytes()
    b = commit_payloads(log, [rng.randbytes(500), rng.randbytes(9)], "B")
    log.close()
    return path, after_a, path.read_bytes(), a, b


@pytest.mark.slow
def test_crash_at_every_byte_of_a_commit_keeps_the_previous_commit(two_commits, tmp_path):
    path, after_a, after_b, records_a, _ = two_commits
    end_a, end_b = len(after_a), len(after_b)
    for cut in range(end_a, end_b + 1):
        # The data of commit B reached the disk up to `cut`; its slot did not.
        crashed = tmp_path / f"crash{cut}.log"
        crashed.write_bytes(after_a + after_b[end_a:cut])
        log = open_log(crashed)
        whole = cut == end_b        # all of B's data: found by scanning forward
        assert log.recovered == (0 if whole else cut - end_a)
        assert events(log) == (None, [["A"], ["B"]] if whole else [["A"]])
        assert {o: log.read(o)[1] for o in records_a} == records_a
        assert os.path.getsize(crashed) == (end_b if whole else end_a)   # torn tail cut
        log.commit(["C"], dict)                          # and writing goes on from there
        log.close()
        assert events(open_log(crashed)) == (None, [["A"], ["B"], ["C"]] if whole
                                             else [["A"], ["C"]])


def test_torn_superblock_write_keeps_one_valid_slot(two_commits, tmp_path):
    path, after_a, after_b, _, _ = two_commits
    slot_at = SLOT_OFFSETS[2 % 2]            # commit B (seq 2) overwrote slot 0
    new_slot = after_b[slot_at:slot_at + 64]
    old_slot = after_a[slot_at:slot_at + 64]
    for torn in range(65):
        image = bytearray(after_b)
        image[slot_at:slot_at + 64] = new_slot[:torn] + old_slot[torn:]
        crashed = tmp_path / f"torn{torn}.log"
        crashed.write_bytes(bytes(image))
        log = open_log(crashed)
        # B's data was durable before its slot was written: a torn slot loses nothing.
        assert events(log) == (None, [["A"], ["B"]]), torn
        assert log.recovered == 0
        assert bool(log.recovery) == (torn != 64)
        log.close()
        with open_log(crashed, writable=False) as log:    # the writer repaired both slots
            assert log.recovery == [] and events(log) == (None, [["A"], ["B"]])


def test_any_damage_to_the_superblock_slots_loses_nothing(two_commits, tmp_path):
    """Each slot alone, and both, flipped bit by bit or zeroed: the commits are found
    again by scanning forward from the newest usable slot (or from the header)."""
    path, _, after_b, _, _ = two_commits
    images = []
    for slot_at in SLOT_OFFSETS:
        for bit in range(0, 64 * 8, 7):
            image = bytearray(after_b)
            image[slot_at + bit // 8] ^= 1 << bit % 8
            images.append(image)
    images.append(after_b[:64] + bytes(128) + after_b[192:])
    for image in images:
        damaged = tmp_path / "slots.log"
        damaged.write_bytes(bytes(image))
        with open_log(damaged, writable=False) as log:
            assert events(log) == (None, [["A"], ["B"]]) and log.recovered == 0
            assert log.slot.seq == 2


def chunk_spans(data, offset, block):
    """Byte ranges of the chunks of the record at offset (what a flip must be caught in)."""
    spans, pos = [], offset
    while True:
        _, length, kind = CHUNK.unpack_from(data, pos)
        spans.append(range(pos, pos + CHUNK.size + length))
        pos += CHUNK.size + length
        if kind in (1, 4):
            return spans
        if block - pos % block < CHUNK.size:
            pos += block - pos % block


@pytest.mark.slow
def test_flipped_byte_in_a_payload_is_reported_with_its_offset(two_commits, tmp_path):
    path, _, after_b, _, offsets_b = two_commits
    target = offsets_b[0]
    for span in chunk_spans(after_b, target, BLOCK):
        for at in span:
            image = bytearray(after_b)
            image[at] ^= 0x40
            damaged = tmp_path / "flip.log"
            damaged.write_bytes(bytes(image))
            log = open_log(damaged, writable=False)
            with pytest.raises(CorruptLogError, match=r"offset \d+"):
                log.read(target)
            log.close()


def test_flipped_byte_in_older_metadata_fails_the_open(two_commits, tmp_path):
    path, after_a, after_b, _, _ = two_commits
    with open_log(path, writable=False) as log:
        meta_a = log.metadata()[1][0][0]
    for span in chunk_spans(after_b, meta_a, BLOCK):
        for at in span:
            image = bytearray(after_b)
            image[at] ^= 0x01
            damaged = tmp_path / "flip.log"
            damaged.write_bytes(bytes(image))
            with open_log(damaged) as log, pytest.raises(CorruptLogError, match=r"offset \d+"):
                log.metadata()


@pytest.mark.slow
def test_damage_anywhere_in_the_last_commit_opens_at_the_one_before(two_commits, tmp_path):
    """Without ordered writes a crash can make a commit's superblock slot durable and
    not all of its data: any damaged byte of the last commit falls back to the previous
    commit (and says so), never to an error or to wrong data."""
    path, after_a, after_b, records_a, _ = two_commits
    for at in range(len(after_a), len(after_b)):
        image = bytearray(after_b)
        image[at] ^= 0x20
        damaged = tmp_path / "flip.log"
        damaged.write_bytes(bytes(image))
        with open_log(damaged, writable=False) as log:
            found = events(log)
            if found == (None, [["A"], ["B"]]):       # only block padding was hit
                assert log.recovery == []
                continue
            assert found == (None, [["A"]]), at
            assert any("commit 2" in line for line in log.recovery)
            assert {o: log.read(o)[1] for o in records_a} == records_a


def test_damaged_headers_are_named(two_commits, tmp_path):
    path, _, after_b, _, _ = two_commits
    cases = {
        "not an autosave checkpoint log": b"garbage!" + after_b[8:],
        "version 9 at offset 8": after_b[:8] + b"\x09" + after_b[9:],
        "block size 1048576 at offset 12": after_b[:12] + (1 << 20).to_bytes(4, "little")
                                           + after_b[16:],
        "less than its header block": after_b[:200],
    }
    for message, image in cases.items():
        damaged = tmp_path / "bad.log"
        damaged.write_bytes(image)
        with pytest.raises(CorruptLogError, match=message):
            open_log(damaged)
        assert damaged.read_bytes() == image, "a damaged log must not be modified"


def test_one_writer_at_a_time(tmp_path):
    path = tmp_path / "p.log"
    writer = open_log(path)
    with pytest.raises(LogLockedError, match="open for writing in another process"):
        open_log(path)
    reader = open_log(path, writable=False)        # readers are welcome
    reader.close()
    writer.close()
    open_log(path).close()                         # the lock went with the writer


def test_second_process_cannot_write(tmp_path):
    path = tmp_path / "p.log"
    writer = open_log(path)
    probe = textwrap.dedent(f"""
        from autosave.log import LogFile, LogLockedError
        try:
            LogFile({str(path)!r}, block_size={BLOCK})
        except LogLockedError as e:
            print("locked:", e)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    writer.close()
    assert out.startswith("locked:")


WRITER = textwrap.dedent("""
    import sys
    from autosave.log import LogFile
    from autosave.log.file import PAYLOAD
    log = LogFile(sys.argv[1], block_size=256, deltas_per_snapshot=5)
    n = int(sys.argv[2])
    while True:
        log.append(PAYLOAD, (b"%d;" % n) * (n % 97 + 1))
        log.commit([n], lambda: {"last": n})
        print(n, flush=True)          # only after the commit returned
        n += 1
""")


@pytest.mark.slow
def test_sigkill_at_random_instants_loses_nothing_committed(tmp_path):
    path = tmp_path / "killed.log"
    rng = random.Random(11)
    reported = -1
    for round_ in range(8):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(reported + 1)],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(0.15 + rng.random() * 0.25)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        lines = out.split()
        if lines:
            reported = int(lines[-1])
        log = open_log(path)
        snapshot, deltas = events(log)
        found = [e for delta in deltas for e in delta]
        if found:
            last = found[-1]
        else:                         # killed before its first commit (a slow start)
            last = snapshot["last"] if snapshot is not None else -1
        # Everything reported committed is there; at most one commit more made it.
        assert last in (reported, reported + 1), (round_, last, reported)
        reported = last
        log.close()


def test_a_cut_inside_an_older_commit_opens_at_the_last_whole_one(tmp_path):
    """Both slots then point past the end of the file: the commits before the cut are
    found by scanning from the header."""
    path = tmp_path / "p.log"
    log = open_log(path)
    ends = []
    for name in "ABCD":
        commit_payloads(log, [name.encode() * 300], name)
        ends.append(log.end)
    log.close()
    image = path.read_bytes()
    for k in (1, 2):                               # cut inside commit k + 1 (B, then C)
        for cut in (ends[k - 1] + 1, (ends[k - 1] + ends[k]) // 2, ends[k] - 1):
            damaged = tmp_path / "cut.log"
            damaged.write_bytes(image[:cut])
            with open_log(damaged, writable=False) as log:
                assert events(log) == (None, [[n] for n in "ABCD"[:k]])
                assert log.recovered == cut - ends[k - 1]
                assert any("scanning the whole file" in line for line in log.recovery)
            with open_log(damaged) as log:         # a writer goes on from there
                log.commit(["E"], dict)
            with open_log(damaged, writable=False) as log:
                assert events(log) == (None, [[n] for n in "ABCD"[:k]] + [["E"]])
                assert log.recovery == []


def test_a_creation_that_never_completed_is_created_again(tmp_path):
    path = tmp_path / "p.log"
    open_log(path).close()
    header = path.read_bytes()
    for cut in (0, 5, 8, 16, 100, BLOCK - 1):
        path.write_bytes(header[:cut])
        with open_log(path) as log:
            assert log.slot.seq == 0 and log.recovery == []
            log.commit(["A"], dict)
        with open_log(path, writable=False) as log:
            assert events(log) == (None, [["A"]])
    # Anything else is not taken for a new log, nor changed.
    path.write_bytes(b"hello, world")
    with pytest.raises(CorruptLogError, match="not an autosave checkpoint log"):
        open_log(path)
    assert path.read_bytes() == b"hello, world"


def write_version_1_log(path):
    """A log as autosave wrote it before version 2: metadata records without a commit
    number, slots with zeros past ``deltas``, snapshot checkpoints as [step, offset]
    lists. Returns the state of its one checkpoint."""
    import zlib

    import msgpack

    import autosave
    from autosave.log.records import DELTA, SNAPSHOT, Slot, frame, header_block

    state = {"hp": 7}
    image = bytearray(header_block(BLOCK))
    image[8] = 1
    slot = Slot(0, BLOCK, 0)

    def append(kind, body):
        offset, framed = frame(bytes((kind,)) + body, len(image), BLOCK)
        image.extend(framed)
        return offset

    payload = append(PAYLOAD, zlib.compress(autosave.dumps(state), 1))
    events = [["node", 0, "ch1", None, None, None, 0], ["checkpoint", 0, 0, payload],
              ["bookmark", "a", 0, 0, "old", 1.5, 0], ["steps", 0, 0], ["at", 0, 0]]
    meta = append(DELTA, msgpack.packb([0, events], use_bin_type=True))
    slot = Slot(1, len(image), meta, 1)
    image[SLOT_OFFSETS[1]:SLOT_OFFSETS[1] + 64] = slot.pack()
    snapshot = {"records": [[0, "ch1", None, None, None, 0, 0, [[0, payload]]]],
                "bookmarks": [["a", 0, 0, "old", 1.5, 0]], "reached": ["r"],
                "globals": autosave.dumps({}), "at": [0, 0]}
    meta = append(SNAPSHOT, msgpack.packb([0, snapshot], use_bin_type=True))
    slot = Slot(2, len(image), meta, 0)
    image[SLOT_OFFSETS[0]:SLOT_OFFSETS[0] + 64] = slot.pack()
    path.write_bytes(bytes(image))
    return state


def test_version_1_logs_are_read_and_upgraded(tmp_path):
    from autosave import CheckpointLog

    path = tmp_path / "v1.log"
    state = write_version_1_log(path)
    with CheckpointLog.open(path, writable=False) as log:
        assert log.restore(log.bookmarks["a"].position) == state and "r" in log.reached
        assert log.recovery == []
    assert path.read_bytes()[8] == 1
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.step({"hp": 8})
        log.bookmark("b")
    assert path.read_bytes()[8] == 4
    with CheckpointLog.open(path, writable=False) as log:
        assert log.restore(log.bookmarks["a"].position) == state
        assert log.restore(log.bookmarks["b"].position) == {"hp": 8}
        assert log.recovery == []


def version_2_table(checkpoints):
    """How version 2 wrote a checkpoint table: int64 (step, offset) pairs."""
    from array import array
    steps = sorted(checkpoints)
    pairs = array("q", [x for step in steps for x in (step, checkpoints[step])])
    if sys.byteorder == "big":
        pairs.byteswap()
    return pairs.tobytes()


def test_version_2_logs_are_read_and_upgraded(tmp_path, monkeypatch):
    """Logs written before checkpoint tables were packed as differences open, restore
    every position, and a writer goes on in version 4, snapshots and delta checkpoints
    included."""
    from autosave import CheckpointLog
    from autosave.log import file as log_file, history, records
    from autosave.log.chain import is_delta

    path = tmp_path / "v2.log"
    with monkeypatch.context() as m:
        for module in (records, log_file):
            m.setattr(module, "VERSION", 2)
        m.setattr(history, "pack_row",
                  lambda checkpoints, segments, append: (version_2_table(checkpoints), []))
        # version 2 knew whole checkpoints only
        with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=2,
                                full_every=0) as log:
            log.enter("n")
            for i in range(40):
                log.step({"i": i})
                log.bookmark(f"b{i}")
                log.flush()
    assert path.read_bytes()[8] == 2
    with CheckpointLog.open(path, writable=False) as log:
        assert all(log.restore(log.bookmarks[f"b{i}"].position) == {"i": i} for i in range(40))
    with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=2) as log:
        for i in range(40, 80):
            log.step({"i": i})
            log.bookmark(f"b{i}")
            log.flush()
    assert path.read_bytes()[8] == 4
    with CheckpointLog.open(path, writable=False) as log:
        assert all(log.restore(log.bookmarks[f"b{i}"].position) == {"i": i} for i in range(80))
        payloads = [log.file.read(log.records[0].checkpoints[i])[1] for i in range(80)]
    assert not any(map(is_delta, payloads[:40])) and any(map(is_delta, payloads[41:]))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 2 ** 40), st.integers(0, 2 ** 62), max_size=50),
       st.booleans())
def test_checkpoint_tables_round_trip(checkpoints, consecutive):
    from autosave.log.records import pack_checkpoints, unpack_checkpoints
    if consecutive:                 # the common case, read back as a range
        checkpoints = {i + 7: o for i, o in enumerate(checkpoints.values())}
    tag, count, stream = pack_checkpoints(checkpoints)
    steps, offsets = unpack_checkpoints(count, stream)
    assert tag == "zd" and dict(zip(steps, offsets)) == checkpoints

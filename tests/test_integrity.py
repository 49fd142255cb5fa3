"""Every save carries a checksum, checked before anything is decoded: a corrupted or
truncated file is a FormatError saying so, never a silent load of other values. Saves of
format version 1 (no checksum) keep loading with exactly what was saved.

Long corruption campaigns: AUTOSAVE_FUZZ_EXAMPLES=20000 python -m pytest tests/test_integrity.py
"""

import json
import os
import pathlib
import random

import msgpack
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
import autosave.format.wire
import format1_graphs
import forge
import helpers
from autosave import ChecksumError, FormatError, TruncatedSaveError
from autosave.cli import main as cli_main
from autosave.format.wire import FRAME_SIZE, frame, unframe

DATA = pathlib.Path(__file__).resolve().parent / "data"
FORMAT1 = DATA / "format1"
OLD_FORMATS = {1: FORMAT1, 2: DATA / "format2", 3: DATA / "format3"}    # written by the autosave of each version
FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0"))
SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- graphs for real saves -------------------------------------------------------------

atoms = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-2 ** 70, 2 ** 70),
    st.floats(allow_nan=True), st.text(max_size=12), st.binary(max_size=12),
)
graphs = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=4), inner, max_size=4),
        st.frozensets(st.integers(), max_size=4), st.sets(st.text(max_size=3), max_size=4),
    ),
    max_leaves=25,
)


def save_of(graph):
    return autosave.dumps(graph)


# -- the frame, as docs/format.md specifies it ------------------------------------------


def test_header_layout_is_the_documented_one():
    data = autosave.dumps({"hp": 3, "name": "Anna"})
    body = data[21:]
    assert data[0:4] == b"\x89ASV"
    assert data[4] == 8
    assert int.from_bytes(data[5:13], "little") == len(body)
    # The checksum covers every byte of the file but its own eight.
    assert int.from_bytes(data[13:21], "little") == xxhash.xxh3_64_intdigest(data[:13] + body)
    assert msgpack.unpackb(body) == msgpack.unpackb(bytes(unframe(data)[1]))
    assert unframe(data)[0] == 8 and FRAME_SIZE == 21


def test_a_corrupt_body_is_refused_before_anything_is_decoded(monkeypatch):
    data = bytearray(autosave.dumps([1, 2, 3]))
    data[-1] ^= 1

    def unpack(*args, **kwargs):
        raise AssertionError("msgpack ran on a body whose checksum fails")

    monkeypatch.setattr(autosave.format.wire.msgpack, "unpackb", unpack)
    with pytest.raises(ChecksumError, match="corrupt"):
        autosave.loads(bytes(data))


def test_the_checksum_catches_an_edit_format1_would_load_silently():
    data = autosave.dumps([1000, "gold"])
    body = bytes(unframe(data)[1])
    edited = body.replace(msgpack.packb(1000), msgpack.packb(9999))
    assert edited != body
    # Without a checksum, the edited value loads as if it had been saved...
    format1 = forge.pack(forge.records_body(data)).replace(msgpack.packb(1000),
                                                           msgpack.packb(9999))
    assert autosave.loads(b"\x89ASV\x01" + format1) == [9999, "gold"]
    # ...with one, the same edit is caught.
    with pytest.raises(ChecksumError):
        autosave.loads(data[:FRAME_SIZE] + edited)


def test_error_classes():
    assert issubclass(ChecksumError, FormatError) and issubclass(TruncatedSaveError, FormatError)
    assert not issubclass(ChecksumError, TruncatedSaveError)
    assert not issubclass(TruncatedSaveError, ChecksumError)


def expect_single_bit_flip_error(data, pos, bit):
    """Load ``data`` with one bit flipped, and check the error names what happened."""
    bad = bytearray(data)
    bad[pos] ^= 1 << bit
    with pytest.raises(FormatError) as info:
        autosave.loads(bytes(bad))
    error, message = info.value, str(info.value)
    if pos < 4:
        assert type(error) is FormatError and "not an autosave file" in message
    elif pos == 4 and bad[4] in autosave.format.wire.FRAMED:   # another framed version:
        assert type(error) is ChecksumError                  # the checksum covers it
    elif pos == 4 and bad[4] == 1:     # format 1 has no frame: the header is no body
        assert isinstance(error, FormatError)
    elif pos == 4:
        assert type(error) is FormatError and f"version {bad[4]} is not supported" in message
    elif pos < 13:
        assert type(error) is ChecksumError and "header is corrupt" in message
    else:
        assert type(error) is ChecksumError and "does not match the checksum" in message


def expect_truncation_error(data, end):
    with pytest.raises(FormatError) as info:
        autosave.loads(data[:end])
    if end < 4:
        assert "not an autosave file" in str(info.value)
    else:
        assert type(info.value) is TruncatedSaveError and "truncated" in str(info.value)


@pytest.mark.slow
def test_every_bit_flip_and_truncation_of_a_rich_save_is_refused():
    data = autosave.dumps(format1_graphs.heroes() + [format1_graphs.stdlib()])
    assert len(data) > 4000
    for pos in range(len(data)):
        for bit in range(8):
            expect_single_bit_flip_error(data, pos, bit)
    for end in range(len(data)):
        expect_truncation_error(data, end)


@pytest.mark.slow
@settings(max_examples=max(40, FUZZ // 50), **SETTINGS)
@given(graphs)
def test_every_bit_flip_and_truncation_of_real_saves_is_refused(graph):
    data = save_of(graph)
    assert autosave.dumps(autosave.loads(data)) == data
    for pos in range(len(data)):
        for bit in range(8):
            expect_single_bit_flip_error(data, pos, bit)
    for end in range(len(data)):
        expect_truncation_error(data, end)


@pytest.mark.parametrize("extra", [b"\x00", b"\xc0", b"\x89ASV\x02", None])
def test_trailing_bytes_are_named_as_such(extra):
    data = autosave.dumps({"a": [1, 2, 3]})
    with pytest.raises(FormatError, match="trailing bytes") as info:
        autosave.loads(data + (extra if extra is not None else data))
    assert type(info.value) is FormatError


@settings(max_examples=max(60, FUZZ // 20), **SETTINGS)
@given(graphs)
def test_dumps_loads_dumps_gives_the_same_bytes(graph):
    data = autosave.dumps(graph)
    assert autosave.dumps(autosave.loads(data)) == data


# -- random corruption never loads silently ----------------------------------------------


def corrupt(data, rng):
    """``data`` with 1 to 4 random edits: bit flips, byte sets, inserts, deletes,
    duplicated or swapped ranges, truncations, appended bytes."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["flip", "set", "insert", "delete", "dup", "swap", "cut", "append"])
        pos = rng.randrange(len(data) + 1)
        if op == "flip" and pos < len(data):
            data[pos] ^= 1 << rng.randrange(8)
        elif op == "set":
            data[pos:pos + 4] = rng.randbytes(rng.randint(1, 4))
        elif op == "insert":
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == "delete":
            del data[pos:pos + rng.randint(1, 16)]
        elif op == "dup":
            data[pos:pos] = data[pos:pos + rng.randint(1, 32)]
        elif op == "swap" and pos + 2 < len(data):
            data[pos], data[pos + 1] = data[pos + 1], data[pos]
        elif op == "cut":
            del data[pos:]
        elif op == "append":
            data += rng.randbytes(rng.randint(1, 8))
    return bytes(data)


def test_thousands_of_random_corruptions_never_load_silently():
    rng = random.Random(11)
    saves = [autosave.dumps(g()) for g in format1_graphs.GRAPHS.values()]
    saves += [autosave.dumps(format1_graphs.heroes() + [i, str(i) * i]) for i in range(10)]
    refused = 0
    for _ in range(max(5000, FUZZ)):
        data = rng.choice(saves)
        bad = corrupt(data, rng)
        if bad == data:
            continue
        with pytest.raises(FormatError):
            autosave.loads(bad)
        refused += 1
    assert refused > 4000


@pytest.mark.slow
@settings(max_examples=max(150, FUZZ // 10), **SETTINGS)
@given(graphs, st.randoms(use_true_random=False))
def test_random_corruptions_of_real_saves_never_load_silently(graph, rng):
    data = autosave.dumps(graph)
    for _ in range(20):
        bad = corrupt(data, rng)
        if bad != data:
            with pytest.raises(FormatError):
                autosave.loads(bad)


def test_a_forged_frame_with_a_valid_checksum_still_meets_the_body_checks():
    # The checksum catches accidents, not forgers: anyone can compute it. Whatever a
    # correctly framed file holds is checked as before.
    with pytest.raises(FormatError, match="msgpack map"):
        autosave.loads(frame(msgpack.packb([[], [], {"a": 1}, []])))
    with pytest.raises(autosave.UntrustedTypeError):
        autosave.loads(frame(msgpack.packb([[["os.system", 1, []]], [[0]], [-1], []])))


# -- a checkpoint log is not a save ------------------------------------------------------


def test_format_knows_the_checkpoint_logs_magic():
    from autosave.log.file import MAGIC
    assert autosave.format.wire.LOG_MAGIC == MAGIC


def make_log(path):
    with autosave.CheckpointLog.open(path, checkpoint_every=2) as log:
        log.enter("chapter1")
        log.step({"hp": 3})


def test_loading_a_checkpoint_log_says_what_it_is(tmp_path):
    path = tmp_path / "profile.log"
    make_log(path)
    with pytest.raises(FormatError, match="checkpoint log") as info:
        autosave.load(path)
    assert "CheckpointLog.open" in str(info.value) and "autosave inspect" in str(info.value)
    assert "version" not in str(info.value)


def test_dumping_a_checkpoint_log_says_what_it_is(tmp_path, capsys):
    path = tmp_path / "profile.log"
    make_log(path)
    assert cli_main(["dump", str(path)]) == 2
    err = capsys.readouterr().err
    assert "checkpoint log" in err and "autosave inspect" in err and "not supported" not in err


# -- format 1 ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", sorted(OLD_FORMATS))
@pytest.mark.parametrize("name", sorted(format1_graphs.GRAPHS))
def test_saves_of_older_formats_load_with_their_contents(name, version):
    path = OLD_FORMATS[version] / f"{name}.sav"
    data = path.read_bytes()
    assert data[:5] == b"\x89ASV" + bytes([version]), "a fixture must keep its format"
    loaded = autosave.load(path)
    helpers.assert_isomorphic(format1_graphs.GRAPHS[name](), loaded)
    # Saved again, in today's format, the graph gives the bytes of the graph built today.
    again = autosave.dumps(loaded)
    assert again == autosave.dumps(format1_graphs.GRAPHS[name]())
    assert again[4] == autosave.format.wire.VERSION


@pytest.mark.parametrize("version", sorted(OLD_FORMATS))
def test_older_format_fixtures_cover_every_graph(version):
    assert (sorted(p.stem for p in OLD_FORMATS[version].glob("*.sav"))
            == sorted(format1_graphs.GRAPHS))


def test_dump_reports_each_files_own_format_version(tmp_path, capsys):
    assert cli_main(["dump", str(FORMAT1 / "tiny.sav")]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == 1
    path = tmp_path / "new.sav"
    autosave.save(path, 7)
    assert cli_main(["dump", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == 8


def test_format1_truncations_are_still_format_errors():
    data = (FORMAT1 / "heroes.sav").read_bytes()
    for end in range(len(data)):
        with pytest.raises(FormatError):
            autosave.loads(data[:end])

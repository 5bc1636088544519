"""An `.npz` written by `np.savez` is read without a copy: its embeddings member memory-mapped where it lies in the
file (its CRC checked as `np.load` checks it), and consecutive rows handed out as a read-only view; a compressed
member is read into memory, and a damaged one is the reader's one-line error."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.embeddings_tables import start_file_pass

IDS = np.array([f"p{i}" for i in range(6)])
MATRIX = np.arange(6 * 4, dtype=np.float32).reshape(6, 4) / 7


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_stored_member_is_mapped_and_equal(tmp_path: Path, order: str) -> None:
    path = tmp_path / "e.npz"
    np.savez(path, ids=IDS, embeddings=np.asarray(MATRIX, order=order))
    store = EmbeddingStore.load(path)
    assert isinstance(store.matrix.base, np.memmap) or isinstance(store.matrix, np.memmap)
    assert np.array_equal(store.matrix, MATRIX)


def test_a_compressed_member_is_read_into_memory(tmp_path: Path) -> None:
    path = tmp_path / "e.npz"
    np.savez_compressed(path, ids=IDS, embeddings=MATRIX)
    store = EmbeddingStore.load(path)
    assert not isinstance(store.matrix, np.memmap) and np.array_equal(store.matrix, MATRIX)


def test_a_damaged_mapped_member_is_refused_by_its_crc(tmp_path: Path) -> None:
    path = tmp_path / "e.npz"
    np.savez(path, ids=IDS, embeddings=MATRIX)
    data = bytearray(path.read_bytes())
    data[data.find(MATRIX.tobytes()) + 9] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"e\.npz.*CRC"):
        EmbeddingStore.load(path)


@pytest.mark.parametrize("damaged", [False, True])
def test_the_file_pass_started_early_checks_the_crc_across_its_blocks(tmp_path: Path, damaged: bool) -> None:
    """The pass a run starts before it reads its data (`start_file_pass`) hashes the whole file and takes each
    stored member's CRC over several read blocks: its digest is the file's sha256, and a byte flipped in a later
    block is refused by the CRC, as `np.load` would refuse it."""
    rows = 3 * (1 << 22) // (4 * 64)  # the matrix spans three of the pass's read blocks
    matrix = np.random.default_rng(0).standard_normal((rows, 64)).astype(np.float32)
    path = tmp_path / "e.npz"
    np.savez(path, ids=np.array([f"p{i}" for i in range(rows)]), embeddings=matrix)
    if damaged:
        data = bytearray(path.read_bytes())
        data[data.find(matrix[:4].tobytes()) + matrix.nbytes - 5] ^= 1
        path.write_bytes(bytes(data))
    file_pass = start_file_pass(path)
    assert file_pass is not None and file_pass.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    if damaged:
        with pytest.raises(InputError, match=r"e\.npz.*CRC"):
            EmbeddingStore.load(path, file_pass=file_pass)
    else:
        store = EmbeddingStore.load(path, file_pass=file_pass)
        assert store.sha256 == file_pass.sha256 and np.array_equal(store.matrix, matrix)


def test_no_file_pass_for_a_pipe_or_a_json_lines_file(tmp_path: Path) -> None:
    """A pipe is never opened ahead of its read (what the pass read, the read could not); JSON lines are hashed
    by their own parser."""
    lines = tmp_path / "e.jsonl"
    lines.write_text('{"paper_id": "p1", "embedding": [1.0]}\n')
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert start_file_pass(lines) is None and start_file_pass(fifo) is None
    assert start_file_pass(tmp_path / "absent.npz") is None


def test_consecutive_rows_are_a_read_only_view_and_others_a_copy(tmp_path: Path) -> None:
    store = EmbeddingStore.from_mapping({f"p{i}": row for i, row in enumerate(MATRIX)})
    view = store.vectors(["p2", "p3", "p4"])
    assert np.shares_memory(view, store.matrix) and not view.flags.writeable
    assert np.array_equal(view, MATRIX[2:5])
    for ids in (["p3", "p2"], ["p1", "p3"], ["p5", "absent"]):
        gathered = store.vectors(ids)
        assert not np.shares_memory(gathered, store.matrix)
        assert np.array_equal(gathered, [MATRIX[int(i[1:])] if i != "absent" else np.zeros(4) for i in ids])
    assert store.vectors(["p0", "p1"], dtype=np.float64).dtype == np.float64


def test_a_non_finite_value_past_the_first_chunks_names_its_paper(tmp_path: Path) -> None:
    """The finite check runs a chunk of values at a time: a NaN deep in a large matrix is still found, and named."""
    rows, dim = 3000, 64  # 192,000 values: three chunks of the check
    matrix = np.random.default_rng(0).standard_normal((rows, dim), dtype=np.float32)
    matrix[2345, 17] = np.nan
    path = tmp_path / "e.npz"
    np.savez(path, ids=np.array([f"p{i}" for i in range(rows)]), embeddings=matrix)
    with pytest.raises(InputError, match=r"e\.npz.*paper 'p2345': embedding value 17 is nan"):
        EmbeddingStore.load(path)


def test_the_digest_read_beside_the_vectors_is_the_file_s(tmp_path: Path) -> None:
    path = tmp_path / "e.npz"
    np.savez(path, ids=IDS, embeddings=MATRIX)
    assert EmbeddingStore.load(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_cut_short_while_its_pass_reads_it_does_not_kill_the_process(tmp_path: Path) -> None:
    """CI lost a test worker to SIGBUS: a refused file's pass was still reading it through a memory map when the
    test rewrote the file shorter. The pass reads with `read` now; a file cut under it ends the read early (and
    a stopped pass ends at its next block). Run in a child, as SIGBUS would kill this worker."""
    import subprocess
    import sys

    path = tmp_path / "e.npz"
    np.savez(path, ids=np.array(["a"]), embeddings=np.ones((1 << 22, 16), dtype=np.float32))  # 256 MiB stored
    script = (
        "import sys, pathlib\n"
        "from scidocs_eval.formats.embeddings_tables import FilePass\n"
        "path = pathlib.Path(sys.argv[1])\n"
        "for _ in range(3):\n"
        "    file_pass = FilePass(path)\n"
        "    path.write_bytes(b'')\n"
        "    print(file_pass.sha256, file_pass.crc(0))\n"
        "    file_pass.stop()\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.splitlines()) == 3


def test_a_stopped_pass_has_no_digest_to_give(tmp_path: Path) -> None:
    from scidocs_eval.formats.embeddings_tables import FilePass

    path = tmp_path / "e.npz"
    np.savez(path, ids=np.array(["a"]), embeddings=np.ones((1 << 21, 16), dtype=np.float32))  # 128 MiB
    file_pass = FilePass(path)
    file_pass.stop()
    try:
        digest = file_pass.sha256
    except RuntimeError as error:
        assert "was stopped" in str(error)
    else:  # the read won the race: then it is the whole file's
        assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_refused_file_stops_the_pass_it_was_given(tmp_path: Path) -> None:
    """A load that refuses the file ends the pass's reads (they would only read a file no run uses)."""
    path = tmp_path / "e.npz"
    np.savez(path, embeddings=MATRIX)  # no ids: the reader refuses it
    file_pass = start_file_pass(path)
    assert file_pass is not None
    with pytest.raises(InputError, match="an .npz needs arrays 'ids' and 'embeddings'"):
        EmbeddingStore.load(path, file_pass=file_pass)
    assert file_pass._stopped.is_set()


def test_a_run_stops_the_passes_of_the_files_it_never_loaded(tmp_path: Path) -> None:
    """The run starts each array file's pass before it reads any data; one that ends before it loads the file (a
    refused input, an error in an earlier task) stops the pass instead of leaving it reading."""
    from scidocs_eval.evaluation.runner import _Stores

    used, unused = tmp_path / "used.npz", tmp_path / "unused.npz"
    for path in (used, unused):
        np.savez(path, ids=IDS, embeddings=MATRIX)
    stores = _Stores({"classification": str(used), "ranking": str(unused)}, cache=False, dtype=np.float32,
                     progress=False, read_options=None)
    passes = dict(stores.file_passes)
    assert stores.get("classification").sha256 == hashlib.sha256(used.read_bytes()).hexdigest()
    stores.close()
    assert passes[str(unused.resolve())]._stopped.is_set()
    assert not passes[str(used.resolve())]._stopped.is_set()  # its digest was taken whole

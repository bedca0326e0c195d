"""Generation that recovers from every fault: an API that keeps failing, stale or broken checkpoint
files, a full disk. The model is the local OpenAI-compatible test server (deterministic answers),
so a resumed run can be compared with an uninterrupted one."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from earnest.backends import load_backend
from earnest.generation import GenerationError, checkpoint_dir, generate_dataset, load_checkpoints
from earnest.gsm.prompts import load_formats
from openai_server import FakeOpenAI

FMT = load_formats()["simple_nl"]
COMPARED = ["item_id", "model", "prompt", "dataset", "response", "prompt_tokens", "new_tokens", "stop_reason"]


def _items(n: int, long: int = 0) -> pd.DataFrame:
    return pd.DataFrame([dict(item_id=f"t{i:03d}-base", dataset="gsm_base", template_id=i, instance=-1,
                              question=f"Question number {i}?" + (" " + "x" * long if long else ""), answer="1", gamma=0.0)
                         for i in range(n)])


def _question(prompt: str) -> str:
    return prompt.rsplit("\nQ: ", 1)[1].split("\nA:", 1)[0]


def _backend(url: str, **kw):
    cfg = {"backend": "openai", "base_url": url, "model": "m", "concurrency": 2, "max_retries": 1,
           "timeout_s": 5, "backoff_s": 0.01, "max_backoff_s": 0.02, **kw}
    return load_backend("api", cfg)


def _generate(url, items, out, **kw):
    return generate_dataset(items, FMT, _backend(url), model="api", dataset="gsm_base", output=out,
                            max_new_tokens=8, **kw)


def test_requests_without_an_answer_fail_the_job_and_a_rerun_asks_only_for_them(tmp_path):
    items = _items(6)
    bad = {FMT.render(items.question[1]), FMT.render(items.question[4])}
    out = tmp_path / "gen.parquet"
    with FakeOpenAI(always={p: 500 for p in bad}) as srv:
        with pytest.raises(GenerationError, match=r"2 of 6 requests got no answer \(error:http_500 x2"):
            _generate(srv.url, items, out, checkpoint_every=1)
    assert not out.exists()
    saved = load_checkpoints(checkpoint_dir(out))
    assert sorted(saved.item_id) == sorted(set(items.item_id) - {"t001-base", "t004-base"})
    assert not saved.stop_reason.str.startswith("error").any()      # failures are not stored as answers
    with FakeOpenAI() as srv:
        table = _generate(srv.url, items, out)
        assert sorted(_question(r["body"]["prompt"]) for r in srv.received) == [items.question[1], items.question[4]]
    assert list(table.item_id) == list(items.item_id) and table.response.str.startswith("echo:").all()
    assert not checkpoint_dir(out).exists()


def _resume(tmp_path, n: int, prepare, **kw):
    """Generate ``n`` items without interruption (the reference), then again into an output whose
    checkpoint folder ``prepare(ckpt, reference)`` filled first; the resumed table must equal the
    reference. Returns the items, the reference, the resumed table, the questions the resumed run
    asked (sorted) and the checkpoint folder."""
    items = _items(n)
    out = tmp_path / "gen.parquet"
    with FakeOpenAI() as srv:
        reference = _generate(srv.url, items, tmp_path / "ref.parquet")
        ckpt = checkpoint_dir(out)
        ckpt.mkdir()
        prepare(ckpt, reference)
        table = _generate(srv.url, items, out, **kw)
        asked = sorted(_question(r["body"]["prompt"]) for r in srv.received[len(items):])
    pd.testing.assert_frame_equal(table[COMPARED], reference[COMPARED])
    return items, reference, table, asked, ckpt


def test_stale_temporary_files_and_broken_parts_are_cleaned(tmp_path):
    def prepare(ckpt, reference):
        # what the old code and a full disk left behind: a zero-byte temporary part, a zero-byte part
        (ckpt / ".part-00003.parquet.tmp-4242").write_bytes(b"")
        (ckpt / ".part-00004.parquet.tmp-99-7").write_bytes(b"PAR1")
        (ckpt / "part-00004.parquet").write_bytes(b"")
        # a good part written by an earlier run: its rows are kept, not asked again
        reference.iloc[:2].to_parquet(ckpt / "part-00000.parquet")

    items, reference, table, asked, ckpt = _resume(tmp_path, 5, prepare)
    assert asked == sorted(items.question[2:])
    assert (table.seconds.iloc[:2] == reference.seconds.iloc[:2]).all()
    assert not ckpt.exists()   # removed whole, whatever was in it (the old code failed on rmdir here)


def test_part_names_never_collide(tmp_path):
    """Parts were numbered by counting them: with part-00001 missing, the next part overwrote part-00002."""
    def prepare(ckpt, reference):
        reference.iloc[[0]].to_parquet(ckpt / "part-00000.parquet")
        reference.iloc[[2]].to_parquet(ckpt / "part-00002.parquet")

    items, _, _, asked, _ = _resume(tmp_path, 6, prepare, checkpoint_every=1)
    assert asked == sorted(items.question[[1, 3, 4, 5]])


@contextlib.contextmanager
def _small_filesystem(path: Path, size_kb: int):
    """A tmpfs of ``size_kb`` at ``path`` when this process may mount one, else None."""
    path.mkdir(parents=True)
    mounted = os.geteuid() == 0 and shutil.which("mount") and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)], capture_output=True).returncode == 0
    try:
        yield bool(mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=False)


def test_full_disk_during_generation_then_rerun_gives_the_uninterrupted_result(tmp_path, monkeypatch):
    """The disk fills while parts are written: the job fails with ENOSPC and leaves no temporary
    file; once space is freed, the same call finishes, equal to a run that was never interrupted."""
    items = _items(40, long=300)
    with FakeOpenAI() as srv:
        reference = _generate(srv.url, items, tmp_path / "ref.parquet", checkpoint_every=2)
        with _small_filesystem(tmp_path / "small", 512) as mounted:
            out = tmp_path / "small" / "results" / "gen.parquet"
            filler = tmp_path / "small" / "filler"
            if mounted:   # leave room for a few parts only
                filler.write_bytes(b"\0" * (512 - 48) * 1024)
            else:         # no tmpfs here: the disk "fills" after a few parts
                import pandas.core.frame as frame

                real, calls = frame.DataFrame.to_parquet, []

                def to_parquet(self, path, *a, **kw):
                    calls.append(path)
                    if len(calls) > 4:
                        raise OSError(errno.ENOSPC, "No space left on device", str(path))
                    return real(self, path, *a, **kw)

                monkeypatch.setattr(frame.DataFrame, "to_parquet", to_parquet)
            with pytest.raises(OSError) as exc:
                _generate(srv.url, items, out, checkpoint_every=2)
            assert exc.value.errno == errno.ENOSPC
            ckpt = checkpoint_dir(out)
            assert not [p.name for p in ckpt.iterdir() if p.name.startswith(".")]  # no temp file left
            kept = load_checkpoints(ckpt)
            assert 0 < kept.item_id.nunique() < len(items)
            # free the space and run again
            if mounted:
                filler.unlink()
            else:
                monkeypatch.undo()
            n_before = len(srv.received)
            table = _generate(srv.url, items, out, checkpoint_every=2)
            assert len(srv.received) - n_before == len(items) - kept.item_id.nunique()
            pd.testing.assert_frame_equal(table[COMPARED], reference[COMPARED])
            pd.testing.assert_frame_equal(pd.read_parquet(out)[COMPARED], reference[COMPARED])
            assert not ckpt.exists()

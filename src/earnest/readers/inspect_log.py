"""Inspect AI evaluation logs read as harness samples (:mod:`earnest.readers.lmeval`'s rows), without inspect-ai.

Format followed: the ``.eval`` log as inspect-ai 0.3.x writes it (tested on a log of 0.3.285): a zip
archive with ``header.json`` (``eval``: ``task``, ``model``, ``dataset``, ...; ``status``) and one
``samples/<id>_epoch_<n>.json`` per sample and epoch (``id``, ``epoch``, ``input``, ``target``,
``scores``: ``{scorer: {"value": "C" | "I" | ..., "answer": ...}}``, ``metadata``, ``error``); and
the ``.json`` log (``--log-format json``): the same header fields and a ``samples`` list. Recent
inspect-ai compresses the zip's members with Zstandard (zip method 93), which Python's zipfile
reads only from 3.14 on; on older Pythons earnest decompresses them with the ``zstandard`` package
(requirements.txt). Members are read with the standard library otherwise. No member is
decompressed beyond :data:`MAX_MEMBER_BYTES` (256 MiB; a sample of a real log is kilobytes): a
larger one (a damaged log, or a zip bomb) is refused naming the file and the member.

A sample (of one epoch) becomes one row: model (the log's model, or ``--lm-eval-model``), task (the log's task),
doc_id (the sample id), item (a hash of the sample's id, input, target and metadata, so
that the same dataset row pairs across models and tasks), template and variant (from the sample's metadata,
as lm-eval docs: ``--lm-eval-template-field`` / ``--lm-eval-variant-field``, the task for base
tasks; or from the sample id by ``--id-pattern``), correct (the scorer's value: ``C`` / ``I``, or
the other letters of Inspect's accuracy metric: ``N`` (no answer) is 0, ``P`` (partial) is refused;
numbers and booleans must be 0/1), question (metadata's question field, else the input text) and
epoch.

Epochs (``inspect eval --epochs N`` answers every sample N times): a log with several is read for one
epoch (``--inspect-epoch N``) or for all of them (``--inspect-epoch all``): then each epoch's answer
is a row of its own of the same item (column ``epoch``). The GLMM input averages them per question
(:func:`earnest.readers.lmeval.average_epochs`): one row per question, ``correct`` the share of its
epochs answered right, ``epochs`` their number, which must be the same for every question of a
model x prompt (unbalanced epochs are refused). N epochs of one question are not N independent
answers: as rows of their own they shrank the full-data fit's Wald SE (by ~29% with two identical
greedy epochs) while the template bootstrap's interval was right; averaged, each question weighs one
answer and two identical epochs give exactly one epoch's fit. ``compare`` pairs epoch e of one condition
with epoch e of the other (each epoch's pair of answers a paired unit); ``power`` takes the design as
answers per template.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Sequence

import pandas as pd

from earnest.jsonl import decode_utf8, parse_json
from earnest.readers.lmeval import (LmEvalError, Mapping, ROW_COLUMNS, binary_value, check_one_file_per_task, doc_hash,
                                    foreign_file, integer_id, model_names, sample_row)

FORMAT_VERSION = "Inspect AI .eval / .json logs (as inspect-ai 0.3.x writes them)"
ZSTD = 93                      # the zip compression method of Zstandard
LETTERS = {"C": 1, "I": 0, "N": 0}  # Inspect's CORRECT, INCORRECT, NOANSWER (its accuracy metric's values)
SAMPLE_RE = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
#: the most bytes one member of a .eval log may decompress to (both zip and Zstandard members); the
#: one place this limit is decided
MAX_MEMBER_BYTES = 256 * 2**20


def _too_large(where: str, declared: int | None = None) -> LmEvalError:
    size = f" (its zip entry declares {declared:,} bytes)" if declared is not None else ""
    return LmEvalError(f"{where}: this member decompresses to more than {MAX_MEMBER_BYTES:,} bytes{size}, more than "
                       f"any sample or header of an Inspect log needs (inspect_log.MAX_MEMBER_BYTES); a damaged "
                       f"log or not an Inspect AI log")


def _zstd_decompress(data: bytes, where: str) -> bytes:
    """``data`` (one or more Zstandard frames) decompressed, at most :data:`MAX_MEMBER_BYTES` of it
    (more: LmEvalError naming ``where``)."""
    import io
    try:
        from compression import zstd  # Python >= 3.14
    except ImportError:
        zstd = None
    if zstd is not None:
        try:
            with zstd.ZstdFile(io.BytesIO(data)) as r:
                return _capped_read(r, where)
        except (zstd.ZstdError, EOFError) as exc:
            raise LmEvalError(f"{where}: damaged Zstandard member ({exc})") from None
    try:
        import zstandard
    except ImportError:
        raise LmEvalError(f"{where}: the log's members are Zstandard-compressed (as recent inspect-ai writes "
                          f".eval logs); reading them needs Python >= 3.14 or the zstandard package (pip install "
                          f"zstandard; requirements.txt), or convert the log: inspect log convert LOG --to json") from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as r:
            return _capped_read(r, where)
    except (zstandard.ZstdError, EOFError) as exc:
        raise LmEvalError(f"{where}: damaged Zstandard member ({exc})") from None


def _capped_read(stream, where: str) -> bytes:
    """All of ``stream``, read in pieces; LmEvalError naming ``where`` past :data:`MAX_MEMBER_BYTES`."""
    parts, total = [], 0
    while True:
        part = stream.read(min(1 << 20, MAX_MEMBER_BYTES + 1 - total))
        if not part:
            return b"".join(parts)
        parts.append(part)
        total += len(part)
        if total > MAX_MEMBER_BYTES:
            raise _too_large(where)


def _member(zf: zipfile.ZipFile, raw, info: zipfile.ZipInfo, path: Path) -> bytes:
    """The bytes of one zip member, with a Zstandard member decompressed by :func:`_zstd_decompress`."""
    where = f"{path} ({info.filename})"
    if info.file_size > MAX_MEMBER_BYTES:   # refused unread
        raise _too_large(where, info.file_size)
    if info.compress_type != ZSTD:
        try:   # zipfile stops at the declared size (checked above); read in pieces all the same
            with zf.open(info) as member:
                return _capped_read(member, where)
        except (NotImplementedError, zipfile.BadZipFile, zlib.error) as exc:
            raise LmEvalError(f"{where}: cannot read this zip member ({exc})") from None
    raw.seek(info.header_offset)
    head = raw.read(30)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        raise LmEvalError(f"{where}: damaged zip archive (no local header)")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    raw.seek(info.header_offset + 30 + name_len + extra_len)
    data = _zstd_decompress(raw.read(info.compress_size), where)
    if zlib.crc32(data) != info.CRC:
        raise LmEvalError(f"{where}: damaged zip member (CRC mismatch)")
    return data


def _json(data: bytes, where: str):
    """A JSON document (an object, as every part of an Inspect log is); LmEvalError naming ``where``
    for text that is not UTF-8 or JSON, JSON nested too deep to read, a key given twice in one object
    (json keeps the last), or a document that is not an object."""
    text = decode_utf8(data, where, error=LmEvalError)  # by line and column; a byte order mark allowed
    doc = parse_json(text, where, LmEvalError, multiline=True)
    if not isinstance(doc, dict):
        raise LmEvalError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    return doc


def read_log(path: str | Path) -> tuple[dict, list[tuple[str, dict]]]:
    """(header, [(where, sample), ...]) of one Inspect log, ``where`` naming the file and member."""
    path = Path(path)
    problem = foreign_file(path, "inspect")
    if problem:
        raise LmEvalError(problem)
    if path.suffix == ".json":
        doc = _json(path.read_bytes(), str(path))
        samples = doc.get("samples") or []
        if not isinstance(samples, list):
            raise LmEvalError(f"{path}: 'samples' must be a list of samples, found {type(samples).__name__}")
        for i, s in enumerate(samples):
            if not isinstance(s, dict):
                raise LmEvalError(f"{path} (samples[{i}]): a sample must be a JSON object, found {json.dumps(s)[:80]}")
        return doc, [(f"{path} (samples[{i}])", s) for i, s in enumerate(samples)]
    try:
        with open(path, "rb") as raw, zipfile.ZipFile(raw) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            if "header.json" not in infos:
                start = infos.get("_journal/start.json")
                if start is None:
                    raise LmEvalError(f"{path}: a zip archive without header.json: not an Inspect AI .eval log")
                header = _json(_member(zf, raw, start, path), f"{path} (_journal/start.json)")
            else:
                header = _json(_member(zf, raw, infos["header.json"], path), f"{path} (header.json)")
            samples = []
            for name in sorted(infos):
                if SAMPLE_RE.match(name):
                    where = f"{path} ({name})"
                    samples.append((where, _json(_member(zf, raw, infos[name], path), where)))
    except zipfile.BadZipFile as exc:
        raise LmEvalError(f"{path}: damaged zip archive ({exc})") from None
    except OSError as exc:
        raise LmEvalError(f"{path}: cannot read ({exc})") from None
    return header, samples


def _correct(score, where: str, scorer: str) -> int:
    value = score.get("value") if isinstance(score, dict) else None
    what = f"score '{scorer}'"
    if isinstance(value, str):
        v = value.strip()
        if v.upper() in LETTERS:
            return LETTERS[v.upper()]
        if v.lower() in ("true", "yes", "correct"):
            return 1
        if v.lower() in ("false", "no", "incorrect"):
            return 0
        raise LmEvalError(f"{where}: {what} is {value!r}; a GLMM needs correct/incorrect (C or I"
                          + (", and P is partial credit" if v.upper() == "P" else "") + ")")
    if isinstance(value, dict):
        raise LmEvalError(f"{where}: {what} holds several values ({', '.join(map(str, value))}); a GLMM needs one "
                          f"correct/incorrect value per sample")
    return binary_value(value, where, what)


def _question(sample: dict, mapping: Mapping):
    meta = sample.get("metadata") if isinstance(sample.get("metadata"), dict) else {}
    q = meta.get(mapping.question_field)
    if isinstance(q, str):
        return q
    inp = sample.get("input")
    if isinstance(inp, str):
        return inp
    if isinstance(inp, list):  # chat messages: the user's text
        texts = []
        for m in inp:
            if isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                texts += [c] if isinstance(c, str) else [p.get("text", "") for p in c or [] if isinstance(p, dict)]
        return "\n".join(texts) if texts else None
    return None


def read_logs(paths: Sequence[str | Path], *, mapping: Mapping = Mapping(), scorer: str | None = None,
              epoch: int | str | None = None, model: Sequence[str] | str | None = None) -> pd.DataFrame:
    """Rows (:data:`earnest.readers.lmeval.ROW_COLUMNS`) of every sample of every log in ``paths``.

    ``epoch``: the epoch to read when a log has several (None: the only one, an error when there
    are several); ``"all"``: every epoch's answer, each a row of the same item (same doc_id, item,
    template and variant; column ``epoch``)."""
    if not (epoch is None or epoch == "all" or (isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 1)):
        raise LmEvalError(f"epoch {epoch!r}: give an epoch number (an int, 1, 2, ...), 'all' or None")
    logs = [(Path(p), *read_log(p)) for p in paths]
    heads = []
    for path, header, _ in logs:
        ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
        if not ev.get("task") or not ev.get("model"):
            raise LmEvalError(f"{path}: the log's header names no task or model (not an Inspect AI log?)")
        heads.append((str(ev["task"]), str(ev["model"])))
    names = model_names([m for _, m in heads], model)
    rx = re.compile(mapping.id_pattern) if mapping.id_pattern else None
    rows, files = [], {}
    for (path, header, samples), (task, mdl) in zip(logs, heads):
        mdl = names[mdl]
        check_one_file_per_task(files, mdl, task, path, noun="log")
        if not samples:
            raise LmEvalError(f"{path}: no samples in the log (status {header.get('status')!r})")
        for where, s in samples:   # a JSON integer, as Inspect writes it ("2" is no epoch of Inspect's)
            if isinstance(s.get("epoch"), str):
                raise LmEvalError(f"{where}: epoch must be an integer (a JSON number, not text), found "
                                  f"{json.dumps(s['epoch'])[:80]}")
        epoch_of = [(where, s, integer_id(s.get("epoch", 1), where, "epoch", minimum=1)) for where, s in samples]
        epochs = sorted({e for _, _, e in epoch_of})
        if len(epochs) > 1:   # every epoch answers every sample again: a sample missing from one is a cut log
            ids = {e: {str(s.get("id")) for _, s, ep in epoch_of if ep == e} for e in epochs}
            union = set().union(*ids.values())
            short = {e: sorted(union - got) for e, got in ids.items() if got != union}
            if short:
                e, missing = next(iter(short.items()))
                raise LmEvalError(f"{path}: unbalanced epochs: epoch {e} lacks {len(missing)} sample(s) the others "
                                  f"answer ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); every "
                                  "epoch answers every sample (inspect eval --epochs N): retry the log "
                                  "(inspect eval-retry), or choose a complete epoch with --inspect-epoch N")
        chosen = epoch
        if chosen is None:
            if len(epochs) > 1:
                raise LmEvalError(f"{path}: samples of {len(epochs)} epochs ({', '.join(map(str, epochs))}), each "
                                  f"answering every sample again; choose one with --inspect-epoch N, or use every "
                                  f"epoch's answer (each a row of the same item) with --inspect-epoch all")
            chosen = epochs[0]
        elif chosen != "all" and chosen not in epochs:
            raise LmEvalError(f"{path}: no samples of epoch {chosen} (epochs: {', '.join(map(str, epochs))})")
        seen = {}
        for where, s, ep in epoch_of:
            if chosen != "all" and ep != chosen:
                continue
            if "id" not in s:
                raise LmEvalError(f"{where}: sample without an id")
            sid = s["id"]
            if isinstance(sid, bool) or not isinstance(sid, (int, str)):
                raise LmEvalError(f"{where}: sample id must be a string or an integer, found {json.dumps(sid)[:80]}")
            if (ep, str(sid)) in seen:
                raise LmEvalError(f"{where}: sample id {sid!r} appears twice in epoch {ep} "
                                  f"(first: {seen[(ep, str(sid))]})")
            seen[(ep, str(sid))] = where
            if s.get("error"):
                msg = s["error"].get("message") if isinstance(s["error"], dict) else s["error"]
                raise LmEvalError(f"{where}: sample {sid!r} ended with an error ({str(msg)[:120]}), so it has no "
                                  f"score; retry the log (inspect eval-retry) or leave the sample out")
            scores = s.get("scores")
            if not isinstance(scores, dict) or not scores:
                raise LmEvalError(f"{where}: sample {sid!r} has no scores")
            name = scorer
            if name is None:
                if len(scores) != 1:
                    raise LmEvalError(f"{where}: {len(scores)} scorers ({', '.join(scores)}); choose one with "
                                      f"--inspect-scorer")
                name = next(iter(scores))
            if name not in scores:
                raise LmEvalError(f"{where}: no score of scorer {name!r} (scorers: {', '.join(scores)})")
            correct = _correct(scores[name], where, name)
            meta = s.get("metadata") if isinstance(s.get("metadata"), dict) else {}
            template = variant = None
            if rx is not None:
                m = rx.fullmatch(str(sid))
                if not m:
                    raise LmEvalError(f"{where}: sample id {sid!r} does not match --id-pattern {mapping.id_pattern!r}")
                template = integer_id(m.group("template"), where, "template id (from the sample id)")
                if "variant" in rx.groupindex and m.group("variant") is not None:
                    variant = integer_id(m.group("variant"), where, "variant (from the sample id)")
                    if variant not in (0, 1):
                        raise LmEvalError(f"{where}: variant {variant} from the sample id must be 0 or 1")
            # the dataset row's identity, as lm-eval's doc_hash: the same in every task and model that has it
            item = doc_hash({"id": sid, "input": s.get("input"), "target": s.get("target"), "metadata": meta})
            row = sample_row(model=mdl, task=task, doc_id=sid, item=item, fields=meta, correct=correct, where=where,
                             mapping=mapping, template=template, variant=variant, epoch=ep, reader="inspect")
            row["question"] = _question(s, mapping)
            rows.append(row)
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS))

"""PDF input of the StatFormBench construction pipeline through pypdf: a textbook PDF becomes one entry per
page with text, a case project's PDF report is read as text, and a file that is no PDF is refused by name."""

from __future__ import annotations

import pytest

from earnest.statform.build.entries import EntryError, read_entries, report_text, scan_cases

pytest.importorskip("pypdf")


def make_pdf(pages):
    """A minimal PDF (Helvetica text, one line per page) written byte by byte."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        safe = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({safe}) Tj ET"
        objs.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                    f"/Contents {len(objs)} 0 R >>")
        kids.append(f"{len(objs)} 0 R")
    objs[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = b"%PDF-1.4\n", []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_a_textbook_pdf_becomes_one_entry_per_page_with_text(tmp_path):
    pdf = tmp_path / "Stats Book.pdf"
    pdf.write_bytes(make_pdf(["Exercise 4.1 A machine fills bags of 500 g.", "", "Exercise 4.2 (b) Test the mean."]))
    entries = read_entries(pdf)
    assert [(e["entry_id"], e["question"], e["answer"], e["metadata"]) for e in entries] == [
        ("Stats-Book-p0001", "Exercise 4.1 A machine fills bags of 500 g.", "", {"pdf": "Stats Book.pdf", "page": 1}),
        ("Stats-Book-p0003", "Exercise 4.2 (b) Test the mean.", "", {"pdf": "Stats Book.pdf", "page": 3})]


def test_a_case_report_may_be_a_pdf(tmp_path):
    project = tmp_path / "cases" / "shop"
    project.mkdir(parents=True)
    (project / "report.pdf").write_bytes(make_pdf(["Weekly sales of 40 shops were analysed."]))
    (project / "sales.csv").write_text("shop,sales\n1,10\n")
    projects, excluded = scan_cases(tmp_path / "cases")
    assert excluded == [] and report_text(projects["shop"]["report"]) == "Weekly sales of 40 shops were analysed."


def test_unreadable_and_textless_pdfs_are_refused(tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4\nnot really a pdf")
    with pytest.raises(EntryError, match=r"bad.pdf: not a readable PDF"):
        read_entries(bad)
    blank = tmp_path / "blank.pdf"
    blank.write_bytes(make_pdf([""]))
    with pytest.raises(EntryError, match=r"blank.pdf: no page holds text"):
        read_entries(blank)

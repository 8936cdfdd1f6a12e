"""A small folder of office documents made in the test (fpdf2, python-docx, python-pptx, openpyxl): a company's
policies as PDF, DOCX, PPTX, XLSX, HTML and Markdown, with the queries a team would ask of them."""

from __future__ import annotations

import json
from pathlib import Path

PDF_PAGES = [
    ("Refunds", "Refunds are paid within 14 days of the request. A refund above 500 euros needs a manager's approval."),
    ("Shipping", "Orders ship from the Rotterdam warehouse within 3 working days. Express delivery costs 12 euros."),
]


def write_pdf(path: Path, pages: list[tuple[str, str]] = PDF_PAGES) -> Path:
    """A PDF with one heading and paragraph per page."""
    from fpdf import FPDF

    pdf = FPDF()
    for heading, text in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 16)
        pdf.cell(0, 10, heading)
        pdf.ln(12)
        pdf.set_font("Helvetica", size=12)
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))
    return path


def write_docx(path: Path) -> Path:
    """A Word file with two headed sections and a table."""
    from docx import Document

    doc = Document()
    doc.add_heading("Travel rules", 1)
    doc.add_paragraph("Economy class is required for flights under 6 hours. Business class needs director approval.")
    doc.add_heading("Meals", 2)
    doc.add_paragraph("The daily meal allowance is 45 euros for travel inside the European Union.")
    doc.add_heading("Hotels", 2)
    table = doc.add_table(rows=3, cols=2)
    for r, (city, cap) in enumerate([("City", "Nightly hotel cap"), ("Paris", "180 euros"), ("Madrid", "140 euros")]):
        table.cell(r, 0).text, table.cell(r, 1).text = city, cap
    doc.save(str(path))
    return path


def write_pptx(path: Path) -> Path:
    """A slide deck of two slides."""
    from pptx import Presentation

    deck = Presentation()
    for title, body in [("Q3 results", "Revenue grew 12 percent to 4.1 million euros in the third quarter."),
                        ("Hiring", "We hired 23 engineers in Lisbon during the quarter.")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    deck.save(str(path))
    return path


def write_xlsx(path: Path) -> Path:
    """A workbook with one price sheet."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Prices"
    for row in [("Item", "Price"), ("Standard widget", "9.50 euros"), ("Premium widget", "14.00 euros")]:
        sheet.append(row)
    book.save(str(path))
    return path


HTML = """<html><head><title>Security</title><script>alert(1)</script></head><body>
<h1>Security policy</h1><p>Passwords must be rotated every 90 days.</p>
<h2>Laptops</h2><p>Company laptops use full-disk encryption with BitLocker.</p></body></html>"""

MARKDOWN = """# Support handbook

## Opening hours

The support desk is open from 8:00 to 18:00 on working days.

## Escalation

A priority-one ticket is escalated to the on-call engineer after 30 minutes.
"""

DUPLICATE = """# Support handbook

## Opening hours

The support desk is open from 8:00 to 18:00 on working days.
"""

FRENCH = """# Politique de congés

Chaque salarié dispose de vingt-cinq jours de congés payés par an, à poser avant la fin du mois de mars suivant.
"""


def office_folder(folder: Path) -> Path:
    """The folder: policy.pdf, travel.docx, q3.pptx, prices.xlsx, security.html, support.md, a repeat and a French
    note."""
    folder.mkdir(parents=True, exist_ok=True)
    write_pdf(folder / "policy.pdf")
    write_docx(folder / "travel.docx")
    write_pptx(folder / "q3.pptx")
    write_xlsx(folder / "prices.xlsx")
    (folder / "security.html").write_text(HTML, encoding="utf-8")
    (folder / "support.md").write_text(MARKDOWN, encoding="utf-8")
    (folder / "support-copy.md").write_text(DUPLICATE, encoding="utf-8")
    (folder / "conges.txt").write_text(FRENCH, encoding="utf-8")
    return folder


QUERIES = [
    {"query_id": "q-refund", "domain": "company", "query": "How quickly are refunds paid?",
     "answer_facts": ["14 days"], "supporting_doc_ids": ["policy.pdf"]},
    {"query_id": "q-meals", "domain": "company", "query": "What is the daily meal allowance for travel in the EU?",
     "answer_facts": ["45 euros"], "supporting_doc_ids": ["travel.docx"]},
    {"query_id": "q-hiring", "domain": "company", "query": "How many engineers were hired in Lisbon?",
     "answer_facts": ["23 engineers"], "supporting_doc_ids": ["q3.pptx"]},
    {"query_id": "q-passwords", "domain": "company", "query": "How often must passwords be rotated?",
     "answer_facts": ["90 days"], "supporting_doc_ids": ["security.html"]},
    {"query_id": "q-escalation", "domain": "company", "query": "When is a priority-one ticket escalated?",
     "answer_facts": ["30 minutes"], "supporting_doc_ids": ["support.md"]},
    {"query_id": "q-parking", "domain": "company", "query": "How many parking spaces does the office have?",
     "answerable": False, "answer_facts": []},
]


def write_queries(path: Path, fmt: str = "jsonl") -> Path:
    """The team's questions as JSONL or CSV (lists ';'-separated)."""
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8")
        return path
    import csv

    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, ["query_id", "domain", "query", "answerable", "answer_facts", "supporting_doc_ids"])
        writer.writeheader()
        for q in QUERIES:
            writer.writerow({**q, "answerable": "no" if q.get("answerable") is False else "",
                             "answer_facts": ";".join(q["answer_facts"]),
                             "supporting_doc_ids": ";".join(q.get("supporting_doc_ids", []))})
    return path

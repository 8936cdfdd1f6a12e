"""Make static/fonts/gauntlet-cjk.woff2, the CJK font the app serves itself (issue 28: CJK legible with no system
CJK font and no remote fetch).

Source: Noto Sans CJK SC Regular from Debian's `fonts-noto-cjk` (1:20220127+repack1-1), SIL Open Font License 1.1.
Subset: every character of GB2312 (6,763 hanzi) and of JIS X 0208 (6,355 kanji), kana, CJK symbols and punctuation,
enclosed CJK letters, and the half- and full-width forms; the font's default OpenType features only.

    apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb /tmp/noto
    .venv/bin/python -m bench.make_cjk_font /tmp/noto/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
"""

from __future__ import annotations

import argparse
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "static" / "fonts" / "gauntlet-cjk.woff2"
SC_INDEX = 2  # the collection's fonts: JP, KR, SC, TC, HK, then the Mono ones
BLOCKS = [(0x2010, 0x2027), (0x3000, 0x303F), (0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0x3200, 0x32FF),
          (0xFF00, 0xFFEF)]


def double_byte_chars(encoding: str, rows: range) -> set[str]:
    """Every character a two-byte EUC encoding defines in `rows` (lead bytes) x 0xA1-0xFE."""
    chars = set()
    for lead in rows:
        for trail in range(0xA1, 0xFF):
            try:
                chars.add(bytes([lead, trail]).decode(encoding))
            except UnicodeDecodeError:
                continue
    return chars


def code_points() -> set[int]:
    """The subset's code points: GB2312 and JIS X 0208 ideographs, then the blocks above."""
    ideographs = double_byte_chars("gb2312", range(0xB0, 0xF8)) | double_byte_chars("euc_jp", range(0xB0, 0xF5))
    return {ord(c) for c in ideographs} | {c for first, last in BLOCKS for c in range(first, last + 1)}


def make(collection: Path, out: Path = OUT) -> int:
    """Write the woff2 subset; return its size in bytes."""
    from fontTools import subset
    from fontTools.ttLib import TTCollection

    font = TTCollection(str(collection)).fonts[SC_INDEX]
    options = subset.Options(flavor="woff2", hinting=False, name_IDs=["*"], name_languages=["*"])
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=code_points())
    subsetter.subset(font)
    font.flavor = "woff2"
    out.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(out))
    return out.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection", type=Path, help="NotoSansCJK-Regular.ttc")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    size = make(args.collection, args.out)
    print(f"{args.out}: {len(code_points())} code points, {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()

"""Hostile documents built in memory for the attack tests (and the measurements quoted in docs/configuration.md): a DOCX
whose word/document.xml inflates to 1 GB from about 1 MB, a HUDOC HTML body of a million tiny paragraphs.
Nothing here is ever written to the repository; the zip bomb is built without holding its inflated bytes."""
from __future__ import annotations

import struct
import zlib

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
GB = 1024 ** 3


def deflate_repeated(prefix: bytes, unit: bytes, repeats: int, suffix: bytes) -> tuple[bytes, int, int]:
    """(raw deflate stream, inflated size, CRC-32) of prefix + unit * repeats + suffix. After a full flush the
    compressor starts afresh, so every block of `unit` compresses to the same bytes: the stream is that block
    repeated, and only the CRC walks the inflated length."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = compressor.compress(prefix) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(unit) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(unit) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert again == block, "deflate blocks after a full flush differ: cannot repeat them"
    tail = compressor.compress(suffix) + compressor.flush(zlib.Z_FINISH)
    crc = zlib.crc32(prefix)
    for _ in range(repeats):
        crc = zlib.crc32(unit, crc)
    crc = zlib.crc32(suffix, crc)
    stream = head + block * (repeats - 1) + again + tail if repeats else head + tail
    return stream, len(prefix) + len(unit) * repeats + len(suffix), crc


def zip_archive(members: dict[str, bytes | tuple[bytes, int, int]]) -> bytes:
    """A zip file written by hand: a bytes value is stored deflated as usual; a (raw deflate stream, declared
    size, CRC) tuple is written as it is, so a member may claim whatever size its header says."""
    out, directory = bytearray(), bytearray()
    for name, member in members.items():
        if isinstance(member, bytes):
            compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
            member = (compressor.compress(member) + compressor.flush(), len(member), zlib.crc32(member))
        stream, size, crc = member
        encoded = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(stream), size, len(encoded), 0)
        out += encoded + stream
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(stream), size,
                                 len(encoded), 0, 0, 0, 0, 0, offset) + encoded
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(directory), len(out), 0)
    return bytes(out + directory + end)


def zip_bomb_docx(inflated: int = GB) -> bytes:
    """A DOCX whose word/document.xml is one paragraph holding `inflated` bytes of text ("Text node too long"
    once lxml gets there): about 1 MB on disk for 1 GB."""
    unit = b"A" * (1024 * 1024)
    prefix = f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>'.encode()
    suffix = b"</w:t></w:r></w:p></w:body></w:document>"
    document = deflate_repeated(prefix, unit, inflated // len(unit), suffix)
    return zip_archive({"[Content_Types].xml": b"<Types/>", "word/document.xml": document})


def million_paragraph_html(paragraphs: int = 1_000_000) -> bytes:
    """A HUDOC-like HTML body of `paragraphs` tiny paragraphs: 15.9 MB for a million, under the 32 MB limit."""
    return b"<html><body>" + b"<p class=a>x</p>" * paragraphs + b"</body></html>"

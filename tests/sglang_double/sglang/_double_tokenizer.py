"""The double's own tokenizer: words in pieces of at most five letters, each with its leading
space; punctuation alone; a BOS token first. Deliberately unlike characters / 4."""

import re
import zlib

_PIECE = re.compile(r"\s*\w{1,5}|\s*[^\w\s]|\s+")
VOCAB = 32000
BOS = 1


def tokenize(text, add_special_tokens=True):
    ids = [2 + zlib.crc32(piece.encode()) % (VOCAB - 2) for piece in _PIECE.findall(text)]
    return ([BOS] if add_special_tokens else []) + ids


def pieces(text):
    return _PIECE.findall(text)

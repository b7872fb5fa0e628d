"""The training text: the King James Bible from Debian's bible-kjv package, one verse per line.

The package stores the text compressed in its own format (/usr/lib/bible.data), so it is read
through the package's `bible` command: `-f` prints one verse per line as "Ge1:1 In the beginning
...", and the verse reference (up to the first space) is dropped.
"""
import hashlib
import subprocess

ALL_VERSES = "Gen1:1-Rev22:21"


def load_text():
    out = subprocess.run(["bible", "-f", ALL_VERSES], check=True, capture_output=True).stdout
    lines = out.decode("ascii").splitlines()
    verses = [line.split(" ", 1)[1] for line in lines if line.strip()]
    return "\n".join(verses) + "\n"


def text_sha256(text):
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def vocabulary(text):
    """The sorted set of characters: token id = index in this string."""
    return "".join(sorted(set(text)))

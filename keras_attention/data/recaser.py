"""Capitals put back into lowercased text: the recaser of a translator trained on lowercased text.

A translator trained on lowercased sentences learns one form of each word instead of two
(`mann` for "Mann" at the start of a sentence and after an article), so its subword
vocabulary and its statistics are shared across case; `Recaser` then restores the capitals of
its output. What it learns from the cased target sentences of the corpus, for each word (its
"core": the token between the non-letter, non-digit characters at its edges):

1. the most frequent written form after the word before it (`"zum essen" -> "Essen"`);
2. else the word's most frequent written form (`"mann" -> "Mann"`);
3. else, for a word never seen (German compounds: `"trinkglas"`), the form of its longest
   known ending of at least 3 letters: a capital for the whole word if that ending is
   usually written with one (`"glas" -> "Glas"`, so `"Trinkglas"`);
4. the first word of a sentence starts with a capital.

Only the sentence-initial occurrences are left out of the counts. Everything runs with
TensorFlow string ops and lookup tables, so a SavedModel recases inside its graph, and the
table is learned with the same ops, so what it learns and what it looks up cannot drift apart.
"""

import collections
import os
from collections.abc import Iterable
from pathlib import Path

import tensorflow as tf

from keras_attention.core.atomic_files import write_bytes_atomically
from keras_attention.core.file_checks import CorruptFileError

# Characters at a word's edges that are not part of it: neither a letter nor a digit (RE2).
_PARTS = r"^([^\pL\pN]*)(.*?)([^\pL\pN]*)$"
_PAIR_SEPARATOR = " "  # between the previous word and the word, in a pair's key
SHORTEST_ENDING = 3
LONGEST_ENDING = 12
_TRAIN_BATCH = 4096


def _split(lines):
    """`(batch,)` lines -> whitespace-separated tokens `(batch, None)` and, flat: their
    leading edge, core, trailing edge, lowercased core, the previous token's lowercased core
    (`""` for a sentence's first) and whether each is its sentence's first."""
    tokens = tf.strings.split(lines)
    flat = tokens.flat_values
    lead = tf.strings.regex_replace(flat, _PARTS, r"\1")
    core = tf.strings.regex_replace(flat, _PARTS, r"\2")
    trail = tf.strings.regex_replace(flat, _PARTS, r"\3")
    lower = tf.strings.lower(core, encoding="utf-8")
    shifted = tf.concat([tf.constant([""]), lower[:-1]], axis=0)
    first = _first_in_row(tokens)
    previous = tf.where(first, tf.constant(""), shifted)
    return tokens, lead, core, trail, lower, previous, first


def _first_in_row(tokens):
    """Flat bool: whether each token is its line's first."""
    starts = tokens.row_starts()
    positions = tf.range(tf.size(tokens.flat_values, out_type=starts.dtype))
    return tf.equal(positions, tf.gather(starts, tokens.value_rowids()))


def _first_and_rest(words):
    """Each string's first character and the characters after it (Unicode)."""
    length = tf.strings.length(words, unit="UTF8_CHAR")
    one = tf.minimum(length, 1)
    first = tf.strings.substr(words, tf.zeros_like(length), one, unit="UTF8_CHAR")
    return first, tf.strings.substr(words, one, length - one, unit="UTF8_CHAR")


def _capitalize(words):
    """The first character of each string upper-cased (Unicode)."""
    first, rest = _first_and_rest(words)
    return tf.strings.upper(first, encoding="utf-8") + rest


def _starts_upper(words):
    """Flat bool: whether each string starts with a character that lowercasing changes."""
    first, _ = _first_and_rest(words)
    return tf.not_equal(first, tf.strings.lower(first, encoding="utf-8"))


def _table(mapping: dict[str, str]) -> tf.lookup.StaticHashTable:
    keys = list(mapping) or [""]
    values = [mapping[key] for key in keys] if mapping else [""]
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.string), tf.constant(values, tf.string)
        ),
        default_value="",
    )


class Recaser(tf.Module):
    """Restores the capitals of lowercased sentences, inside a TensorFlow graph.

    Learn it with `Recaser.train` from cased sentences of the target language; see the module
    docstring for its rules.

    Args:
        words: lowercased word -> its most frequent written form.
        pairs: `"previous word"` + space + `"word"` (both lowercased) -> the word's most
            frequent written form after that word, where it differs from `words`'.

    Example:

    >>> recaser = Recaser.train(["Ein Mann isst.", "Zwei Männer essen zum Essen."])
    >>> recaser.recase(["ein mann sieht zwei männer."]).numpy()
    array([b'Ein Mann sieht zwei M\\xc3\\xa4nner.'], dtype=object)
    """

    def __init__(self, words: dict[str, str], pairs: dict[str, str]):
        super().__init__(name="recaser")
        self.words = dict(words)
        self.pairs = dict(pairs)
        self._words = _table(self.words)
        self._pairs = _table(self.pairs)

    @classmethod
    def train(cls, lines: Iterable[str]) -> "Recaser":
        """Learns the written forms from cased sentences (one string each).

        Raises:
            ValueError: if `lines` holds no word.
        """
        lines = [line for line in lines if line.strip()]
        words = collections.defaultdict(collections.Counter)
        pairs = collections.defaultdict(collections.Counter)
        for start in range(0, len(lines), _TRAIN_BATCH):
            batch = tf.constant(lines[start : start + _TRAIN_BATCH], tf.string)
            _, _, core, _, lower, previous, first = _split(batch)
            later = tf.logical_and(tf.logical_not(first), tf.strings.length(core) > 0)
            for form, key, before in zip(
                tf.boolean_mask(core, later).numpy(),
                tf.boolean_mask(lower, later).numpy(),
                tf.boolean_mask(previous, later).numpy(),
                strict=True,
            ):
                form, key = form.decode("utf-8"), key.decode("utf-8")
                words[key][form] += 1
                pairs[before.decode("utf-8") + _PAIR_SEPARATOR + key][form] += 1
        if not words:
            raise ValueError("lines holds no word to learn written forms from")
        best_words = {key: forms.most_common(1)[0][0] for key, forms in words.items()}
        best_pairs = {}
        for key, forms in pairs.items():
            form = forms.most_common(1)[0][0]
            if form != best_words[key.rsplit(_PAIR_SEPARATOR, 1)[1]]:
                best_pairs[key] = form
        return cls(best_words, best_pairs)

    def to_text(self) -> str:
        """The tables as text: one `w<TAB>key<TAB>form` or `p<TAB>key<TAB>form` line each."""
        lines = [f"w\t{key}\t{form}" for key, form in sorted(self.words.items())]
        lines += [f"p\t{key}\t{form}" for key, form in sorted(self.pairs.items())]
        return "".join(line + "\n" for line in lines)

    @classmethod
    def from_text(cls, text: str, source: str = "the recaser text") -> "Recaser":
        """Reads `to_text`'s format; `ValueError` naming `source` and the line if malformed."""
        tables = {"w": {}, "p": {}}
        for number, line in enumerate(text.splitlines(), 1):
            fields = line.split("\t")
            if len(fields) != 3 or fields[0] not in tables or not fields[1]:
                raise ValueError(
                    f"{source}, line {number}: expected 'w' or 'p', a key and a form separated "
                    f"by tabs; got {line[:80]!r}"
                )
            tables[fields[0]][fields[1]] = fields[2]
        if not tables["w"]:
            raise ValueError(f"{source} holds no word")
        return cls(tables["w"], tables["p"])

    def save(self, path: str | os.PathLike) -> Path:
        """Writes `to_text` to `path` atomically (UTF-8); returns the path."""
        return write_bytes_atomically(path, self.to_text().encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Recaser":
        """Reads a file written by `save`.

        Raises:
            FileNotFoundError: naming `path` if it is missing.
            CorruptFileError: naming `path` if it is not UTF-8, was cut short (its last line
                has no line end: `save` ends every line) or holds a malformed line.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no recaser file at {path}")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            raise CorruptFileError(f"{path} is corrupt: not UTF-8 text ({error})") from None
        if text and not text.endswith("\n"):
            raise CorruptFileError(f"{path} is corrupt: cut short (its last line has no end)")
        try:
            return cls.from_text(text, str(path))
        except ValueError as error:  # names the file and the line
            raise CorruptFileError(f"{error} (the file is corrupt)") from None

    def recase(self, lines):
        """`(batch,)` lowercased sentences -> the same with capitals restored (`tf.string`).

        Whitespace between words becomes one space, and surrounding whitespace goes.
        """
        lines = tf.convert_to_tensor(lines, tf.string)
        tokens, lead, core, trail, lower, previous, first = _split(lines)
        after = self._pairs.lookup(previous + _PAIR_SEPARATOR + lower)
        alone = self._words.lookup(lower)
        form = tf.where(tf.strings.length(after) > 0, after, alone)
        unknown = tf.equal(tf.strings.length(form), 0)
        form = tf.where(unknown, core, form)
        capital = self._ending_capital(lower)
        form = tf.where(tf.logical_and(unknown, capital), _capitalize(form), form)
        form = tf.where(first, _capitalize(form), form)
        recased = tokens.with_flat_values(lead + form + trail)
        return tf.strings.reduce_join(recased, axis=1, separator=" ")

    def _ending_capital(self, lower):
        """Flat bool: whether each word's longest known proper ending (3 to 12 characters)
        is usually written with a capital."""
        length = tf.strings.length(lower, unit="UTF8_CHAR")
        capital = tf.zeros_like(length, tf.bool)
        for size in range(SHORTEST_ENDING, LONGEST_ENDING + 1):
            proper = length > size
            ending = tf.strings.substr(
                lower, tf.where(proper, length - size, 0), tf.where(proper, size, 0), "UTF8_CHAR"
            )
            form = self._words.lookup(ending)
            known = tf.logical_and(proper, tf.strings.length(form) > 0)
            capital = tf.where(known, _starts_upper(form), capital)
        return capital

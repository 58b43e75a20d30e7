"""A synthetic English→German parallel corpus generated from a small hand-written grammar.

It is the library's default offline dataset: no download, a few seconds to generate, and a
language small enough (about 100 content words) for a small Transformer to learn on two CPU
cores, yet with the reorderings that make translation more than word substitution:

- German case, gender and adjective declension (strong, weak and mixed endings) in the
  nominative, accusative and dative, weak masculine nouns, `in dem` → `im`, `an dem` → `am`;
- verb agreement with `ich`, `wir`, names and third person singular/plural subjects;
- verb-final subordinate clauses (`..., dass die Frau ein Buch liest.`), modal verbs and
  separable prefixes sent to the end (`Der Junge will einen Apfel essen.`,
  `Der Mann ruft die Frau an.`), verb-second after a fronted adverbial or a fronted
  `wenn` clause, verb-first questions, and English final time adverbials moved into the
  German middle field (`The dog plays in the park today.` → `Der Hund spielt heute im Park.`).

Files follow the Multi30k layout: `train.en`, `train.de`, `val.en`, ... one sentence a line.
"""

import functools
import os
import random
from pathlib import Path
from typing import NamedTuple

from keras_attention.core.atomic_files import write_bytes_atomically


class Noun(NamedTuple):
    en: str
    en_pl: str
    de: str
    de_pl: str
    gender: str  # "m", "f" or "n"
    kinds: str  # P person, A animal, F food, R reading, T thing, O openable, L place
    de_oblique: str = ""  # weak masculine nouns: the accusative/dative singular
    prep: tuple[str, str] = ("in", "in")  # places: English and German locative preposition


class Verb(NamedTuple):
    en: str
    en_3sg: str
    de: str  # infinitive (= plural form) without the separable prefix
    de_1sg: str
    de_3sg: str
    prefix: str = ""  # German separable prefix
    subject: str = "P"  # noun kinds allowed as subject
    object: str = ""  # noun kinds allowed as object; "" for intransitive verbs
    case: str = "acc"  # case of the object


class Determiner(NamedTuple):
    en: str | None  # singular form; None where the determiner has no singular
    en_pl: str | None  # "" for a bare plural; None where there is no plural
    de: str | None  # German stem (singular)
    de_pl: str | None
    kind: str  # "definite", "der" (dieser-type), "ein" (ein/mein-type) or "number"


def _table(cls, rows):
    return {row[0]: cls(*row) for row in rows}


NOUNS: dict[str, Noun] = _table(Noun, [
    ("man", "men", "Mann", "Männer", "m", "P"),
    ("woman", "women", "Frau", "Frauen", "f", "P"),
    ("child", "children", "Kind", "Kinder", "n", "P"),
    ("boy", "boys", "Junge", "Jungen", "m", "P", "Jungen"),
    ("girl", "girls", "Mädchen", "Mädchen", "n", "P"),
    ("teacher", "teachers", "Lehrer", "Lehrer", "m", "P"),
    ("student", "students", "Student", "Studenten", "m", "P", "Studenten"),
    ("friend", "friends", "Freund", "Freunde", "m", "P"),
    ("doctor", "doctors", "Arzt", "Ärzte", "m", "P"),
    ("sister", "sisters", "Schwester", "Schwestern", "f", "P"),
    ("brother", "brothers", "Bruder", "Brüder", "m", "P"),
    ("grandmother", "grandmothers", "Großmutter", "Großmütter", "f", "P"),
    ("dog", "dogs", "Hund", "Hunde", "m", "A"),
    ("cat", "cats", "Katze", "Katzen", "f", "A"),
    ("horse", "horses", "Pferd", "Pferde", "n", "A"),
    ("bird", "birds", "Vogel", "Vögel", "m", "A"),
    ("mouse", "mice", "Maus", "Mäuse", "f", "A"),
    ("apple", "apples", "Apfel", "Äpfel", "m", "F"),
    ("cake", "cakes", "Kuchen", "Kuchen", "m", "F"),
    ("banana", "bananas", "Banane", "Bananen", "f", "F"),
    ("egg", "eggs", "Ei", "Eier", "n", "F"),
    ("orange", "oranges", "Orange", "Orangen", "f", "F"),
    ("book", "books", "Buch", "Bücher", "n", "R"),
    ("letter", "letters", "Brief", "Briefe", "m", "R"),
    ("newspaper", "newspapers", "Zeitung", "Zeitungen", "f", "R"),
    ("story", "stories", "Geschichte", "Geschichten", "f", "R"),
    ("ball", "balls", "Ball", "Bälle", "m", "T"),
    ("car", "cars", "Auto", "Autos", "n", "T"),
    ("key", "keys", "Schlüssel", "Schlüssel", "m", "T"),
    ("bicycle", "bicycles", "Fahrrad", "Fahrräder", "n", "T"),
    ("picture", "pictures", "Bild", "Bilder", "n", "T"),
    ("flower", "flowers", "Blume", "Blumen", "f", "T"),
    ("bag", "bags", "Tasche", "Taschen", "f", "TO"),
    ("door", "doors", "Tür", "Türen", "f", "O"),
    ("window", "windows", "Fenster", "Fenster", "n", "O"),
    ("park", "parks", "Park", "Parks", "m", "L"),
    ("garden", "gardens", "Garten", "Gärten", "m", "L"),
    ("house", "houses", "Haus", "Häuser", "n", "L"),
    ("school", "schools", "Schule", "Schulen", "f", "L"),
    ("kitchen", "kitchens", "Küche", "Küchen", "f", "L"),
    ("city", "cities", "Stadt", "Städte", "f", "L"),
    ("forest", "forests", "Wald", "Wälder", "m", "L"),
    ("street", "streets", "Straße", "Straßen", "f", "L", "", ("on", "auf")),
    ("beach", "beaches", "Strand", "Strände", "m", "L", "", ("on", "an")),
    ("lake", "lakes", "See", "Seen", "m", "L", "", ("at", "an")),
])  # fmt: skip

# English adjective -> (German base form, noun kinds it may describe).
ADJECTIVES: dict[str, tuple[str, str]] = {
    "big": ("groß", "PAFRTOL"), "small": ("klein", "PAFRTOL"), "old": ("alt", "PARTOL"),
    "young": ("jung", "PA"), "new": ("neu", "RTOL"), "beautiful": ("schön", "PARTL"),
    "red": ("rot", "FTO"), "black": ("schwarz", "ATO"), "white": ("weiß", "ATO"),
    "green": ("grün", "FTO"), "long": ("lang", "R"), "funny": ("lustig", "PR"),
    "happy": ("glücklich", "PA"), "tired": ("müde", "PA"), "hungry": ("hungrig", "PA"),
    "clever": ("klug", "P"),
}  # fmt: skip

VERBS: dict[str, Verb] = _table(Verb, [
    ("sleep", "sleeps", "schlafen", "schlafe", "schläft", "", "PA"),
    ("play", "plays", "spielen", "spiele", "spielt", "", "PA"),
    ("work", "works", "arbeiten", "arbeite", "arbeitet"),
    ("sing", "sings", "singen", "singe", "singt", "", "PA"),
    ("laugh", "laughs", "lachen", "lache", "lacht"),
    ("wait", "waits", "warten", "warte", "wartet", "", "PA"),
    ("run", "runs", "laufen", "laufe", "läuft", "", "PA"),
    ("swim", "swims", "schwimmen", "schwimme", "schwimmt", "", "PA"),
    ("dance", "dances", "tanzen", "tanze", "tanzt"),
    ("get up", "gets up", "stehen", "stehe", "steht", "auf"),
    ("go shopping", "goes shopping", "kaufen", "kaufe", "kauft", "ein"),
    ("read", "reads", "lesen", "lese", "liest", "", "P", "R"),
    ("write", "writes", "schreiben", "schreibe", "schreibt", "", "P", "R"),
    ("eat", "eats", "essen", "esse", "isst", "", "PA", "F"),
    ("see", "sees", "sehen", "sehe", "sieht", "", "PA", "PAFRTO"),
    ("buy", "buys", "kaufen", "kaufe", "kauft", "", "P", "FRT"),
    ("have", "has", "haben", "habe", "hat", "", "P", "AT"),
    ("find", "finds", "finden", "finde", "findet", "", "PA", "FRT"),
    ("carry", "carries", "tragen", "trage", "trägt", "", "P", "AFT"),
    ("visit", "visits", "besuchen", "besuche", "besucht", "", "P", "P"),
    ("help", "helps", "helfen", "helfe", "hilft", "", "P", "PA", "dat"),
    ("follow", "follows", "folgen", "folge", "folgt", "", "PA", "PA", "dat"),
    ("call", "calls", "rufen", "rufe", "ruft", "an", "P", "P"),
    ("pick up", "picks up", "holen", "hole", "holt", "ab", "P", "P"),
    ("bring", "brings", "bringen", "bringe", "bringt", "mit", "P", "AFRT"),
    ("open", "opens", "machen", "mache", "macht", "auf", "P", "O"),
    ("look at", "looks at", "sehen", "sehe", "sieht", "an", "P", "PAFRTO"),
])  # fmt: skip

# Verbs taking a `that` clause, and modal verbs (which send the main verb to the end).
MATRIX_VERBS: dict[str, Verb] = _table(Verb, [
    ("say", "says", "sagen", "sage", "sagt"),
    ("believe", "believes", "glauben", "glaube", "glaubt"),
    ("hope", "hopes", "hoffen", "hoffe", "hofft"),
    ("know", "knows", "wissen", "weiß", "weiß"),
])  # fmt: skip
MODALS: dict[str, Verb] = _table(Verb, [
    ("want to", "wants to", "wollen", "will", "will"),
    ("can", "can", "können", "kann", "kann"),
    ("must", "must", "müssen", "muss", "muss"),
])  # fmt: skip
_ENGLISH_AUXILIARIES = ("can", "must")  # modals that invert in English questions

DETERMINERS: dict[str, Determiner] = {
    "the": Determiner("the", "the", "d", "d", "definite"),
    "a": Determiner("a", "", "ein", "", "ein"),  # plural: bare noun, strong adjective
    "this": Determiner("this", "these", "dies", "dies", "der"),
    "every": Determiner("every", None, "jed", None, "der"),
    "my": Determiner("my", "my", "mein", "mein", "ein"),
    "our": Determiner("our", "our", "unser", "unser", "ein"),
    "his": Determiner("his", "his", "sein", "sein", "ein"),
    "two": Determiner(None, "two", None, "zwei", "number"),
}
NAMES = ("Anna", "Paul", "Lena", "Tom", "Lisa", "Max")
PRONOUNS = {"I": ("ich", "1sg"), "we": ("wir", "pl")}  # subject pronouns only
TIMES = {
    "today": "heute", "tomorrow": "morgen", "now": "jetzt", "every day": "jeden Tag",
    "in the morning": "am Morgen", "in the evening": "am Abend", "on Sunday": "am Sonntag",
    "at night": "in der Nacht",
}  # fmt: skip
CONJUNCTIONS = {"that": "dass", "because": "weil", "while": "während", "when": "wenn"}

# Declension by case, then by slot (masculine, feminine, neuter, plural).
_DEFINITE = {"nom": ("der", "die", "das", "die"), "acc": ("den", "die", "das", "die"),
             "dat": ("dem", "der", "dem", "den")}  # fmt: skip
_STRONG = {"nom": ("er", "e", "es", "e"), "acc": ("en", "e", "es", "e"),
           "dat": ("em", "er", "em", "en")}  # fmt: skip
_WEAK = {"nom": ("e", "e", "e", "en"), "acc": ("en", "e", "e", "en"),
         "dat": ("en", "en", "en", "en")}  # fmt: skip
_EIN_WITHOUT_ENDING = {("nom", 0), ("nom", 2), ("acc", 2)}  # ein, mein, unser: no ending
_CONTRACTIONS = {("in", "dem"): "im", ("an", "dem"): "am"}
# Grammatical but odd combinations the sampler avoids ("my man"); places also avoid "every".
_ODD_DETERMINERS = {"man": ("my", "our", "his"), "woman": ("my", "our", "his")}
MAX_PAIRS = 5_000_000  # conservative cap: the grammar has >10^12 distinct simple clauses alone
_MIN_WORDS, _MAX_WORDS = 4, 20


class NP(NamedTuple):
    """A noun phrase: a `Noun` with determiner, optional adjective and number, or a name
    (`"Anna"`) or subject pronoun (`"I"`, `"we"`) as `head`."""

    head: Noun | str
    det: str = "the"
    adj: str | None = None
    plural: bool = False


class Clause(NamedTuple):
    """One clause. `pp` is a place (locative) or a person/animal (`with`); `time` is a
    key of `TIMES`, said last in English and in the German middle field."""

    subj: NP
    verb: Verb
    obj: NP | None = None
    pp: NP | None = None
    modal: Verb | None = None
    time: str | None = None


class Sentence(NamedTuple):
    """A sentence: `main`, optionally with a fronted time adverbial (German verb-second),
    as a yes/no question, or joined to `sub` by a key of `CONJUNCTIONS` (`"when"` puts
    the subordinate clause first; the others after `main`)."""

    main: Clause
    front: str | None = None
    question: bool = False
    conj: str | None = None
    sub: Clause | None = None


def _person(np: NP) -> str:
    if np.head in PRONOUNS:
        return PRONOUNS[np.head][1]
    return "pl" if np.plural else "3sg"


def _en_np(np: NP) -> str:
    if isinstance(np.head, str):
        return np.head
    words = [w for w in (np.adj, np.head.en_pl if np.plural else np.head.en) if w]
    det = DETERMINERS[np.det]
    article = det.en_pl if np.plural else det.en
    if article == "a" and words[0][0] in "aeiou":
        article = "an"
    return " ".join([article, *words] if article else words)


def _de_determiner(det: Determiner, case: str, slot: int) -> tuple[str, bool]:
    """The German determiner and whether it carries an inflectional ending."""
    if det.kind == "definite":
        return _DEFINITE[case][slot], True
    stem = det.de_pl if slot == 3 else det.de
    if det.kind == "number" or not stem:
        return stem or "", False
    if det.kind == "ein" and (case, slot) in _EIN_WITHOUT_ENDING:
        return stem, False
    return stem + _STRONG[case][slot], True


def _de_adjective(base: str, ending: str) -> str:
    return base + ending[1:] if base.endswith("e") and ending.startswith("e") else base + ending


def _de_noun(noun: Noun, case: str, plural: bool) -> str:
    if plural:  # dative plural adds -n unless the plural already ends in -n or -s
        return noun.de_pl + ("n" if case == "dat" and noun.de_pl[-1] not in "ns" else "")
    return noun.de_oblique if case != "nom" and noun.de_oblique else noun.de


def _de_np(np: NP, case: str) -> str:
    if isinstance(np.head, str):
        return PRONOUNS[np.head][0] if np.head in PRONOUNS else np.head
    slot = 3 if np.plural else "mfn".index(np.head.gender)
    article, inflected = _de_determiner(DETERMINERS[np.det], case, slot)
    words = [article] if article else []
    if np.adj:  # strong ending unless the determiner already shows case and gender
        ending = (_WEAK if inflected else _STRONG)[case][slot]
        words.append(_de_adjective(ADJECTIVES[np.adj][0], ending))
    words.append(_de_noun(np.head, case, np.plural))
    return " ".join(words)


def _pp(np: NP) -> tuple[str, str]:
    """English and German prepositional phrase: locative for places, else `with`/`mit`."""
    is_place = isinstance(np.head, Noun) and np.head.kinds == "L"
    en_prep, de_prep = np.head.prep if is_place else ("with", "mit")
    de_np = _de_np(np, "dat")
    article, _, rest = de_np.partition(" ")
    if (de_prep, article) in _CONTRACTIONS:  # in dem Park -> im Park
        return f"{en_prep} {_en_np(np)}", f"{_CONTRACTIONS[de_prep, article]} {rest}"
    return f"{en_prep} {_en_np(np)}", f"{de_prep} {de_np}"


def _en_clause(c: Clause, question: bool = False) -> str:
    third = _person(c.subj) == "3sg"
    verbs = [c.modal.en, c.verb.en] if c.modal else [c.verb.en]
    head = []
    if question and c.modal and c.modal.en in _ENGLISH_AUXILIARIES:
        head = [verbs.pop(0)]
    elif question:
        head = ["does" if third else "do"]
    elif third:
        verbs[0] = (c.modal or c.verb).en_3sg
    words = [*head, _en_np(c.subj), *verbs]
    words += [_en_np(c.obj)] if c.obj else []
    words += [_pp(c.pp)[0]] if c.pp else []
    return " ".join(words + ([c.time] if c.time else []))


def _de_finite(verb: Verb, person: str) -> str:
    return {"1sg": verb.de_1sg, "3sg": verb.de_3sg, "pl": verb.de}[person]


def _de_clause(c: Clause, order: str = "main") -> str:
    """German clause; `order` is "main" (S V ...), "inverted" (V S ..., after a fronted
    phrase or in a question) or "sub" (verb-final)."""
    finite = _de_finite(c.modal or c.verb, _person(c.subj))
    end = [c.verb.prefix + c.verb.de] if c.modal else [c.verb.prefix] if c.verb.prefix else []
    middle = [TIMES[c.time]] if c.time else []
    middle += [_de_np(c.obj, c.verb.case)] if c.obj else []
    middle += [_pp(c.pp)[1]] if c.pp else []
    subj = _de_np(c.subj, "nom")
    if order == "sub":
        verbs = [*end, finite] if c.modal else [c.verb.prefix + finite]
        return " ".join([subj, *middle, *verbs])
    first = [finite, subj] if order == "inverted" else [subj, finite]
    return " ".join(first + middle + end)


def _finish(text: str, mark: str) -> str:
    return text[0].upper() + text[1:] + mark


def render(sentence: Sentence) -> tuple[str, str]:
    """Renders one sentence structure in English and German.

    Args:
        sentence: the `Sentence` to render.

    Returns:
        The `(english, german)` pair, true-cased, with final punctuation.

    Example:

    >>> s = Sentence(Clause(NP(NOUNS["dog"]), VERBS["play"], pp=NP(NOUNS["park"])), "today")
    >>> render(s)
    ('Today the dog plays in the park.', 'Heute spielt der Hund im Park.')
    """
    main, sub = sentence.main, sentence.sub
    mark = "?" if sentence.question else "."
    if sentence.question:
        en, de = _en_clause(main, question=True), _de_clause(main, "inverted")
    elif sentence.front:
        en = f"{sentence.front} {_en_clause(main)}"
        de = f"{TIMES[sentence.front]} {_de_clause(main, 'inverted')}"
    elif sentence.conj == "when":
        en = f"when {_en_clause(sub)}, {_en_clause(main)}"
        de = f"wenn {_de_clause(sub, 'sub')}, {_de_clause(main, 'inverted')}"
    else:
        en, de = _en_clause(main), _de_clause(main)
        if sentence.conj:
            en += f" {sentence.conj} {_en_clause(sub)}"
            de += f", {CONJUNCTIONS[sentence.conj]} {_de_clause(sub, 'sub')}"
    return _finish(en, mark), _finish(de, mark)


@functools.cache
def _nouns_of(kinds: str) -> tuple[Noun, ...]:
    return tuple(n for n in NOUNS.values() if set(n.kinds) & set(kinds))


def _sample_np(rng: random.Random, kinds: str, exclude=(), names=0.1, pronouns=0.0) -> NP:
    r = rng.random()
    if r < pronouns:
        return NP(rng.choice(tuple(PRONOUNS)))
    if "P" in kinds and r < pronouns + names:
        return NP(rng.choice([name for name in NAMES if name not in exclude]))
    noun = rng.choice([n for n in _nouns_of(kinds) if n not in exclude])
    plural = noun.kinds != "L" and rng.random() < 0.3
    odd = _ODD_DETERMINERS.get(noun.en, ("every",) if noun.kinds == "L" else ())
    dets = [k for k, d in DETERMINERS.items() if (d.en_pl if plural else d.en) is not None]
    dets = [k for k in dets if k not in odd]
    adjs = [a for a, (_, k) in ADJECTIVES.items() if set(k) & set(noun.kinds)]
    adj = rng.choice(adjs) if rng.random() < 0.35 else None
    return NP(noun, rng.choice(dets), adj, plural)


def _sample_clause(rng: random.Random, time=0.15, pronouns=0.1) -> Clause:
    verb = rng.choice(tuple(VERBS.values()))
    subj = _sample_np(rng, verb.subject, pronouns=pronouns)
    obj = _sample_np(rng, verb.object, exclude=(subj.head,)) if verb.object else None
    r, pp = rng.random(), None
    if r < 0.35:
        pp = _sample_np(rng, "L", names=0)
    elif r < 0.5 and verb.prefix != "mit":  # no "bringt ... mit dem Hund mit"
        pp = _sample_np(rng, "PA", exclude=(subj.head, obj and obj.head))
    modal = rng.choice(tuple(MODALS.values())) if rng.random() < 0.25 else None
    when = rng.choice(tuple(TIMES)) if rng.random() < time else None
    return Clause(subj, verb, obj, pp, modal, when)


def sample_sentence(rng: random.Random) -> Sentence:
    """Draws one random sentence structure from the grammar.

    Args:
        rng: the `random.Random` to draw from.

    Returns:
        A `Sentence`; `render` turns it into an English/German pair.
    """
    r = rng.random()
    if r < 0.4:
        return Sentence(_sample_clause(rng))
    if r < 0.55:
        return Sentence(_sample_clause(rng, time=0), front=rng.choice(tuple(TIMES)))
    if r < 0.65:
        return Sentence(_sample_clause(rng, pronouns=0), question=True)
    if r < 0.8:
        subj = _sample_np(rng, "P", pronouns=0.1)
        matrix = Clause(subj, rng.choice(tuple(MATRIX_VERBS.values())))
        return Sentence(matrix, conj="that", sub=_sample_clause(rng))
    conj = rng.choice(("because", "while", "when"))
    return Sentence(_sample_clause(rng), conj=conj, sub=_sample_clause(rng))


def generate_pairs(num_pairs: int, seed: int = 0) -> list[tuple[str, str]]:
    """Generates distinct English/German sentence pairs from the grammar.

    Generation is prefix-stable: the first `k` pairs for a seed do not depend on
    `num_pairs`. No English sentence occurs twice (so neither does a pair).

    Args:
        num_pairs: how many pairs, between 1 and `MAX_PAIRS`.
        seed: seed of the random draw; the same seed gives the same pairs.

    Returns:
        A list of `(english, german)` tuples, each sentence 4 to 20 words long.

    Raises:
        ValueError: if `num_pairs` is not positive or more than the grammar can produce.

    Example:

    >>> pairs = generate_pairs(3, seed=0)
    >>> len(pairs), len({en for en, _ in pairs})
    (3, 3)
    """
    if not 0 < num_pairs <= MAX_PAIRS:
        raise ValueError(f"num_pairs must be between 1 and {MAX_PAIRS}, got {num_pairs}.")
    rng = random.Random(seed)
    pairs: dict[str, str] = {}
    for _ in range(1000 + 50 * num_pairs):
        en, de = render(sample_sentence(rng))
        lengths = (len(en.split()), len(de.split()))
        if en not in pairs and all(_MIN_WORDS <= n <= _MAX_WORDS for n in lengths):
            pairs[en] = de
            if len(pairs) == num_pairs:
                return list(pairs.items())
    raise ValueError(f"The grammar cannot produce num_pairs={num_pairs} distinct pairs.")


def generated_splits(
    num_train: int = 20000, num_val: int = 500, num_test: int = 500, seed: int = 0
) -> dict[str, list[tuple[str, str]]]:
    """Disjoint train/validation/test splits of the generated corpus.

    Test pairs are drawn first, then validation, then training pairs, so the test and
    validation sets for a seed do not change with `num_train`.

    Args:
        num_train: number of training pairs.
        num_val: number of validation pairs.
        num_test: number of test pairs.
        seed: seed of the random draw.

    Returns:
        A dict with keys `"train"`, `"val"` and `"test"`; no English sentence is in two splits.

    Example:

    >>> splits = generated_splits(num_train=100, num_val=10, num_test=10)
    >>> {name: len(pairs) for name, pairs in splits.items()}
    {'train': 100, 'val': 10, 'test': 10}
    """
    if min(num_train, num_val, num_test) < 0:
        raise ValueError("num_train, num_val and num_test must not be negative.")
    pairs = generate_pairs(num_train + num_val + num_test, seed)
    return {
        "train": pairs[num_test + num_val :],
        "val": pairs[num_test : num_test + num_val],
        "test": pairs[:num_test],
    }


def _write_lines_atomically(path: Path, lines: list[str]) -> None:
    write_bytes_atomically(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def write_corpus(
    directory: str | os.PathLike,
    num_train: int = 20000,
    num_val: int = 500,
    num_test: int = 500,
    seed: int = 0,
    splits: tuple[str, ...] = ("train", "val", "test"),
) -> dict[str, tuple[Path, Path]]:
    """Writes the generated splits as `{split}.en` / `{split}.de` files (Multi30k layout).

    Each file is UTF-8 with one sentence per line, written to a temporary file in
    `directory` and moved into place with `os.replace`, so readers never see a partial file.

    Args:
        directory: folder to write to; created if missing.
        num_train: number of training pairs.
        num_val: number of validation pairs.
        num_test: number of test pairs.
        seed: seed of the random draw.
        splits: the splits written (e.g. `("val", "test")` beside streamed training shards).

    Returns:
        A dict from split name (`"train"`, `"val"`, `"test"`) to `(english_path, german_path)`.

    Example:

    >>> paths = write_corpus("corpus", num_train=1000)
    >>> paths["train"][0].name
    'train.en'
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, pairs in generated_splits(num_train, num_val, num_test, seed).items():
        if split not in splits:
            continue
        paths[split] = (directory / f"{split}.en", directory / f"{split}.de")
        _write_lines_atomically(paths[split][0], [en for en, _ in pairs])
        _write_lines_atomically(paths[split][1], [de for _, de in pairs])
    return paths

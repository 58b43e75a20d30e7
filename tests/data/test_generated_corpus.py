"""The synthetic English→German corpus: grammar (hand-checked German), sampling and files.

Expected translations below are written by hand from German grammar, not copied from the
generator's output.
"""

import os
import random
import re
import string

import pytest

from keras_attention.data import generated_corpus as gc
from keras_attention.data.generated_corpus import (
    MATRIX_VERBS,
    MODALS,
    NOUNS,
    NP,
    TIMES,
    VERBS,
    Clause,
    Sentence,
    generate_pairs,
    generated_splits,
    render,
    write_corpus,
)

M = MODALS


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Overrides the suite's Keras reset: these pure-Python tests never touch Keras."""
    yield


SAY = MATRIX_VERBS


def noun(word: str, det: str = "the", adj: str | None = None, plural: bool = False) -> NP:
    return NP(NOUNS[word], det, adj, plural)


def clause(subj: NP, verb: str, obj: NP | None = None, **kwargs) -> Clause:
    return Clause(subj, VERBS[verb], obj, **kwargs)


WOMAN, MAN, BOY = noun("woman"), noun("man"), noun("boy")
APPLE = noun("apple", "a")
READS_BOOK = clause(noun("woman"), "read", noun("book", "a"))
ANNA, ME, WE = NP("Anna"), NP("I"), NP("we")

# ---------------------------------------------------------------------------------------------
# Noun phrases: gender, number, case, determiner types and adjective declension.

NOMINATIVE = [  # subject of "sleep"
    (noun("dog", "the", "big"), "The big dog sleeps.", "Der große Hund schläft."),
    (noun("dog", "a", "big"), "A big dog sleeps.", "Ein großer Hund schläft."),
    (noun("cat", "a", "small"), "A small cat sleeps.", "Eine kleine Katze schläft."),
    (noun("horse", "a", "old"), "An old horse sleeps.", "Ein altes Pferd schläft."),
    (noun("horse", "the", "old"), "The old horse sleeps.", "Das alte Pferd schläft."),
    (noun("child", "this", "tired"), "This tired child sleeps.", "Dieses müde Kind schläft."),
    (noun("child", "our", "happy"), "Our happy child sleeps.", "Unser glückliches Kind schläft."),
    (noun("cat", "every", "hungry"), "Every hungry cat sleeps.", "Jede hungrige Katze schläft."),
    (noun("dog", "the", "big", True), "The big dogs sleep.", "Die großen Hunde schlafen."),
    (noun("dog", "a", "big", True), "Big dogs sleep.", "Große Hunde schlafen."),
    (noun("cat", "two", "tired", True), "Two tired cats sleep.", "Zwei müde Katzen schlafen."),
    (noun("friend", "my", "old", True), "My old friends sleep.", "Meine alten Freunde schlafen."),
    (noun("mouse", "this", None, True), "These mice sleep.", "Diese Mäuse schlafen."),
    (ANNA, "Anna sleeps.", "Anna schläft."),
    (ME, "I sleep.", "Ich schlafe."),
    (WE, "We sleep.", "Wir schlafen."),
]

ACCUSATIVE = [  # object of "the woman sees ..."
    (noun("dog", "the", "big"), "the big dog", "den großen Hund"),
    (noun("dog", "a", "big"), "a big dog", "einen großen Hund"),
    (noun("cat", "the", "small"), "the small cat", "die kleine Katze"),
    (noun("cat", "a", "small"), "a small cat", "eine kleine Katze"),
    (noun("car", "the", "red"), "the red car", "das rote Auto"),
    (noun("car", "a", "red"), "a red car", "ein rotes Auto"),
    (noun("bicycle", "his", "new"), "his new bicycle", "sein neues Fahrrad"),
    (noun("brother", "our", "tired"), "our tired brother", "unseren müden Bruder"),
    (noun("mouse", "my", "white"), "my white mouse", "meine weiße Maus"),
    (noun("friend", "my", "old", True), "my old friends", "meine alten Freunde"),
    (noun("horse", "two", "white", True), "two white horses", "zwei weiße Pferde"),
    (noun("dog", "this", "black", True), "these black dogs", "diese schwarzen Hunde"),
    (noun("apple", "a", "green", True), "green apples", "grüne Äpfel"),
    (noun("boy"), "the boy", "den Jungen"),  # weak masculine noun
    (noun("student", "a"), "a student", "einen Studenten"),
    (noun("letter", "every", "long"), "every long letter", "jeden langen Brief"),
]

DATIVE = [  # "the boy plays with ..."
    (noun("dog"), "with the dog", "mit dem Hund"),
    (noun("cat", "a", "small"), "with a small cat", "mit einer kleinen Katze"),
    (noun("horse", "this", "old"), "with this old horse", "mit diesem alten Pferd"),
    (noun("friend", "my", None, True), "with my friends", "mit meinen Freunden"),
    (noun("dog", "two", "small", True), "with two small dogs", "mit zwei kleinen Hunden"),
    (noun("child", "a", "happy", True), "with happy children", "mit glücklichen Kindern"),
    (noun("bird", "the", "big", True), "with the big birds", "mit den großen Vögeln"),
    (noun("girl", "a", None, True), "with girls", "mit Mädchen"),
    (noun("boy", "a"), "with a boy", "mit einem Jungen"),
    (noun("grandmother", "his"), "with his grandmother", "mit seiner Großmutter"),
    (ANNA, "with Anna", "mit Anna"),
    (noun("park"), "in the park", "im Park"),
    (noun("park", "the", "big"), "in the big park", "im großen Park"),
    (noun("kitchen"), "in the kitchen", "in der Küche"),
    (noun("house", "this", "big"), "in this big house", "in diesem großen Haus"),
    (noun("garden", "a", "small"), "in a small garden", "in einem kleinen Garten"),
    (noun("city", "my"), "in my city", "in meiner Stadt"),
    (noun("street"), "on the street", "auf der Straße"),
    (noun("beach"), "on the beach", "am Strand"),
    (noun("lake", "a"), "at a lake", "an einem See"),
]


@pytest.mark.parametrize(("subj", "en", "de"), NOMINATIVE)
def test_nominative_subjects_and_agreement(subj, en, de):
    assert render(Sentence(clause(subj, "sleep"))) == (en, de)


@pytest.mark.parametrize(("obj", "en", "de"), ACCUSATIVE)
def test_accusative_objects(obj, en, de):
    sentence = Sentence(clause(WOMAN, "see", obj))
    assert render(sentence) == (f"The woman sees {en}.", f"Die Frau sieht {de}.")


@pytest.mark.parametrize(("np", "en", "de"), DATIVE)
def test_dative_prepositional_phrases(np, en, de):
    sentence = Sentence(clause(BOY, "play", pp=np))
    assert render(sentence) == (f"The boy plays {en}.", f"Der Junge spielt {de}.")


@pytest.mark.parametrize(
    ("sentence", "en", "de"),
    [
        (
            Sentence(clause(WOMAN, "help", noun("man", "the", "old"))),
            "The woman helps the old man.",
            "Die Frau hilft dem alten Mann.",
        ),
        (
            Sentence(clause(noun("dog"), "follow", noun("child", "the", None, True))),
            "The dog follows the children.",
            "Der Hund folgt den Kindern.",
        ),
    ],
)
def test_dative_objects(sentence, en, de):
    assert render(sentence) == (en, de)


# ---------------------------------------------------------------------------------------------
# Verb agreement, separable and modal verbs, word order.

CONSTRUCTIONS = [
    (Sentence(READS_BOOK), "The woman reads a book.", "Die Frau liest ein Buch."),
    (Sentence(clause(ME, "eat", APPLE)), "I eat an apple.", "Ich esse einen Apfel."),
    (
        Sentence(clause(ANNA, "eat", noun("cake", "a"))),
        "Anna eats a cake.",
        "Anna isst einen Kuchen.",
    ),
    (
        Sentence(clause(noun("dog", plural=True), "eat", noun("egg", "a"))),
        "The dogs eat an egg.",
        "Die Hunde essen ein Ei.",
    ),
    (
        Sentence(clause(WE, "read", noun("letter", "a"))),
        "We read a letter.",
        "Wir lesen einen Brief.",
    ),
    (
        Sentence(clause(WOMAN, "carry", noun("bag", "a"))),
        "The woman carries a bag.",
        "Die Frau trägt eine Tasche.",
    ),
    # separable verbs: the prefix goes to the end of the main clause
    (
        Sentence(clause(noun("girl"), "call", BOY)),
        "The girl calls the boy.",
        "Das Mädchen ruft den Jungen an.",
    ),
    (
        Sentence(clause(ME, "open", noun("door"), pp=noun("kitchen"))),
        "I open the door in the kitchen.",
        "Ich mache die Tür in der Küche auf.",
    ),
    (Sentence(clause(MAN, "get up")), "The man gets up.", "Der Mann steht auf."),
    # modal verbs: the infinitive goes to the end
    (
        Sentence(clause(BOY, "eat", APPLE, modal=M["want to"])),
        "The boy wants to eat an apple.",
        "Der Junge will einen Apfel essen.",
    ),
    (
        Sentence(clause(MAN, "call", WOMAN, modal=M["can"])),
        "The man can call the woman.",
        "Der Mann kann die Frau anrufen.",
    ),
    (
        Sentence(clause(noun("child", plural=True), "get up", modal=M["must"])),
        "The children must get up.",
        "Die Kinder müssen aufstehen.",
    ),
    (
        Sentence(clause(WE, "go shopping", modal=M["want to"])),
        "We want to go shopping.",
        "Wir wollen einkaufen.",
    ),
    (Sentence(clause(ME, "work", modal=M["must"])), "I must work.", "Ich muss arbeiten."),
    # a final English time adverbial goes into the German middle field
    (
        Sentence(clause(noun("dog"), "play", pp=noun("park"), time="today")),
        "The dog plays in the park today.",
        "Der Hund spielt heute im Park.",
    ),
    (
        Sentence(clause(BOY, "eat", APPLE, modal=M["want to"], time="in the evening")),
        "The boy wants to eat an apple in the evening.",
        "Der Junge will am Abend einen Apfel essen.",
    ),
]


@pytest.mark.parametrize(("sentence", "en", "de"), CONSTRUCTIONS)
def test_verbs_agreement_separable_and_modal(sentence, en, de):
    assert render(sentence) == (en, de)


VERB_SECOND = [
    (
        Sentence(clause(noun("dog"), "play", pp=noun("park")), front="today"),
        "Today the dog plays in the park.",
        "Heute spielt der Hund im Park.",
    ),
    (
        Sentence(clause(ME, "read", noun("book", "a")), front="every day"),
        "Every day I read a book.",
        "Jeden Tag lese ich ein Buch.",
    ),
    (
        Sentence(clause(BOY, "eat", APPLE, modal=M["want to"]), front="in the evening"),
        "In the evening the boy wants to eat an apple.",
        "Am Abend will der Junge einen Apfel essen.",
    ),
    (
        Sentence(clause(ANNA, "call", noun("doctor")), front="now"),
        "Now Anna calls the doctor.",
        "Jetzt ruft Anna den Arzt an.",
    ),
    (  # a fronted subordinate clause also puts the main verb second
        Sentence(
            clause(BOY, "read", noun("book", "a")), conj="when", sub=clause(noun("dog"), "sleep")
        ),
        "When the dog sleeps, the boy reads a book.",
        "Wenn der Hund schläft, liest der Junge ein Buch.",
    ),
]


@pytest.mark.parametrize(("sentence", "en", "de"), VERB_SECOND)
def test_verb_second_after_fronted_adverbial(sentence, en, de):
    assert render(sentence) == (en, de)


VERB_FINAL = [
    (
        Sentence(Clause(MAN, SAY["say"]), conj="that", sub=READS_BOOK),
        "The man says that the woman reads a book.",
        "Der Mann sagt, dass die Frau ein Buch liest.",
    ),
    (
        Sentence(Clause(ANNA, SAY["know"]), conj="that", sub=clause(MAN, "call", WOMAN)),
        "Anna knows that the man calls the woman.",
        "Anna weiß, dass der Mann die Frau anruft.",
    ),
    (
        Sentence(Clause(ME, SAY["know"]), conj="that", sub=clause(ANNA, "work")),
        "I know that Anna works.",
        "Ich weiß, dass Anna arbeitet.",
    ),
    (
        Sentence(
            Clause(ME, SAY["believe"]),
            conj="that",
            sub=clause(BOY, "eat", APPLE, modal=M["want to"]),
        ),
        "I believe that the boy wants to eat an apple.",
        "Ich glaube, dass der Junge einen Apfel essen will.",
    ),
    (
        Sentence(
            Clause(WE, SAY["hope"]),
            conj="that",
            sub=clause(noun("child", plural=True), "get up", time="today"),
        ),
        "We hope that the children get up today.",
        "Wir hoffen, dass die Kinder heute aufstehen.",
    ),
    (
        Sentence(
            clause(noun("dog"), "sleep"), conj="because", sub=clause(MAN, "read", noun("book", "a"))
        ),
        "The dog sleeps because the man reads a book.",
        "Der Hund schläft, weil der Mann ein Buch liest.",
    ),
    (
        Sentence(
            clause(noun("girl"), "sing"),
            conj="while",
            sub=clause(noun("boy", plural=True), "play", pp=noun("garden")),
        ),
        "The girl sings while the boys play in the garden.",
        "Das Mädchen singt, während die Jungen im Garten spielen.",
    ),
]


@pytest.mark.parametrize(("sentence", "en", "de"), VERB_FINAL)
def test_verb_final_subordinate_clauses(sentence, en, de):
    assert render(sentence) == (en, de)


QUESTIONS = [
    (clause(MAN, "call", WOMAN), "Does the man call the woman?", "Ruft der Mann die Frau an?"),
    (
        clause(BOY, "eat", APPLE, modal=M["can"]),
        "Can the boy eat an apple?",
        "Kann der Junge einen Apfel essen?",
    ),
    (
        clause(noun("child", plural=True), "swim", modal=M["want to"]),
        "Do the children want to swim?",
        "Wollen die Kinder schwimmen?",
    ),
    (
        clause(noun("cat"), "eat", noun("banana", "a")),
        "Does the cat eat a banana?",
        "Isst die Katze eine Banane?",
    ),
]


@pytest.mark.parametrize(("main", "en", "de"), QUESTIONS)
def test_questions_put_the_verb_first(main, en, de):
    assert render(Sentence(main, question=True)) == (en, de)


# ---------------------------------------------------------------------------------------------
# The sampled corpus.

ALL_VERBS = [*VERBS.values(), *MATRIX_VERBS.values(), *MODALS.values()]
FINITE = {form for v in ALL_VERBS for form in (v.de_1sg, v.de_3sg, v.de)}
FINITE |= {v.prefix + form for v in VERBS.values() for form in (v.de_1sg, v.de_3sg, v.de)}
MODAL_FINITE = {form for v in MODALS.values() for form in (v.de_1sg, v.de_3sg, v.de)}


def words(text: str) -> list[str]:
    return text.rstrip(".?").replace(",", "").split()


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, str]]:
    return generate_pairs(5000, seed=1)


def test_pairs_are_well_formed(corpus):
    assert len(corpus) == 5000
    for en, de in corpus:
        for text in (en, de):
            assert 4 <= len(text.split()) <= 20, text
            assert text[0].isupper() and text[-1] in ".?" and text[-2] not in " .?", text
            assert "  " not in text and text == text.strip(), text
        assert en[-1] == de[-1], (en, de)


def test_no_duplicates_and_enough_variety():
    pairs = generate_pairs(30000, seed=5)
    assert len(set(pairs)) == len({en for en, _ in pairs}) == 30000


def test_english_determines_german():
    """Dedupe by source sentence is safe only if the grammar never gives one English
    sentence two German translations."""
    rng, translations = random.Random(0), {}
    for _ in range(20000):
        en, de = render(gc.sample_sentence(rng))
        translations.setdefault(en, set()).add(de)
    assert all(len(des) == 1 for des in translations.values())
    assert len(translations) > 19000  # and the sampler rarely repeats itself


def test_corpus_covers_every_construction(corpus):
    german = "\n".join(de for _, de in corpus)
    for marker in [", dass ", ", weil ", ", während ", "\nWenn ", "?", " im ", " am ", "ß", "ä"]:
        assert marker in german, marker
    starts = {de.split()[0] for _, de in corpus}
    assert {"Heute", "Jetzt", "Morgen", "Jeden", "Am", "In"} <= starts
    english = " ".join(en for en, _ in corpus).split()
    assert {"can", "must", "want", "wants"} <= set(english)


def test_subordinate_clauses_are_verb_final(corpus):
    checked = 0
    for en, de in corpus:
        match = re.search(r", (dass|weil|während) (.*)$", de)
        if match:
            checked += 1
            last = words(match.group(2))[-1]
            assert last in FINITE, de
            sub_en = re.split(r" (?:that|because|while) ", en, maxsplit=1)[1]
            has_modal = re.search(r"\b(can|must|wants? to)\b", sub_en)
            assert (last in MODAL_FINITE) == bool(has_modal), (en, de)
        if de.startswith("Wenn "):
            checked += 1
            sub, main = de.split(", ", 1)
            assert words(sub)[-1] in FINITE and words(main)[0] in FINITE, de
    assert checked > 500


def test_verb_second_after_fronted_time_adverbial(corpus):
    fronted = {en[0].upper() + en[1:]: de[0].upper() + de[1:] for en, de in TIMES.items()}
    checked = 0
    for en, de in corpus:
        for en_time, de_time in fronted.items():
            if en.startswith(en_time + " ") and not en.endswith("?"):
                checked += 1
                assert de.startswith(de_time + " "), (en, de)
                assert de[len(de_time) :].split()[0] in FINITE, (en, de)
    assert checked > 300


def test_vocabulary_is_small(corpus):
    content_words = len(NOUNS) + len(gc.ADJECTIVES) + len(ALL_VERBS) + len(gc.NAMES)
    assert 60 <= content_words <= 150
    strip = str.maketrans("", "", string.punctuation)
    for side in (0, 1):
        types = {w.lower().translate(strip) for pair in corpus for w in pair[side].split()}
        assert len(types) < 400, side


# ---------------------------------------------------------------------------------------------
# Determinism, splits and errors.


def test_deterministic_for_a_seed_and_prefix_stable():
    assert generate_pairs(300, seed=3) == generate_pairs(300, seed=3)
    assert generate_pairs(300, seed=3) != generate_pairs(300, seed=4)
    assert generate_pairs(100, seed=3) == generate_pairs(300, seed=3)[:100]


def test_splits_have_the_right_sizes_and_are_disjoint():
    splits = generated_splits(num_train=2000, num_val=150, num_test=100, seed=2)
    assert list(splits) == ["train", "val", "test"]
    assert [len(pairs) for pairs in splits.values()] == [2000, 150, 100]
    sources = [{en for en, _ in pairs} for pairs in splits.values()]
    assert sum(map(len, sources)) == len(set.union(*sources)) == 2250


def test_test_and_val_do_not_depend_on_num_train():
    small = generated_splits(num_train=100, num_val=50, num_test=50, seed=7)
    large = generated_splits(num_train=900, num_val=50, num_test=50, seed=7)
    assert small["test"] == large["test"] and small["val"] == large["val"]
    assert small["train"] == large["train"][:100]


@pytest.mark.parametrize("num_pairs", [0, -3, gc.MAX_PAIRS + 1])
def test_impossible_num_pairs_raises(num_pairs):
    with pytest.raises(ValueError, match="num_pairs"):
        generate_pairs(num_pairs)


def test_raises_when_the_grammar_runs_out(monkeypatch):
    only = Sentence(READS_BOOK)
    monkeypatch.setattr(gc, "sample_sentence", lambda rng: only)
    assert generate_pairs(1) == [render(only)]
    with pytest.raises(ValueError, match="num_pairs"):
        generate_pairs(2)


def test_negative_split_size_raises():
    with pytest.raises(ValueError, match="num_val"):
        generated_splits(num_train=10, num_val=-1)


# ---------------------------------------------------------------------------------------------
# Files.

SIZES = {"train": 400, "val": 30, "test": 20}


def test_write_corpus_files(tmp_path):
    directory = tmp_path / "new" / "corpus"
    paths = write_corpus(directory, num_train=400, num_val=30, num_test=20, seed=9)
    splits = generated_splits(num_train=400, num_val=30, num_test=20, seed=9)
    assert sorted(os.listdir(directory)) == sorted(
        f"{split}.{lang}" for split in SIZES for lang in ("en", "de")
    )
    for split, (en_path, de_path) in paths.items():
        assert (en_path.name, de_path.name) == (f"{split}.en", f"{split}.de")
        for path, side in ((en_path, 0), (de_path, 1)):
            raw = path.read_bytes()
            assert b"\r" not in raw and raw.endswith(b"\n")
            lines = raw.decode("utf-8").split("\n")[:-1]
            assert len(lines) == SIZES[split]
            assert lines == [pair[side] for pair in splits[split]]
    german = paths["train"][1].read_text(encoding="utf-8")
    assert "ß" in german and any(ch in german for ch in "äöü")


def test_write_corpus_goes_through_a_temp_file(tmp_path, monkeypatch):
    real_replace, moves = os.replace, []

    def spy(src, dst):
        src, dst = os.fspath(src), os.fspath(dst)
        assert os.path.dirname(src) == os.path.dirname(dst) and src != dst
        assert not os.path.exists(dst)  # the final file appears only through os.replace
        with open(src, encoding="utf-8") as f:
            moves.append((os.path.basename(dst), len(f.readlines())))
        real_replace(src, dst)

    monkeypatch.setattr(gc.os, "replace", spy)
    write_corpus(tmp_path, num_train=40, num_val=5, num_test=3)
    expected = {"train": 40, "val": 5, "test": 3}
    assert sorted(moves) == sorted(
        (f"{s}.{lang}", n) for s, n in expected.items() for lang in ("en", "de")
    )
    assert len(os.listdir(tmp_path)) == 6


def test_failed_write_keeps_old_file_and_leaves_no_temp_files(tmp_path, monkeypatch):
    (tmp_path / "train.en").write_text("old\n", encoding="utf-8")

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(gc.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_corpus(tmp_path, num_train=20, num_val=2, num_test=2)
    assert os.listdir(tmp_path) == ["train.en"]
    assert (tmp_path / "train.en").read_text(encoding="utf-8") == "old\n"

"""Validation and test splits held out of the training pairs when a user gives none, and the
removal from training of the pairs whose source is in a validation or test split.

The share is `HELD_OUT_SHARE` of the training pairs for each held-out split, at least
`HELD_OUT_MIN` and at most `HELD_OUT_MAX` pairs (the held-out pairs are drawn with a seeded
generator, so the same corpus and seed give the same split on every run). A corpus of fewer
than `MIN_PAIRS_TO_HOLD_OUT` pairs is refused: give `--valid` and `--test` instead.
"""

import random
from collections.abc import Iterable, Sequence

HELD_OUT_SHARE = 0.05
HELD_OUT_MIN = 1
HELD_OUT_MAX = 3000
MIN_PAIRS_TO_HOLD_OUT = 20


def held_out_size(num_pairs: int) -> int:
    """Pairs in one held-out split of a corpus of `num_pairs` pairs: 5%, at least 1, at most
    3,000.

    Example:

    >>> held_out_size(200), held_out_size(29000), held_out_size(4_500_000)
    (10, 1450, 3000)
    """
    return max(HELD_OUT_MIN, min(HELD_OUT_MAX, round(HELD_OUT_SHARE * num_pairs)))


def _check_enough(num_pairs: int, names: Sequence[str]) -> None:
    if num_pairs < MIN_PAIRS_TO_HOLD_OUT:
        flags = " and ".join(f"--{'valid' if name == 'val' else name}" for name in names)
        raise ValueError(
            f"the training files hold {num_pairs} pairs, fewer than the "
            f"{MIN_PAIRS_TO_HOLD_OUT} needed to hold out a {' and a '.join(names)} split; "
            f"give {flags} files"
        )


def hold_out(
    sources: list[str], targets: list[str], names: Sequence[str], seed: int
) -> tuple[tuple[list[str], list[str]], dict[str, tuple[list[str], list[str]]]]:
    """Draws held-out splits from the training pairs, seeded.

    Args:
        sources: the training sources.
        targets: the training targets, aligned.
        names: the splits to hold out, e.g. `("val", "test")`, each `held_out_size` pairs.
        seed: the draw's seed.

    Returns:
        `(training pairs left, {name: (sources, targets)})`: the held-out pairs keep their
        order in the corpus; a pair is in one split only.

    Raises:
        ValueError: for a corpus of fewer than `MIN_PAIRS_TO_HOLD_OUT` pairs.
    """
    if not names:
        return (sources, targets), {}
    _check_enough(len(sources), names)
    size = held_out_size(len(sources))
    drawn = random.Random(f"held-out/{seed}").sample(range(len(sources)), size * len(names))
    splits, taken = {}, set()
    for number, name in enumerate(names):
        rows = sorted(drawn[number * size : (number + 1) * size])
        taken.update(rows)
        splits[name] = ([sources[i] for i in rows], [targets[i] for i in rows])
    rest = [i for i in range(len(sources)) if i not in taken]
    return ([sources[i] for i in rest], [targets[i] for i in rest]), splits


def sample_pairs(
    pairs: Iterable[tuple[str, str]], names: Sequence[str], seed: int
) -> tuple[int, dict[str, tuple[list[str], list[str]]]]:
    """`hold_out` for a corpus streamed in one pass: a seeded reservoir sample, then the
    same sizes. The training stream leaves the held-out pairs out by their sources
    (`remove_overlap`'s rule), so nothing but the sample is kept in memory.

    Returns:
        `(number of pairs read, {name: (sources, targets)})`.
    """
    rng = random.Random(f"held-out/{seed}")
    capacity = HELD_OUT_MAX * len(names)
    reservoir: list[tuple[int, tuple[str, str]]] = []
    count = 0
    for count, pair in enumerate(pairs, start=1):
        if len(reservoir) < capacity:
            reservoir.append((count, pair))
        else:
            slot = rng.randrange(count)
            if slot < capacity:
                reservoir[slot] = (count, pair)
    if not names:
        return count, {}
    _check_enough(count, names)
    size = held_out_size(count)
    rng.shuffle(reservoir)
    splits = {}
    for number, name in enumerate(names):
        chosen = sorted(reservoir[number * size : (number + 1) * size])
        splits[name] = ([s for _, (s, _) in chosen], [t for _, (_, t) in chosen])
    return count, splits


def remove_overlap(
    sources: list[str], targets: list[str], held_out_sources: Iterable[str]
) -> tuple[tuple[list[str], list[str]], int]:
    """The training pairs whose source (stripped) is not a held-out source, and how many
    were removed: a sentence scored on validation or test must not be trained on."""
    excluded = {sentence.strip() for sentence in held_out_sources}
    kept = [i for i, sentence in enumerate(sources) if sentence.strip() not in excluded]
    removed = len(sources) - len(kept)
    if not removed:
        return (sources, targets), 0
    return ([sources[i] for i in kept], [targets[i] for i in kept]), removed

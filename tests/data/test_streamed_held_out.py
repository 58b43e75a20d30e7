"""A streamed corpus's held-out splits (issue 53, point 11): a run never trains on its own
validation or test sources, the two splits are different pairs, and the reservoir sample
draws them from the whole file, not from its first pairs.

- `stream_batches` leaves out the pairs of `exclude_sources` (compared stripped);
- `prepare_run` on a streamed corpus hands the sampled validation and test sources to the
  stream: its training batches hold every other pair and none of those;
- `sample_pairs` (the one pass that samples them) gives disjoint splits, spread over the
  file as a uniform sample is.
"""

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from keras_attention.core.special_tokens import EOS_ID, PAD_ID
from keras_attention.data.held_out import HELD_OUT_MAX, held_out_size, sample_pairs
from keras_attention.data.streaming import stream_batches
from keras_attention.data.tokenizer import SubwordTokenizer
from tests.conftest import TEST_SEED

# Sentences of three words of four letters' pieces, all different: a SentencePiece model of
# 16 pieces learns them in milliseconds.
WORDS = ["abc", "bad", "cab", "dab", "cad", "bcd", "add", "bcc", "aab"]
SENTENCES = [f"{a} {b} {c}" for a in WORDS for b in WORDS for c in WORDS if len({a, b, c}) == 3]


def write_pair_files(folder: Path, sources: list[str], targets: list[str]) -> tuple[Path, Path]:
    source, target = folder / "train.en", folder / "train.de"
    source.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
    target.write_text("".join(line + "\n" for line in targets), encoding="utf-8")
    return source, target


def batch_sources(batches, tokenizer: SubwordTokenizer) -> Counter:
    """The source sentences of `batches` (`((source, target_in), target_out)`), counted."""
    counted = Counter()
    for (source, _), _ in batches:
        rows = source.numpy()
        rows = rows[(rows != PAD_ID).any(axis=1)]  # a bucket's filler rows left out
        for text in tokenizer.detokenize(np.where(rows == EOS_ID, PAD_ID, rows)).numpy():
            counted[text.decode()] += 1
    return counted


@pytest.fixture(scope="module")
def tiny_tokenizer() -> SubwordTokenizer:
    return SubwordTokenizer.train(SENTENCES, vocabulary_size=16)


def test_a_stream_leaves_out_the_excluded_sources(tmp_path: Path, tiny_tokenizer):
    sources = SENTENCES[:60]
    targets = [f"{sentence} x" for sentence in sources]  # the target's own text: irrelevant
    files = write_pair_files(tmp_path, sources, targets)
    excluded = [sources[3], f"  {sources[17]} ", sources[40]]  # compared stripped
    batches = stream_batches(
        *([path] for path in files), tiny_tokenizer, max_tokens=128, max_length=16, seed=1,
        exclude_sources=excluded,
    )  # fmt: skip
    kept = set(sources) - {sentence.strip() for sentence in excluded}
    assert batch_sources(batches, tiny_tokenizer) == Counter(kept)  # each once, none excluded


# A streamed run of the tiniest settings, on 120 pairs: 6 validation and 6 test pairs are
# sampled out of them; one round of 40 steps reads the 108 others several times over.
RUN_PAIRS = 120
TINY_RUN = dict(
    vocabulary_size=16,
    max_tokens=64,
    max_length=16,
    train_steps=40,
    model_overrides=dict(
        num_encoder_layers=1, num_decoder_layers=1, d_model=8, num_heads=2, intermediate_dim=16
    ),
    jit_compile=False,
)


def test_a_streamed_run_never_trains_on_its_validation_or_test_sources(tmp_path: Path):
    from keras_attention.runs.config import TrainConfig
    from keras_attention.runs.prepare import prepare_run

    sources = SENTENCES[:RUN_PAIRS]
    targets = [f"{sentence} abc" for sentence in sources]
    source, target = write_pair_files(tmp_path, sources, targets)
    config = TrainConfig(
        output_dir=str(tmp_path / "run"), train=[[str(source), str(target)]], stream=True,
        **TINY_RUN,
    )  # fmt: skip
    prepared = prepare_run(config)
    data = prepared.data
    valid = (tmp_path / "run" / "data" / "valid.en").read_text().splitlines()
    test = (tmp_path / "run" / "data" / "test.en").read_text().splitlines()
    assert len(valid) == len(test) == held_out_size(RUN_PAIRS)
    held_out = set(valid) | set(test)
    assert len(held_out) == len(valid) + len(test)  # two splits of different pairs

    trained = batch_sources(data.train_batches(0), data.tokenizer)
    assert not held_out & set(trained), f"trained on held-out sources: {held_out & set(trained)}"
    assert set(trained) == set(sources) - held_out  # every other pair is trained on


def test_streamed_validation_and_test_splits_are_different_pairs():
    pairs = [(sentence, f"t{number}") for number, sentence in enumerate(SENTENCES[:400])]
    count, splits = sample_pairs(iter(pairs), ("val", "test"), seed=TEST_SEED)
    size = held_out_size(400)
    assert count == 400 and [len(splits[name][0]) for name in ("val", "test")] == [size] * 2
    valid = set(zip(*splits["val"], strict=True))
    test = set(zip(*splits["test"], strict=True))
    assert len(valid) == len(test) == size and not valid & test
    assert valid | test <= set(pairs)  # pairs stay pairs


# A corpus of 20 times the reservoir's capacity (one split: `HELD_OUT_MAX` pairs): the 3,000
# validation pairs are a uniform sample of its 60,000. The share of them from the file's
# second half is then hypergeometric, mean 0.5 and standard deviation
# sqrt(0.25 / 3000 * (60000 - 3000) / (60000 - 1)) = 0.0089; the test asks for more than
# 0.4, 11 standard deviations below the mean, which a uniform sample misses with probability
# below 1e-26 (Hoeffding's bound exp(-2 * 3000 * 0.1^2) = 9e-27, which holds for sampling
# without replacement), whatever the seed. A reservoir that keeps the file's first pairs
# takes none from the second half.
SPREAD_PAIRS = 20 * HELD_OUT_MAX


def test_the_reservoir_samples_the_whole_file():
    pairs = ((f"s{number}", f"t{number}") for number in range(SPREAD_PAIRS))
    count, splits = sample_pairs(pairs, ("val",), seed=TEST_SEED)
    numbers = np.array([int(source[1:]) for source in splits["val"][0]])
    assert count == SPREAD_PAIRS and len(numbers) == HELD_OUT_MAX == len(set(numbers))
    second_half = float(np.mean(numbers >= SPREAD_PAIRS // 2))
    assert second_half > 0.4, f"{second_half:.3f} of the sample from the second half"
    assert math.exp(-2 * HELD_OUT_MAX * 0.1**2) < 1e-26  # the bound quoted above

"""`core.progress.Progress`: a line rewritten on stderr at a terminal, nothing elsewhere."""

import io

import pytest

from keras_attention.core.progress import Progress, counted, working


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_progress_draws_one_line_at_a_terminal_and_ends_it():
    stream = FakeTerminal()
    with Progress("translating", total=4, stream=stream, min_interval=0) as progress:
        progress.update(2)
        progress.update(2)
    text = stream.getvalue()
    assert text.count("\r") == 3  # two updates and the final draw
    assert text.endswith("\n") and text.count("\n") == 1
    assert "translating: 2/4 sentences (50%, " in text
    assert "translating: 4/4 sentences (100%, " in text.rsplit("\r", 1)[1]


def test_progress_redraws_at_most_every_min_interval():
    stream = FakeTerminal()
    with Progress("scoring", stream=stream, min_interval=3600) as progress:
        for _ in range(100):
            progress.update()
    assert stream.getvalue().count("\r") == 2  # the first update, then the end
    assert "scoring: 100 sentences (" in stream.getvalue()


def test_progress_is_silent_when_not_a_terminal_or_disabled():
    for stream, enabled in ((io.StringIO(), True), (FakeTerminal(), False)):
        with Progress("exporting", total=2, stream=stream, enabled=enabled) as progress:
            progress.update(2)
        assert stream.getvalue() == ""
        assert progress.done == 2


def test_counted_counts_the_sentences_of_each_call():
    stream = FakeTerminal()
    progress = Progress("translating", total=5, stream=stream, min_interval=0)
    translate = counted(lambda sentences: {"n": len(sentences)}, progress)
    assert translate(sentences=["a", "b", "c"]) == {"n": 3}
    translate(sentences=["d", "e"])
    assert progress.done == 5
    assert "5/5 sentences" in stream.getvalue()


def test_working_names_the_step_and_its_time_at_a_terminal_even_when_it_fails():
    stream = FakeTerminal()
    with pytest.raises(RuntimeError), working("exporting", stream):
        assert stream.getvalue() == "exporting ..."
        raise RuntimeError("failed")
    assert stream.getvalue().startswith("exporting ...\r")
    assert stream.getvalue().endswith(" s\n") and "exporting: " in stream.getvalue()
    quiet = io.StringIO()
    with working("exporting", quiet):
        pass
    assert quiet.getvalue() == ""

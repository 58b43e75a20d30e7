"""Model folders from elsewhere are data, never code, and their sizes are checked before
anything is built (issue 53, points 9 and 10).

- Every size of a `Transformer` (from a preset's or a `.keras` file's `config.json`, a run's
  `model_overrides`, `tools/train.py`'s `--override`, a program) is a positive integer within
  `model_sizes.SIZE_LIMITS`, the model at most `MAX_PARAMETERS` parameters, and a config
  that describes more parameters than its weights file can hold is refused: all before the
  model is built (a spy on `Transformer.build` says it never is).
- A SavedModel is a program: one planted in a preset or run folder (its graph writes a
  file) is refused by `translate --model`, `from_preset` and the library's loaders, and the
  file is never written; a folder that holds nothing but a SavedModel is one, and runs.
"""

import json
import re
import shutil
import zipfile
from pathlib import Path

import keras
import pytest
import tensorflow as tf

from keras_attention.core.file_checks import CorruptFileError
from keras_attention.models import Transformer, model_sizes
from keras_attention.models.preset_sources import beam_search_settings, folder_kind
from keras_attention.models.run_folder import load_model_file
from keras_attention.runs.decoders import SavedModelDecoder
from keras_attention.runs.translate_function import load_translate_function
from keras_attention.serving.translator import Translator
from tests.run_helpers import main_error

TINY = dict(
    vocabulary_size=64, num_encoder_layers=1, num_decoder_layers=1, d_model=8, num_heads=2,
    intermediate_dim=16,
)  # fmt: skip


@pytest.fixture
def never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails the test if a `Transformer` is built (its weights made) while it runs."""

    def build(self, input_shape=None):
        raise AssertionError(f"{self.name} was built")

    monkeypatch.setattr(Transformer, "build", build)


def assert_size_refused(folder: Path, name: str, value) -> None:
    """`Transformer.from_preset(folder)` refuses the size `name`, naming its `config.json`."""
    with pytest.raises(ValueError) as info:
        Transformer.from_preset(folder)
    message = str(info.value)
    assert message.startswith(f"{folder / 'config.json'}: {name} must be an integer from 1 to ")
    assert message.endswith(f"got {name}={value!r}") and "\n" not in message


def too_small_message(folder: Path, weights: Path) -> str:
    """The message of `Transformer.from_preset(folder)`, which refuses the model of its
    `config.json` as too large for `weights` (a `CorruptFileError`)."""
    with pytest.raises(CorruptFileError) as info:
        Transformer.from_preset(folder)
    message = str(info.value)
    config_path = folder / "config.json"
    assert message.startswith(f"{weights} is too small for the model that {config_path} describes")
    assert "cannot hold its" in message and "\n" not in message
    return message


def edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


# The sizes themselves.

BAD_VALUES = [True, 2.0, "8", 0, -1, None]


@pytest.mark.parametrize("name", list(model_sizes.SIZE_LIMITS))
@pytest.mark.parametrize("value", [*BAD_VALUES, "limit + 1"], ids=repr)
def test_each_size_is_a_positive_integer_within_its_limit(name: str, value):
    if value == "limit + 1":
        value = model_sizes.SIZE_LIMITS[name] + 1
    if value is None and name in model_sizes.OPTIONAL_SIZES:
        Transformer(**{**TINY, name: value})  # None is its default
        return
    limit = model_sizes.SIZE_LIMITS[name]
    message = f"{name} must be an integer from 1 to {limit}; got {name}={value!r}"
    with pytest.raises(ValueError) as info:
        Transformer(**{**TINY, name: value})
    assert str(info.value) == message


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"norm_first": True, "max_positions": 20},
        {"share_embeddings": False, "target_vocabulary_size": 30, "key_dim": 3},
        {"tie_output_embeddings": False, "share_embeddings": False, "max_positions": 7},
    ],
    ids=["default", "pre_ln_learned", "two_vocabularies", "untied"],
)
def test_the_parameter_count_is_the_built_models(config: dict):
    model = Transformer(**{**TINY, **config})
    model.build()
    assert model_sizes.parameter_count(model.get_config()) == model.count_params()


def test_a_model_of_more_than_max_parameters_is_refused_before_it_is_made(never_built):
    sizes = dict(vocabulary_size=2**24, d_model=2**12, num_heads=16)  # 6.9e10 in embeddings
    with pytest.raises(ValueError, match=r"would have [\d,]+ parameters, more than the 10,000,0"):
        Transformer(**sizes)


# A preset folder.


@pytest.fixture(scope="module")
def preset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A preset folder of a tiny untrained model, without a tokenizer."""
    model = Transformer(**TINY)
    return model.save_to_preset(tmp_path_factory.mktemp("presets") / "tiny")


@pytest.fixture
def preset_copy(preset: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(preset, tmp_path / "preset"))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("vocabulary_size", 10**12),
        ("num_encoder_layers", 10**9),
        ("num_decoder_layers", 2000),
        ("d_model", "512"),
        ("num_heads", True),
        ("intermediate_dim", 2.5),
    ],
)
def test_a_preset_with_a_wrong_size_is_refused_before_it_is_built(
    preset_copy: Path, never_built, name: str, value
):
    edit_json(preset_copy / "config.json", lambda data: data["config"].update({name: value}))
    assert_size_refused(preset_copy, name, value)


def test_a_preset_larger_than_its_weights_is_refused_before_it_is_built(
    preset_copy: Path, never_built
):
    edit_json(
        preset_copy / "config.json", lambda data: data["config"].update(vocabulary_size=2**20)
    )
    message = too_small_message(preset_copy, preset_copy / "model.weights.h5")
    assert "cannot hold its 8,39" in message and "vocabulary_size=1048576" in message


def test_a_preset_of_another_class_is_never_deserialized(
    preset_copy: Path, monkeypatch: pytest.MonkeyPatch
):
    def deserialize(*args, **kwargs):
        raise AssertionError("deserialized")

    monkeypatch.setattr(keras.saving, "deserialize_keras_object", deserialize)
    config_path = preset_copy / "config.json"
    edit_json(config_path, lambda data: data.update(registered_name="keras>Sequential"))
    with pytest.raises(ValueError) as info:
        Transformer.from_preset(preset_copy)
    assert str(info.value) == (
        f"{config_path} describes a 'keras>Sequential', not a Transformer "
        "('keras_attention>Transformer'); it is not loaded"
    )


def test_a_beam_wider_than_a_file_may_ask_for_is_refused(preset_copy: Path):
    metadata = preset_copy / "metadata.json"
    edit_json(metadata, lambda data: data.update(beam_size=10**9))
    with pytest.raises(ValueError, match=rf"^beam_size in {metadata} must be at most 1024; got"):
        beam_search_settings(preset_copy)


def test_translate_names_the_file_and_the_size_in_one_line(
    preset_copy: Path, tmp_path: Path, never_built
):
    edit_json(preset_copy / "config.json", lambda data: data["config"].update(d_model=10**7))
    source = tmp_path / "source.txt"
    source.write_text("A man rides a bike.\n")
    error = main_error("translate", "--model", preset_copy, source)
    assert f"{preset_copy / 'config.json'}: d_model must be an integer from 1 to 65536" in error
    assert error.endswith("got d_model=10000000")


# A run folder: its config.json's model_overrides, its checkpoints, its model.keras.


@pytest.fixture
def run_copy(tiny_run, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tiny_run.path, tmp_path / "run"))


@pytest.mark.parametrize(("name", "value"), [("num_decoder_layers", 10**9), ("d_model", 10**7)])
def test_a_run_with_a_wrong_override_is_refused_before_it_is_built(
    run_copy: Path, never_built, name: str, value
):
    edit_json(run_copy / "config.json", lambda data: data["model_overrides"].update({name: value}))
    assert_size_refused(run_copy, name, value)


def test_a_run_larger_than_its_checkpoint_is_refused_before_it_is_built(
    run_copy: Path, never_built
):
    edit_json(
        run_copy / "config.json",
        lambda data: data["model_overrides"].update(intermediate_dim=2**18),
    )
    message = too_small_message(run_copy, run_copy / "checkpoints" / "epoch_002.weights.h5")
    assert "intermediate_dim=262144" in message


def rewrite_archive_config(path: Path, edit) -> None:
    """Edits the `config.json` of the `.keras` archive at `path`, keeping its other members
    (compressed: the archive stays small whatever the config holds)."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    config = json.loads(members["config.json"])
    edit(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.fixture
def finished_copy(finished_tiny_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(finished_tiny_run, tmp_path / "finished"))


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"num_encoder_layers": 10**9}, "config.json): num_encoder_layers must be an integer"),
        ({"vocabulary_size": 2**20}, "config.json) describes: "),
    ],
    ids=["out_of_limits", "larger_than_its_weights"],
)
def test_a_keras_file_with_a_wrong_size_is_refused_before_it_is_built(
    finished_copy: Path, never_built, sizes: dict, message: str
):
    path = finished_copy / "model.keras"
    rewrite_archive_config(path, lambda config: config["config"].update(sizes))
    with pytest.raises(ValueError) as info:
        load_model_file(path)
    assert str(info.value).startswith(f"{path} ") and message in str(info.value)
    with pytest.raises(ValueError, match=r"model\.keras \(config\.json\)"):
        Transformer.from_preset(finished_copy)


def test_a_keras_file_whose_config_would_fill_the_memory_is_not_read(finished_copy: Path):
    path = finished_copy / "model.keras"
    rewrite_archive_config(path, lambda config: config.update(padding=" " * 2**24))
    with pytest.raises(ValueError) as info:
        load_model_file(path)
    message = str(info.value)
    assert message.startswith(f"{path} is corrupt or not a Keras model file (its config.json: 16,")
    assert message.endswith(" bytes, more than a model's config holds)")


# tools/train.py: its --override, and the model_overrides an --init-from run hands down.


def test_train_refuses_an_override_out_of_limits_before_anything_is_written(
    tmp_path: Path, never_built
):
    from tests.tools.test_train import train_command

    output_dir = tmp_path / "run"
    args = train_command(output_dir, 1, "--override", "num_encoder_layers=1000000000")
    error = main_error("train", *args[2:])
    assert "num_encoder_layers must be an integer from 1 to 1024" in error
    assert error.endswith("got num_encoder_layers=1000000000")
    assert not output_dir.exists()


def test_train_init_from_a_run_whose_overrides_are_out_of_limits_is_refused(
    finished_copy: Path, tmp_path: Path, never_built
):
    edit_json(
        finished_copy / "config.json",
        lambda data: data["model_overrides"].update(num_encoder_layers=10**9),
    )
    child = tmp_path / "child"
    args = ["--init-from", finished_copy, "--run-dir", child, "--epochs", "1"]
    error = main_error("train", *args, "--train-pairs", "300", "--no-jit")  # generated pairs
    assert "num_encoder_layers must be an integer from 1 to 1024" in error
    assert error.endswith("got num_encoder_layers=1000000000")
    assert not child.exists()


# A SavedModel planted in a data folder.


def plant_saved_model(folder: Path, sentinel: Path) -> None:
    """Saves into `folder` a SavedModel whose `serving_default` writes `sentinel` and
    returns the sentences as their translations, as an exported translator answers."""

    class Planted(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def serve(self, sentences):
            tf.io.write_file(str(sentinel), "the planted graph ran")
            return {"translations": sentences, "scores": tf.zeros(tf.shape(sentences))}

    planted = Planted()
    tf.saved_model.save(planted, str(folder), signatures={"serving_default": planted.serve})


@pytest.fixture(params=["preset", "run"])
def planted(request, preset: Path, tiny_run, tmp_path: Path) -> tuple[Path, Path]:
    """`(folder, sentinel)`: a copy of a preset or a run folder with a planted SavedModel."""
    source = preset if request.param == "preset" else tiny_run.path
    folder = Path(shutil.copytree(source, tmp_path / request.param))
    sentinel = tmp_path / "planted.txt"
    plant_saved_model(folder, sentinel)
    return folder, sentinel


@pytest.fixture
def source_file(tmp_path: Path) -> Path:
    path = tmp_path / "source.txt"
    path.write_text("A man rides a bike.\nTwo dogs play.\n")
    return path


def test_translate_never_runs_a_savedmodel_planted_in_a_model_folder(planted, source_file):
    folder, sentinel = planted
    error = main_error("translate", "--model", folder, source_file)
    assert error.startswith(f"error: --model: {folder} holds a SavedModel (saved_model.pb)")
    assert "config.json" in error and "loaded neither as a SavedModel" in error
    assert not sentinel.exists()


def test_the_library_never_runs_a_savedmodel_planted_in_a_model_folder(planted):
    folder, sentinel = planted
    loaders = [
        lambda: folder_kind(folder),
        lambda: Transformer.from_preset(folder),
        lambda: Translator.from_preset(folder),
        lambda: load_translate_function(model=folder),
        lambda: SavedModelDecoder(folder),
    ]
    for load in loaders:
        with pytest.raises(ValueError, match=rf"^{re.escape(str(folder))} holds a SavedModel"):
            load()
    assert not sentinel.exists()


def test_a_folder_of_nothing_but_a_savedmodel_is_one_and_is_run(
    tmp_path: Path, source_file: Path, capsys
):
    """The rule's other side, and the proof that the planted graph does write its file: a
    SavedModel alone in its folder is loaded as one (it is code: docs/security.md)."""
    from tools.translate import main

    folder, sentinel = tmp_path / "export" / "1", tmp_path / "planted.txt"
    folder.mkdir(parents=True)
    plant_saved_model(folder, sentinel)
    (folder / ".DS_Store").write_text("")  # hidden files do not count
    assert folder_kind(folder) == "saved_model"
    assert main(["--model", str(folder), str(source_file)]) == 0
    assert capsys.readouterr().out == source_file.read_text()  # what the graph answers
    assert sentinel.read_text() == "the planted graph ran"


# `.keras` files load in safe mode: a lambda's code is never deserialized.


def test_a_keras_file_with_a_python_lambda_is_refused_without_running_it(tmp_path: Path):
    """A guard: Keras' own default, which `load_model_file` now asks for explicitly."""
    sentinel = tmp_path / "lambda.txt"
    write = lambda x, path=str(sentinel): (open(path, "w").close(), x)[1]  # noqa: E731
    model = keras.Sequential([keras.Input((2,)), keras.layers.Lambda(write)])
    path = tmp_path / "lambda.keras"
    model.save(path)
    sentinel.unlink()  # written as the model was made: the lambda writes it when it runs
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))} is corrupt or not a Keras"):
        load_model_file(path)
    assert not sentinel.exists()

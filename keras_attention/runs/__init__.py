"""A training run of a translator, one job per module, from the bottom up:

- `config`: the run's settings (`TrainConfig`) and each corpus's defaults;
- `files`: loading a run folder's model and tokenizer, finished or still training;
- `folder`: what a run folder holds, and whether a run may start, resume or overwrite it;
- `output_guard`: what a tool may write: never its own inputs, never a run folder's files;
- `learning_curve`: the PNG of validation BLEU and loss against time;
- `validation_bleu`: the callback that scores the validation split while training;
- `selection`: choosing the final weights (last, best, averages) on the validation split;
- `prepare`: settings, corpus, tokenizer, batches and folder checked before any write;
- `train`: `model.fit`, resumable, then the choice of weights (`train_translator`);
- `serving_check`: the SavedModel export, reloaded and scored on the test split;
- `preset_export`: the trained model and tokenizer as a preset folder (keras-hub's layout);
- `fine_tune`: a run started from a finished run (`--init-from`), its recipe and refusals;
- `decoders`: what `translate` decodes with: ensembles of runs, a SavedModel's signatures.

`tools/train.py` is the command-line face of `train_translator` and `export_and_evaluate`.

Its names load on first use (`core.lazy_names`): `runs.config` or `runs.output_guard` alone
load in 0.02 s once the package is imported, the whole of `runs` in 2.4 s more
(sacreBLEU, matplotlib, the export).
"""

from keras_attention.core.lazy_names import lazy_names

__getattr__, __dir__, __all__ = lazy_names(
    __name__,
    config=["TrainConfig"],
    preset_export=["save_run_as_preset"],
    serving_check=["ServingCheck", "export_and_evaluate"],
    train=["TrainResult", "load_run", "train_translator"],
)

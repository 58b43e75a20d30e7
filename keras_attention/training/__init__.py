"""The paper's training recipe: label-smoothed loss, token metrics, warm-up schedule, Adam."""

from keras_attention.distribute.multi_worker import MultiWorkerFitMixin, enable_multi_worker_fit
from keras_attention.training.divergence import DivergenceCheck, TrainingDivergedError
from keras_attention.training.losses import LabelSmoothedCrossEntropy
from keras_attention.training.metrics import MaskedAccuracy, Perplexity
from keras_attention.training.recipe import compile_with_paper_recipe, paper_optimizer
from keras_attention.training.schedules import TransformerSchedule

__all__ = [
    "DivergenceCheck",
    "LabelSmoothedCrossEntropy",
    "MaskedAccuracy",
    "MultiWorkerFitMixin",
    "Perplexity",
    "TrainingDivergedError",
    "TransformerSchedule",
    "compile_with_paper_recipe",
    "enable_multi_worker_fit",
    "paper_optimizer",
]

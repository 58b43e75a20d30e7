"""`ValidationPatience`: stops after `patience` epochs without a new lowest validation loss,
and counts on from the losses of a resumed run's log."""

import keras
import numpy as np
import pytest

from keras_attention.training.early_stopping import ValidationPatience, losses_in_log


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = 0

    def on_epoch_end(self, epoch, logs=None):
        self.epochs += 1


def epochs_trained(losses: list[float], patience: int, before: list[float] = ()) -> int:
    """Trains a tiny model whose "val_loss" is scripted, with the callback."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    stopper = ValidationPatience(patience)
    stopper.resume_from(list(before))
    scripted = iter(losses)

    class Scripted(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = next(scripted)

    recorder = Recorder()
    x = np.zeros((4, 2), "float32")
    model.fit(x, x[:, :1], epochs=len(losses), verbose=0, callbacks=[Scripted(), stopper, recorder])
    return recorder.epochs


def test_it_stops_after_patience_epochs_without_improvement():
    assert epochs_trained([3.0, 2.0, 2.5, 2.4, 2.1, 1.0], patience=3) == 5
    assert epochs_trained([3.0, 2.0, 1.0, 0.5], patience=1) == 4
    assert epochs_trained([3.0, 3.1], patience=1) == 2


def test_a_resumed_run_stops_where_an_uninterrupted_one_does():
    losses = [3.0, 2.0, 2.5, 2.4, 2.1, 1.0]
    # Resumed after 3 epochs: 2 more to go before the third epoch without improvement.
    assert epochs_trained(losses[3:], patience=3, before=losses[:3]) == 2


def test_losses_are_read_from_the_training_log(tmp_path):
    log = tmp_path / "training_log.csv"
    log.write_text("epoch,loss,val_loss\n0,4.0,3.5\n1,3.0,2.5\n")
    assert losses_in_log(log) == [3.5, 2.5]
    assert losses_in_log(tmp_path / "missing.csv") == []
    with pytest.raises(ValueError, match="patience"):
        ValidationPatience(0)

"""The ids of the special tokens, defined once for the tokenizer, the model and decoding."""

PAD_ID = 0  # padding; masked everywhere (also `mask_zero=True` in the embeddings)
UNK_ID = 1  # unknown piece
BOS_ID = 2  # begin of sentence: the first decoder input
EOS_ID = 3  # end of sentence: appended to every source and target

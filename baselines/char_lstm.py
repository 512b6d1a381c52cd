"""Character-enhanced BiLSTM-CRF baseline (Dernoncourt et al. 2017): every token is its word
embedding joined with a character BiLSTM encoding of its spelling (character embedding 25,
character LSTM 25 units per direction), then dropout, a token BiLSTM (100 units per direction),
per-tag scores and the CRF of `deidpool.representer.crf`. It is non-private by design: character
features carry spellings, which the shared representation leaves out (docs/method.md, Inputs).

It trains with the tagger's procedure (`TaggerTraining`: Nadam, class weights, early stopping
in `run_training`) on `SentenceData` whose feature rows are [word embedding | character ids].
Departures from the paper: the word embeddings stay frozen (as for the tagger) instead of being
fine-tuned, and the optimizer is the tagger's Nadam instead of plain SGD."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
from keras import ops

from deidpool.baselines.runs import (
    RUN_FORMAT,
    check_training_data,
    label_vocabulary,
    labeled_notes,
    predict_with,
    read_config,
)
from deidpool.corpus.document import Document
from deidpool.corpus.prepare import Sentence
from deidpool.representer.crf import CRF
from deidpool.representer.dataset import SentenceData
from deidpool.representer.embeddings import Embeddings, load_embeddings
from deidpool.representer.tagger import compute_class_weights, tag_sentences
from deidpool.representer.training import TaggerTraining, run_training

KIND = "char-lstm"
MODEL_FILE = "models/tagger.keras"  # where run_training saves TaggerTraining's model
MAX_CHARS = 20  # characters kept per token (its first ones); longer tokens are rare
PADDING, UNKNOWN = 0, 1  # character ids; known characters count from 2


@keras.saving.register_keras_serializable(package="deidpool")
class CharTagger(keras.Model):
    """Character-enhanced BiLSTM-CRF with the `Tagger` interface (`call` -> unary scores,
    `predict_tags` -> Viterbi paths, a `crf` attribute for `tagger_loss`).

    `features` (batch, time, word_dim + max_chars) hold the word embedding and then the
    character ids of each token (0 pads); `mask` marks real tokens; `casing` is not used
    (the characters carry it).
    """

    def __init__(self, num_tags, word_dim, num_chars, max_chars=MAX_CHARS, char_dim=25, char_units=25,
                 lstm_units=100, dropout=0.5, **kwargs):
        super().__init__(**kwargs)
        self.num_tags, self.word_dim, self.num_chars, self.max_chars = num_tags, word_dim, num_chars, max_chars
        self.char_dim, self.char_units, self.lstm_units, self.dropout = char_dim, char_units, lstm_units, dropout
        self.char_embedding = keras.layers.Embedding(num_chars, char_dim, name="char_embedding")
        # both LSTMs exist before either wrapper (why: representer.tagger.Tagger.__init__)
        char_lstm, token_lstm = keras.layers.LSTM(char_units), keras.layers.LSTM(lstm_units, return_sequences=True)
        self.char_bilstm = keras.layers.Bidirectional(char_lstm, name="char_bilstm")
        self.token_dropout = keras.layers.Dropout(dropout, name="dropout")
        self.bilstm = keras.layers.Bidirectional(token_lstm, name="bilstm")
        self.scores = keras.layers.Dense(num_tags, name="tag_scores")
        self.crf = CRF(num_tags, name="crf")

    def build(self, input_shape):
        self.char_embedding.build((None, self.max_chars))
        self.char_bilstm.build((None, self.max_chars, self.char_dim))
        self.bilstm.build((None, None, self.word_dim + 2 * self.char_units))
        self.scores.build((None, None, 2 * self.lstm_units))
        self.crf.build((None, None, self.num_tags))

    def call(self, inputs, training=None):
        features = ops.cast(inputs["features"], "float32")
        chars = ops.cast(features[..., self.word_dim:], "int32")
        batch, time = ops.shape(chars)[0], ops.shape(chars)[1]
        flat = ops.reshape(chars, (-1, self.max_chars))
        spelled = self.char_bilstm(self.char_embedding(flat), mask=ops.not_equal(flat, PADDING), training=training)
        spelled = ops.reshape(spelled, (batch, time, 2 * self.char_units))
        x = self.token_dropout(ops.concatenate([features[..., :self.word_dim], spelled], axis=-1), training=training)
        x = self.bilstm(x, mask=ops.cast(inputs["mask"], "bool"), training=training)
        return self.scores(x)

    def predict_tags(self, inputs):
        """Viterbi tag ids (batch, time) int32, 0 at padded positions."""
        return self.crf(self(inputs, training=False), mask=inputs["mask"])

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags, "word_dim": self.word_dim,
                "num_chars": self.num_chars, "max_chars": self.max_chars, "char_dim": self.char_dim,
                "char_units": self.char_units, "lstm_units": self.lstm_units, "dropout": self.dropout}


def build_char_tagger(word_dim: int, num_tags: int, num_chars: int, lstm_units: int = 100) -> CharTagger:
    model = CharTagger(num_tags, word_dim, num_chars, lstm_units=lstm_units, name="char_tagger")
    model.build({"features": (None, None, word_dim + MAX_CHARS), "casing": (None, None), "mask": (None, None)})
    return model


def character_ids(sentences: Sequence[Sentence], alphabet: str) -> np.ndarray:
    """(tokens, MAX_CHARS) float32 ids of each token's first characters, unknown ones 1, padding 0."""
    ids = {char: i for i, char in enumerate(alphabet, start=2)}
    tokens = [t.text for s in sentences for t in s.tokens]
    result = np.zeros((len(tokens), MAX_CHARS), dtype=np.float32)
    for row, text in enumerate(tokens):
        result[row, :min(len(text), MAX_CHARS)] = [ids.get(char, UNKNOWN) for char in text[:MAX_CHARS]]
    return result


def sentence_data(sentences: Sequence[Sentence], vectors: Embeddings, alphabet: str,
                  vocabulary: Sequence[str] | None = None) -> SentenceData:
    """The tagger's `SentenceData` with the character ids appended to every feature row."""
    words = SentenceData.from_sentences(sentences, vectors, vocabulary)
    return SentenceData(np.concatenate([words.features, character_ids(sentences, alphabet)], axis=1),
                        words.casing, words.lengths, words.tags)


def train(train_documents: Sequence[Document], valid_documents: Sequence[Document], run_dir: str | Path, *,
          embeddings: str = "glove", label: str = "source", scheme: str = "BIOES", lstm_units: int = 100,
          learning_rate: float = 0.002, max_epochs: int = 20, patience: int = 3, seed: int = 0, progress: bool = True,
          loaded_embeddings: Embeddings | None = None) -> dict:
    """Train with early stopping on the validation loss; writes the run directory as
    `run_training` does (resumable) and returns the best epoch's metrics."""
    train_notes = labeled_notes(train_documents, scheme, label)
    valid_notes = labeled_notes(valid_documents, scheme, label)
    check_training_data(train_notes, valid_notes)
    train_sentences = [s for _, sentences in train_notes for s in sentences]
    valid_sentences = [s for _, sentences in valid_notes for s in sentences]
    counts = Counter(char for s in train_sentences for t in s.tokens for char in t.text)
    alphabet = "".join(sorted(counts))
    vectors = loaded_embeddings or load_embeddings(embeddings)
    vocabulary = label_vocabulary((*train_documents, *valid_documents), scheme, label)
    train_data = sentence_data(train_sentences, vectors, alphabet, vocabulary)
    valid_data = sentence_data(valid_sentences, vectors, alphabet, vocabulary)
    keras.utils.set_random_seed(seed)
    model = build_char_tagger(vectors.dim, len(vocabulary), len(alphabet) + 2, lstm_units)
    procedure = TaggerTraining(model, compute_class_weights(train_data.tag_counts(len(vocabulary))), learning_rate)
    setup = {"kind": KIND, "format_version": RUN_FORMAT, "embeddings": embeddings,
             "embeddings_id": vectors.source_id, "scheme": scheme, "label": label, "tag_vocabulary": vocabulary,
             "alphabet": alphabet, "train_documents": len(train_documents), "train_sentences": len(train_data),
             "valid_documents": len(valid_documents), "valid_sentences": len(valid_data)}
    return run_training(procedure, train_data, valid_data, run_dir, max_epochs=max_epochs, patience=patience,
                        seed=seed, config=setup, progress=progress)


class CharLSTMBaseline:
    def __init__(self, model: CharTagger, config: dict, vectors: Embeddings):
        self.model, self.config, self.vectors = model, config, vectors

    def tag_notes(self, texts: Sequence[str], sentences: Sequence[Sequence[Sentence]]) -> list[list[str]]:
        flat = [s for note in sentences for s in note]
        if not flat:
            return []
        vocabulary = self.config["tag_vocabulary"]
        paths = tag_sentences(self.model, sentence_data(flat, self.vectors, self.config["alphabet"]))
        return [[vocabulary[i] for i in path] for path in paths]

    def predict_documents(self, documents: Sequence[Document]) -> list[Document]:
        return predict_with(self.tag_notes, documents, self.config["tag_vocabulary"], self.config["scheme"])


def load(run_dir: str | Path, loaded_embeddings: Embeddings | None = None) -> CharLSTMBaseline:
    """The baseline of a run directory written by `train` (the embeddings must be those it was trained on)."""
    config = read_config(run_dir, KIND, MODEL_FILE)
    vectors = loaded_embeddings or load_embeddings(config["embeddings"])
    if vectors.source_id != config["embeddings_id"]:
        raise ValueError(f"{Path(run_dir) / 'config.json'}: embeddings {vectors.source_id} differ from those the "
                         f"model was trained on ({config['embeddings_id']})")
    return CharLSTMBaseline(keras.saving.load_model(Path(run_dir) / MODEL_FILE, compile=False), config, vectors)

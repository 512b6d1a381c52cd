"""What a command that runs a model calls before its first model: the other commands never
import TensorFlow, so `--help` and the corpus, key, upload and server-admin commands answer at once."""

import gc


def start_tensorflow() -> None:
    """Import TensorFlow and Keras with this project's thread pools (`deidpool.representer.threads`: before
    TensorFlow's first operation), then keep their hundreds of thousands of long-lived objects out
    of the garbage collector's way (else every full collection walks them all)."""
    from deidpool.representer.loading import load_tensorflow

    load_tensorflow()
    from deidpool.representer.threads import configure_threads

    configure_threads()
    gc.freeze()

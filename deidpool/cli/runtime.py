"""What a command that runs a model calls before its first model: the other commands never
import TensorFlow, so `--help` and the corpus, key, upload and server-admin commands answer at once."""

import contextlib
import gc
import os
import sys


def start_tensorflow() -> None:
    """Import TensorFlow and Keras with this project's thread pools (`deidpool.representer.threads`: before
    TensorFlow's first operation), then keep their about 350,000 long-lived objects out of the
    garbage collector's way (every full collection walked them, 0.15-0.2 s each, in about every
    other export of site_a)."""
    with _load_notices_hidden():
        import keras  # noqa: F401

    from deidpool.representer.threads import configure_threads

    configure_threads()
    gc.freeze()


@contextlib.contextmanager
def _load_notices_hidden():
    """Send what native code writes to the process's stderr to /dev/null while TensorFlow loads, unless
    TF_CPP_MIN_LOG_LEVEL is 0: TensorFlow 2.21's libraries log absl's "before InitializeLog" warning and
    oneDNN's notice as they load, twice, whatever that level says. Python's own errors still show: an
    import that fails raises after stderr is back."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") == "0":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)

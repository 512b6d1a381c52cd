"""Loading TensorFlow without the notices its native libraries write as they load."""

import os
import sys


def load_tensorflow() -> None:
    """Import TensorFlow and Keras. Unless TF_CPP_MIN_LOG_LEVEL is unset or 0, what native code writes
    to the process's stderr meanwhile goes to /dev/null: TensorFlow 2.21's libraries log absl's
    "before InitializeLog" warning and oneDNN's notice as they load, twice, whatever that level says.
    Python's own errors still show: an import that fails raises after stderr is back."""
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") == "0":
        import keras  # noqa: F401
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        import keras  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)

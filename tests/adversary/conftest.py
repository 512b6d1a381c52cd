"""Shared by the adversary tests: their tiny models train faster without Grappler."""

import pytest
import tensorflow as tf


@pytest.fixture(autouse=True, scope="module")
def fast_graph_compilation():
    """Grappler's graph rewrites take longer than these tiny models ever run."""
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    yield
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})

"""deidpool: share de-identification training data as adversarially private representations."""

__version__ = "0.3.0"

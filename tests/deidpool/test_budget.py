"""`--time-budget`: a command whose training runs out of budget exits with the resumable status."""

import pytest
import typer

from deidpool.cli.budget import within_budget
from deidpool.representer.training import _DEADLINE, RESUMABLE_EXIT_STATUS, TimeBudgetExhausted


def test_an_exhausted_budget_exits_resumable_and_other_errors_pass_through(capsys):
    with pytest.raises(typer.Exit) as stopped:
        with within_budget(60):
            assert _DEADLINE.get() is not None
            raise TimeBudgetExhausted("p3: stopped after epoch 2 of at most 40 to stay within the time budget")
    assert stopped.value.exit_code == RESUMABLE_EXIT_STATUS == 75
    assert "resumable: p3: stopped after epoch 2" in capsys.readouterr().err
    assert _DEADLINE.get() is None
    with pytest.raises(ValueError), within_budget(None):
        assert _DEADLINE.get() is None
        raise ValueError("not ours")

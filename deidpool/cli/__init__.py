"""The `deidpool` command: one Typer app dispatching to every package's commands. Command modules
import their heavy dependencies inside the commands; those that run a model call
`runtime.start_tensorflow` first."""

import os
import warnings

# Every process of the command (the server and its worker too) starts here: TensorFlow's C++ log
# lines (oneDNN notices, CPU feature hints, its DT_BOOL fallback logged as an error) are noise to
# the user, and the level is read once, when TensorFlow loads. Set it to 0 to see them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from deidpool.cli import (  # noqa: E402
    adversarial_commands,
    baseline_commands,  # noqa: F401  (registers train crf|svm|char-lstm on train_app)
    corpus_commands,
    demo_command,
    pseudonymize_command,
    stack_commands,  # noqa: F401  (registers client personalize on client_app)
    train_commands,
)
from deidpool.cli.client_commands import client_app, provider_app  # noqa: E402
from deidpool.cli.coordinator_commands import coordinator_app  # noqa: E402
from deidpool.cli.groups import command_group  # noqa: E402
from deidpool.cli.server_commands import server_app  # noqa: E402

app = command_group("Privacy-preserving pooling of de-identification training data.")
app.add_typer(corpus_commands.corpus_app, name="corpus")
app.command("evaluate")(corpus_commands.evaluate)
app.command("pseudonymize")(pseudonymize_command.pseudonymize)
train_commands.train_app.command("adversarial")(adversarial_commands.train_adversarial)
train_commands.train_app.command("dann")(adversarial_commands.train_dann)
app.add_typer(train_commands.train_app, name="train")
app.command("audit")(adversarial_commands.audit)
app.command("predict")(train_commands.predict)
app.add_typer(provider_app, name="provider")
app.add_typer(client_app, name="client")
app.command("demo")(demo_command.demo)
app.add_typer(server_app, name="server")
app.add_typer(coordinator_app, name="coordinator")


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"


warnings.formatwarning = _one_line_warning

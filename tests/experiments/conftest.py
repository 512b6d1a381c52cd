"""The experiment scripts import each other as top-level modules (they run as
`python experiments/<name>.py`), so their folder goes on the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))

"""An institution's identity on disk: its Ed25519 signing key pair and, beside it in
`institution.json`, the institution id that its contributions carry."""

from __future__ import annotations

import json
from pathlib import Path

from deidpool.contribution.identity import check_institution_id
from deidpool.representer.keys import SIGNING, KeyFileError, KeyPair, create_key_pair

NAME = "institution"


def create_institution_keys(directory: str | Path, institution: str, passphrase: str | None = None) -> KeyPair:
    """institution.key / institution.pub / institution.json in `directory`."""
    check_institution_id(institution)
    pair = create_key_pair(directory, NAME, SIGNING, passphrase)
    (Path(directory) / f"{NAME}.json").write_text(json.dumps({"institution": institution}) + "\n")
    return pair


def institution_id(key_path: str | Path) -> str:
    """The id in the `.json` file beside the institution's key (or public key) file."""
    path = Path(key_path).with_suffix(".json")
    try:
        return json.loads(path.read_text())["institution"]
    except (OSError, ValueError, KeyError, TypeError):
        raise KeyFileError(f"cannot read the institution id from {path} (written by `deidpool client keygen` "
                           "beside the key)") from None

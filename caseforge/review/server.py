"""The Label Studio server caseforge documents (`make review-server`) and its tests start: Label Studio from its own
virtual environment (.venv-review, requirements-review.lock), headless on SQLite on loopback, signup closed, no
version check, no analytics or error reports sent out, the API token preset (legacy tokens enabled).

    python -m caseforge.review.server [--data-dir DIR] [--port P]

reads the first user's name, password and token from CASEFORGE_REVIEW_USER, CASEFORGE_REVIEW_PASSWORD and
CASEFORGE_REVIEW_TOKEN (none of them is printed)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from caseforge.settings import PROJECT_ROOT, read_settings

REVIEW_VENV = PROJECT_ROOT / ".venv-review"

# Label Studio's own settings (label_studio/core/settings/base.py, label_studio.py)
QUIET_ENVIRONMENT = {
    "DISABLE_SIGNUP_WITHOUT_LINK": "true",          # nobody signs up without an invitation link
    "LATEST_VERSION_CHECK": "false",                # no request to pypi.org at start-up
    "COLLECT_ANALYTICS": "false",
    "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "",    # no error reports sent out
    "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",  # the preset token works as `Authorization: Token ...`
}


def label_studio(venv: Path = REVIEW_VENV) -> Path:
    program = venv / "bin" / "label-studio"
    if not program.exists():
        raise FileNotFoundError(f"{program} is missing: run `make setup-review` (Label Studio's own environment)")
    return program


def server_environment(data_dir: Path, base: dict | None = None) -> dict[str, str]:
    environment = dict(os.environ if base is None else base)
    environment.update(QUIET_ENVIRONMENT)
    environment["LABEL_STUDIO_BASE_DATA_DIR"] = str(data_dir)
    return environment


def start_command(data_dir: Path, port: int, username: str, password: str, token: str,
                  venv: Path = REVIEW_VENV) -> list[str]:
    """`label-studio start` on loopback with its first user and that user's token."""
    return [str(label_studio(venv)), "start", "--no-browser", "--data-dir", str(data_dir),
            "--database", str(data_dir / "label_studio.sqlite3"), "--internal-host", "127.0.0.1", "--port", str(port),
            "--username", username, "--password", password, "--user-token", token, "--enable-legacy-api-token"]


def user_command(data_dir: Path, username: str, password: str, token: str, venv: Path = REVIEW_VENV) -> list[str]:
    """`label-studio init` making one more user (an annotator) with a preset token, against the same database."""
    return [str(label_studio(venv)), "init", "--username", username, "--password", password, "--user-token", token,
            "--data-dir", str(data_dir), "--database", str(data_dir / "label_studio.sqlite3")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m caseforge.review.server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="data/label-studio", help="its database and files (default %(default)s)")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    settings = read_settings()
    first_user = {"CASEFORGE_REVIEW_USER": settings.review_user,
                  "CASEFORGE_REVIEW_PASSWORD": settings.review_password.get_secret_value(),
                  "CASEFORGE_REVIEW_TOKEN": settings.review_token.get_secret_value()}
    missing = [name for name, value in first_user.items() if not value]
    if missing:
        print(f"caseforge: set {', '.join(missing)} (the first user's e-mail, password and API token)", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        command = start_command(data_dir, args.port, *first_user.values())
    except FileNotFoundError as exc:
        print(f"caseforge: {exc}", file=sys.stderr)
        return 2
    os.execve(command[0], command, server_environment(data_dir))


if __name__ == "__main__":
    sys.exit(main())

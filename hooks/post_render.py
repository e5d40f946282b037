"""Optional post-render task: prepare a freshly rendered service for its first run.

Run by ``copier copy --trust`` (skipped with ``--skip-tasks``; the service is
complete without it). In the rendered folder it:

- makes the folder a git repository, unless it already is one;
- runs ``uv sync`` to create the environment and ``uv.lock``, when uv is installed
  (CI installs with ``uv sync --locked``: commit ``uv.lock`` with the service).

A step that cannot run is reported and skipped; it never fails the render.
"""

import shutil
import subprocess
import sys
from pathlib import Path


def run(command: list[str], folder: Path) -> bool:
    """Run ``command`` in ``folder``; report a failure instead of raising."""
    try:
        subprocess.run(command, cwd=folder, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"post-render: `{' '.join(command)}` failed ({exc}); skipped", file=sys.stderr)
        return False
    return True


def is_git_work_tree(folder: Path) -> bool:
    """Whether ``folder`` is inside a git work tree (true when git is missing: nothing to do)."""
    if shutil.which("git") is None:
        return True
    probe = ["git", "rev-parse", "--is-inside-work-tree"]
    return subprocess.run(probe, cwd=folder, capture_output=True, check=False).returncode == 0


def main() -> int:
    folder = Path.cwd()
    if not is_git_work_tree(folder):
        run(["git", "init", "--quiet"], folder)
    if shutil.which("uv"):
        run(["uv", "sync", "--quiet"], folder)
    else:
        print("post-render: uv is not installed; run `pip install uv`, then `uv sync`.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Update migration: name every file an update left with conflicts, and what to do next.

Run by ``copier update`` after the update and the other migrations (the last
``_migrations`` entry of copier.yml), in the service's folder. Copier marks a file
where the team's edits and the template's changes touch the same lines with conflict
markers (and, in git, as unmerged), and says nothing; the other migrations may leave
markers too. This prints, on standard error, each file that holds a marker line, how
to resolve it, and how to undo the whole update. It never fails the update.
"""

import subprocess
import sys

MARKERS = r"^(<<<<<<<|>>>>>>>)( |$)"


def conflicted_files() -> list[str]:
    """The files of the work tree (tracked or new, not ignored) holding a marker line."""
    found = subprocess.run(
        ["git", "grep", "--untracked", "-lE", MARKERS, "--", "."],
        capture_output=True,
        text=True,
        check=False,
    )
    return sorted(found.stdout.splitlines()) if found.returncode == 0 else []


def report(files: list[str]) -> str:
    """What the update says of the conflicts in ``files``."""
    listed = "".join(f"  {name}\n" for name in files)
    return (
        f"\ncopier update left conflicts in {len(files)} file(s), where your edits and the "
        f"template's changes touch the same lines:\n{listed}"
        "In each, keep the lines you want between `<<<<<<< before updating` and "
        "`>>>>>>> after updating`, delete the marker lines, and `git add` the file. Until "
        "then scripts/lint, the pre-commit hook and CI refuse the service. To undo the "
        "whole update instead: git reset --hard && git clean -fd "
        '(docs/updating.md, "Conflicts").\n'
    )


def main() -> int:
    files = conflicted_files()
    if files:
        print(report(files), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

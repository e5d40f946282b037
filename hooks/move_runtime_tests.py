"""Update migration: a team's edits to the runtime's tests follow them to tests/runtime/.

Run by ``copier update`` after the update (a ``_migrations`` entry of copier.yml), in
the service's folder, with the new release's template clone and the old release:

    move_runtime_tests.py TEMPLATE_CLONE OLD_RELEASE

Releases before the move rendered the runtime's tests in ``tests/``. The update
removes every file the old release rendered and the new one does not, edited or
not, so an edited ``tests/test_x.py`` would be lost. For each such file that the
update removed and the team had edited (its committed text differs from the old
release's), this merges the team's edits three ways into ``tests/runtime/test_x.py``:
base the old release's file, ours the committed one, theirs the new release's.
Where both changed the same lines, the file shows a conflict, marked as ``copier
update`` marks its own. An edited file the new release no longer has is put back
where it was. Unedited files, and services already on the new layout, need nothing.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path("tests")
LABELS = ["-L", "before updating", "-L", "last update", "-L", "after updating"]


def git(*arguments: str, cwd: Path | None = None) -> bytes | None:
    """The output of ``git arguments``, or None if it fails."""
    done = subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


def old_tests(template: Path, release: str) -> dict[str, str]:
    """The plain files the old release rendered in tests/: rendered name to template path."""
    listed = git("ls-tree", "--name-only", f"{release}:template/tests/", cwd=template) or b""
    found = {}
    for name in listed.decode().splitlines():
        rendered = re.sub(r"\{%.*?%\}", "", name)
        if rendered and not rendered.endswith(".jinja"):
            found[rendered] = f"template/tests/{name}"
    return found


def merge(ours: bytes, base: bytes, target: Path) -> bool:
    """Merge ``ours`` into ``target`` (the new release's file) over ``base``; True if clean."""
    with tempfile.TemporaryDirectory() as scratch:
        mine, old = Path(scratch, "ours"), Path(scratch, "base")
        mine.write_bytes(ours)
        old.write_bytes(base)
        merged = subprocess.run(
            ["git", "merge-file", "-p", *LABELS, str(mine), str(old), str(target)],
            capture_output=True,
            check=False,
        )
    if merged.returncode < 0 or merged.returncode > 127:
        raise SystemExit(f"git merge-file failed on {target}: {merged.stderr.decode()}")
    target.write_bytes(merged.stdout)
    return merged.returncode == 0


def follow(path: Path, source: str, moved: Path, template: Path, release: str) -> None:
    """Carry the team's edits of ``path``, which the update removed, into ``moved``.

    ``source`` is the file's path in the template at ``release``; a file the service
    never committed, the update did not remove, or the team never edited needs nothing.
    """
    kept = git("show", f"HEAD:./{path}")
    if kept is None or path.exists():
        return  # not committed in the service, or not removed by this update
    base = git("show", f"{release}:{source}", cwd=template)
    if kept == base:
        return  # never edited: the new release's copy replaces it
    if base is None or not moved.is_file():
        path.write_bytes(kept)
        outcome = "edited, kept where it was"
    elif merge(kept, base, moved):
        outcome = f"your edits moved into {moved}"
    else:
        outcome = f"your edits moved into {moved}: resolve its conflicts"
    print(f"{path}: {outcome}", file=sys.stderr)


def main(template: Path, release: str) -> int:
    for name, source in sorted(old_tests(template, release).items()):
        follow(TESTS / name, source, TESTS / "runtime" / name, template, release)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), sys.argv[2]))

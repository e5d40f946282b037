"""Update migrations: the team's ``uv.lock`` and ``.venv`` through an update, then the lock
brought to the merged ``pyproject.toml``, and no further.

Copier runs a template's tasks before it merges the team's edits back, so a ``uv sync``
task would lock the template's bare ``pyproject.toml`` and drop every dependency the
team added: the post-render task runs on ``copier copy`` only. And at the end of an
update Copier deletes from the service every file that its render of the old release
had and its render of the new one has not: a release whose task ran ``uv sync`` left a
lock and an environment in that render, so Copier would delete the team's. So:

- ``python relock.py set-aside``, before the merge (a ``before`` migration), moves the
  service's ``uv.lock`` and ``.venv`` into ``.copier-update-kept/``, a folder of the
  service that no render has, out of Copier's reach (the ``.venv`` stays where it is
  when Copier itself runs from it), and says so;
- ``python relock.py restore SKIP_TASKS``, after it (the first ``after`` migration),
  moves them back, then runs ``uv sync`` (``uv lock`` when ``SKIP_TASKS`` is ``True``:
  the update was told to install nothing). uv keeps every version the lock holds that
  the merged ``pyproject.toml`` still allows, so the lock moves only where the update's
  own changes to ``pyproject.toml`` require it. It locks nothing when ``pyproject.toml``
  holds conflict markers (it cannot be read until they are resolved), when uv is
  missing, or under ``--skip-tasks`` when the service has no lock: each is said, with
  what to run. What an interrupted update left aside comes back at the next set-aside.

It prints what moved in the lock, and never fails the update.
"""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

KEPT = ("uv.lock", ".venv")  # what a team's uv writes, and no template renders
ASIDE = ".copier-update-kept"  # where they wait during an update
MARKER = re.compile(r"^(<<<<<<<|>>>>>>>)( |$)", re.MULTILINE)
SHOWN = 8  # the packages a change names before it says "and N more"


def kept(folder: Path) -> list[str]:
    """What of KEPT to set aside: not the environment Copier itself runs from."""
    running = Path(sys.prefix).resolve()
    chosen = []
    for name in KEPT:
        path = (folder / name).resolve()
        if path != running and path not in running.parents:
            chosen.append(name)
    return chosen


def set_aside(folder: Path) -> None:
    """Move the service's lock and environment out of Copier's reach, and say so."""
    place = folder / ASIDE
    if place.is_dir():  # what an interrupted update left aside, and the tree lacks: back
        for name in KEPT:
            if (place / name).exists() and not (folder / name).exists():
                (place / name).rename(folder / name)
        shutil.rmtree(place)
    moved = [name for name in kept(folder) if (folder / name).exists()]
    if not moved:
        return
    place.mkdir()
    for name in moved:
        (folder / name).rename(place / name)
    print(
        f"{' and '.join(moved)}: set aside in {ASIDE}/ while the update merges, back at its "
        "end (should it stop before, the next update brings them back)",
        file=sys.stderr,
    )


def restore(folder: Path) -> None:
    """Move them back, in place of anything the update wrote by their names."""
    place = folder / ASIDE
    if not place.is_dir():
        return
    for name in KEPT:
        if (place / name).exists():
            target = folder / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            (place / name).rename(target)
    shutil.rmtree(place, ignore_errors=True)


def locked_versions(lock: Path) -> dict[str, str]:
    """Each package ``lock`` pins, with its version (empty when there is no readable lock)."""
    try:
        packages = tomllib.loads(lock.read_text()).get("package", [])
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {entry["name"]: str(entry.get("version", "")) for entry in packages}


def moved(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What changed from ``before`` to ``after``, one entry a package, in a reader's words."""
    found = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        if was is None:
            found.append(f"{name} {now} added")
        elif now is None:
            found.append(f"{name} {was} removed")
        else:
            found.append(f"{name} {was} -> {now}")
    return found


def summary(before: dict[str, str], after: dict[str, str]) -> str:
    """One line on what moved in the lock."""
    if not before:
        return f"uv.lock: written, {len(after)} packages locked."
    changes = moved(before, after)
    if not changes:
        return "uv.lock: unchanged (the update changed no requirement it pins)."
    shown = ", ".join(changes[:SHOWN])
    more = f", and {len(changes) - SHOWN} more" if len(changes) > SHOWN else ""
    return (
        f"uv.lock: {shown}{more}, as the updated pyproject.toml requires; every other pin is kept."
    )


def relock(folder: Path, skip_tasks: bool) -> None:
    """Bring the lock (and, unless ``skip_tasks``, the environment) to pyproject.toml."""
    lock = folder / "uv.lock"
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file() and MARKER.search(pyproject.read_text(errors="replace")):
        print(
            "uv.lock: left as it was, since pyproject.toml has conflicts; once they are "
            "resolved, `uv sync` brings the lock and the environment to it.",
            file=sys.stderr,
        )
        return
    if skip_tasks and not lock.is_file():
        return  # no lock to keep, and nothing to install: the team's `uv sync` writes one
    if shutil.which("uv") is None:
        print("uv.lock: left as it was, since uv is not installed: install it, then `uv sync`.")
        return
    before = locked_versions(lock)
    command = ["uv", "lock", "--quiet"] if skip_tasks else ["uv", "sync", "--quiet"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(
            f"uv.lock: `{' '.join(command[:2])}` failed after the update, so the lock may not "
            f"match pyproject.toml; run `uv sync` to see why:\n{done.stderr.strip()[-2000:]}",
            file=sys.stderr,
        )
        return
    print(summary(before, locked_versions(lock)))


def main(argv: list[str]) -> int:
    folder = Path.cwd()
    if argv[1:2] == ["set-aside"]:
        set_aside(folder)
    elif argv[1:2] == ["restore"]:
        restore(folder)
        relock(folder, skip_tasks=argv[2:3] == ["True"])
    else:
        print("usage: relock.py set-aside | restore SKIP_TASKS", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

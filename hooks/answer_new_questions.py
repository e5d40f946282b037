"""Update migration: a service rendered before a question existed keeps its behaviour.

Run by ``copier update`` before the update (a ``_migrations`` entry of copier.yml), in
the service's folder, with the answers file's path:

    answer_new_questions.py ANSWERS_FILE

A new question's default is chosen for new services. A service rendered by a release
that did not ask it behaved in one fixed way, which this records as its answer, so the
update changes nothing the service's clients see:

- ``auth``: releases before the question served the ``x-demo-token`` header to the
  credential demo and authenticated nothing else: ``demo-header``.
- ``license``: releases before the question rendered no licence, which grants no one
  any right: ``LicenseRef-Proprietary``, so an update never grants rights silently
  (a LICENSE file the team wrote itself is kept as it is).

An answer already recorded, or given on the command line, is never changed.
"""

import re
import sys
from pathlib import Path

OLD_BEHAVIOUR = {"auth": "demo-header", "license": "LicenseRef-Proprietary"}


def main(answers_file: str) -> int:
    path = Path(answers_file)
    if not path.is_file():
        return 0
    text = path.read_text()
    missing = {
        question: answer
        for question, answer in OLD_BEHAVIOUR.items()
        if not re.search(rf"^{re.escape(question)}:", text, re.MULTILINE)
    }
    if missing:
        lines = "".join(f"{question}: {answer}\n" for question, answer in missing.items())
        path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

"""`python3 -m pmemlab` and the `pmemlab` command."""

import sys

from pmemlab.errors import PmemlabError


def run() -> int:
    """main(), or the one line that says what is missing when the controller cannot start
    (the package's parameter table, schema.json, unreadable: it is loaded when pmemlab.params is
    imported)."""
    try:
        from pmemlab.cli import main
    except PmemlabError as exc:
        print(exc.one_line(), file=sys.stderr)
        return exc.exit_code
    return main()


if __name__ == "__main__":
    sys.exit(run())

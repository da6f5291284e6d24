"""``python -m compoenv``: the ``compoenv`` command, where its script is not on the PATH."""

from compoenv.cli import main

if __name__ == "__main__":
    main(prog_name="compoenv")

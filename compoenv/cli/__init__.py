"""The ``compoenv`` command: one module per subcommand group, errors as one line each.

Subcommands: ``demo``, ``generate``, ``services``, ``scenarios``, ``doctor``, ``verify``,
``synthesize``, ``graph``, ``library``, ``sft``, ``export``, ``serve``, ``import``, ``lint``,
``eval``, ``report``. A usage error
or a bad input file ends with ``Error: ...`` and the fix, exit status 1 or 2, never a
traceback (``CompoenvGroup.invoke`` is the one place that translates them).
"""

from __future__ import annotations

import sys
from typing import Any

import click

__all__ = ["main"]


class CompoenvGroup(click.Group):
    """The command group; turns the library's input errors into one-line CLI errors."""

    def invoke(self, ctx: click.Context) -> Any:
        from compoenv.library import LibraryError
        from compoenv.registry import RegistryError
        from compoenv.task import TaskFileError
        from compoenv.trajectory import TrajectoryFileError
        from compoenv.worldmodel.spec import SpecError

        try:
            return super().invoke(ctx)
        except (TaskFileError, TrajectoryFileError, SpecError, LibraryError) as exc:
            raise click.ClickException(str(exc)) from None
        except RegistryError as exc:
            raise click.ClickException(str(exc.args[0] if exc.args else exc)) from None
        except OSError as exc:  # a file that cannot be read or written
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from None


@click.group(cls=CompoenvGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="compoenv")
def main() -> None:
    """compoenv: compositional tool-use environments for agent RL."""


def _register() -> None:
    from compoenv.cli.demo import demo
    from compoenv.cli.doctor import doctor
    from compoenv.cli.evaluate import evaluate_command
    from compoenv.cli.export import export
    from compoenv.cli.generate import generate
    from compoenv.cli.importing import import_
    from compoenv.cli.library import graph, library, services
    from compoenv.cli.lint import lint
    from compoenv.cli.report import report
    from compoenv.cli.scenarios import scenarios
    from compoenv.cli.serve import serve
    from compoenv.cli.sft import sft
    from compoenv.cli.synthesize import synthesize_command
    from compoenv.cli.verify import verify_command

    for command in (demo, generate, services, scenarios, graph, library, sft, export, import_,
                    doctor, lint, evaluate_command, report, serve, verify_command,
                    synthesize_command):
        main.add_command(command)


_register()

if __name__ == "__main__":
    sys.exit(main())

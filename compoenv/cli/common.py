"""What every ``compoenv`` subcommand shares: paths, libraries, world models, composer flags."""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

import click

__all__ = ["OutputPath", "output_option", "check_world_model", "composer_config", "require",
           "composer_options", "world_model_option", "library_option", "registry_factory"]


class OutputPath(click.Path):
    """A file the command will write: not a directory, in a directory that exists and is
    writable, checked before any work starts."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        path = Path(super().convert(value, param, ctx))
        if str(path) in ("-", os.devnull):
            return path
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            self.fail(f"{str(path)!r}: directory {str(parent)!r} does not exist; create it "
                      f"first (mkdir -p {parent})", param, ctx)
        if path.exists() and not os.access(path, os.W_OK):
            self.fail(f"{str(path)!r} exists and is not writable", param, ctx)
        if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
            self.fail(f"{str(path)!r}: directory {str(parent)!r} is not writable", param, ctx)
        # permissions are not all: a read-only file system, a link to nowhere, a file the
        # system refuses; opening it (without truncating) is what the command will do later
        existed = os.path.lexists(path)
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            link = (f" (a link to {os.readlink(path)!r})" if os.path.islink(path) else "")
            self.fail(f"{str(path)!r} cannot be written{link}: {exc.strerror or exc}",
                      param, ctx)
        if not existed:
            path.unlink(missing_ok=True)
        return path


def output_option(help: str, required: bool = True) -> Callable[[Any], Any]:
    return click.option("-o", "--output", required=required, type=OutputPath(), help=help)


def library_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--library DIR`` (repeatable): the services of these libraries join the built-in ones
    for the command (and the processes it starts), as with ``COMPOENV_LIBRARY``."""
    func = click.option(
        "--trust-code", is_flag=True, expose_value=False, is_eager=True, callback=_trust_code,
        help="Import the Python modules of the --library folders (that runs their code); "
             "without it a library that holds one is refused. Also: COMPOENV_TRUST_CODE=1.")(
        func)
    return click.option(
        "--library", "libraries", multiple=True, expose_value=False, is_eager=True,
        type=click.Path(exists=True, path_type=Path), callback=_use_libraries,
        help="A library of services (a folder of spec files and Python modules, or one such "
             "file) to use besides the built-in one; repeat for several. Also: "
             "COMPOENV_LIBRARY=DIR[:DIR...].")(func)


def _trust_code(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """Trust the libraries' Python modules until the command ends."""
    from compoenv.library import trusting_code

    if value:
        ctx.with_resource(trusting_code())
    return value


def _use_libraries(ctx: click.Context, param: click.Parameter,
                   paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """Select the libraries until the command ends, and open them now: a library that cannot
    be read is a usage error naming it, before any work starts."""
    from compoenv.library import LibraryError, UntrustedCode
    from compoenv.registry import Registry, RegistryError, using_libraries
    from compoenv.worldmodel.spec import SpecError

    if not paths:
        return paths
    try:
        Registry.default(paths)  # the registry the command will get, opened and kept
    except UntrustedCode:
        pass  # --trust-code may follow on the command line; else the command says so
    except (LibraryError, SpecError, RegistryError) as exc:
        raise click.BadParameter(str(exc.args[0] if exc.args else exc),
                                 ctx, param) from None
    ctx.with_resource(using_libraries(paths))  # undone when the command ends
    return paths


def registry_factory() -> Callable[[], Any] | None:
    """A picklable builder of this command's registry (the libraries ``--library`` and
    ``COMPOENV_LIBRARY`` select) for worker processes and Ray actors, or None when there are
    no libraries (the workers' default registry is the same)."""
    from compoenv.registry import Registry, library_paths

    paths = tuple(str(p) for p in library_paths())
    return functools.partial(Registry.default, paths) if paths else None


def world_model_option() -> Callable[[Any], Any]:
    return click.option("--world-model", default=None, envvar="COMPOENV_WORLD_MODEL",
                        help="Who answers spec-only tools: offline (default), endpoint, "
                             "endpoint:<base_url>, transformers:<path>.")


def composer_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The composer's flags, the same in every command that composes tasks."""
    for option in reversed((
        click.option("--seed", default=0, show_default=True, help="Generation seed."),
        click.option("--min-hops", type=click.IntRange(min=1), default=2,
                     help="Free walks only (--scenarios none): fewest tool calls in a "
                          "solution (2 if not given)."),
        click.option("--max-hops", type=click.IntRange(min=1), default=4,
                     help="Free walks only (--scenarios none): most tool calls in a "
                          "solution (4 if not given)."),
        click.option("--min-services", type=click.IntRange(min=1), default=2,
                     show_default=True, help="Fewest services a task touches."),
        click.option("--motifs", default=None,
                     help="Comma-separated motifs tasks may use (default: all)."),
        click.option("--distractors", type=click.IntRange(min=0), default=10,
                     show_default=True,
                     help="Neighbouring services the task does not need, recorded per task "
                          "(listed beside its own in gateway mode)."),
        click.option("--scenarios", default="all", show_default=True,
                     help="Which tasks: jobs of these scenarios, up to --max-calls tool calls "
                          "('all', or comma-separated names, see `compoenv scenarios`; 'all' is "
                          "also gym.make('CompoWorld-v0')'s default), or 'none': free random "
                          "walks of --min-hops to --max-hops calls."),
        click.option("--services", multiple=True, metavar="NAMES",
                     help="Only these services (comma-separated or repeated): scenario jobs "
                          "whose services all lie in them, walks and distractors inside them."),
        click.option("--require", multiple=True, metavar="NAMES",
                     help="Services every task uses (comma-separated or repeated): jobs of the "
                          "scenarios that use them all, or free walks that reach them."),
        click.option("--domains", default=None, metavar="NAMES",
                     help="Scenario jobs of these domains only (comma-separated, any case; "
                          "see `compoenv scenarios`)."),
        click.option("--difficulty", default=None, metavar="MIX",
                     help="Shares of difficulty levels, e.g. easy=0.2,medium=0.4,hard=0.4 "
                          "(scenario tasks; generate also holds the set to these shares)."),
        click.option("--max-calls", type=click.IntRange(min=2), default=40, show_default=True,
                     help="Scenario jobs only: most tool calls in a task."),
        click.option("--guidance", default="goal", show_default=True, metavar="LEVEL",
                     help="How much of the plan a scenario task's request gives: 'goal' (what "
                          "to achieve, the facts, house rules and what to report), 'hints' "
                          "(and a lookup or two), 'steps' (every call in order), or "
                          "mix=goal=0.8,hints=0.1,steps=0.1. Free walks are told as steps."),
        world_model_option(),
    )):
        func = option(func)
    return func


def check_world_model(spec: str | None) -> None:
    """Fail early, as a usage error, on a world model that cannot be built."""
    if spec in (None, "", "offline"):
        return
    from compoenv.worldmodel.config import world_model_from

    try:
        world_model_from(spec)
    except (ValueError, ImportError) as exc:
        raise click.BadParameter(str(exc), param_hint="'--world-model'") from None


def composer_config(**flags: Any) -> Any:
    """A ComposerConfig from CLI flags (a bad combination is a usage error naming the flags)."""
    from compoenv.compose import ComposerConfig

    check_world_model(flags.get("world_model"))
    motifs = flags.pop("motifs", None)
    if motifs is not None:
        flags["motifs"] = tuple(m.strip() for m in motifs.split(",") if m.strip())
    for name in ("services", "require", "domains"):  # NAMES, comma-separated or repeated
        flags[name] = _names(flags.get(name), name) or (None if name == "services" else ())
    text = flags.pop("scenarios", "none")
    flags["scenarios"] = scenario_names(text, flags.get("services"))
    # every scenario: the declared ones and jobs derived for the services they leave out
    flags["derive"] = (text or "").strip() == "all"
    _flags_apply(bool(flags["scenarios"]) or flags["derive"])
    mix = difficulty_mix(flags.pop("difficulty", None))
    if mix is not None:
        flags["difficulty"] = mix.levels()
    guidance = flags.pop("guidance", None)
    if guidance is not None:
        from compoenv.compose.config import parse_guidance

        try:
            flags["guidance"] = parse_guidance(guidance)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--guidance'") from None
    known = {f.name for f in fields(ComposerConfig)}
    try:
        config = ComposerConfig(**{k: v for k, v in flags.items() if k in known})
    except ValueError as exc:
        message = str(exc)
        for name in ("min_hops", "max_hops", "min_services", "max_calls", "domains"):
            message = message.replace(name, "--" + name.replace("_", "-"))
        raise click.UsageError(message.replace("not in services", "not in --services")
                               .replace("(no scenarios)", "(--scenarios none)")) from None
    if config.services or config.require or config.domains:  # what the jobs are, up front
        from compoenv.compose.generator import composer_jobs
        from compoenv.registry import Registry
        from compoenv.scenarios import ScenarioError

        try:
            jobs = composer_jobs(Registry.default(), config)
        except ScenarioError as exc:
            raise click.UsageError(str(exc).replace("(scenarios 'none')", "(--scenarios none)")
                                   ) from None
        if not jobs and (config.scenarios or config.derive):
            raise click.UsageError("no scenario job fits --services; add --scenarios none for "
                                   "free walks over them")
    return config


def _names(values: Any, flag: str) -> tuple[str, ...]:
    """The names of a NAMES flag (comma-separated, repeatable); for --services and --require,
    each a service of the registry (else a usage error with "did you mean")."""
    values = (values,) if isinstance(values, str) else values or ()
    names = tuple(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))
    if flag != "domains":
        from compoenv.registry import Registry, RegistryError

        for name in names:
            try:
                Registry.default().get(name)
            except RegistryError as exc:
                raise click.BadParameter(str(exc.args[0] if exc.args else exc),
                                         param_hint=f"'--{flag}'") from None
    return names


def _flags_apply(scenarios: bool) -> None:
    """A bound given on the command line that the chosen kind of task ignores is a usage
    error (free walks are bounded by --min-hops/--max-hops, scenario jobs by --max-calls)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    given = [name for name in ("min_hops", "max_hops", "max_calls")
             if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE]
    ignored = [n for n in given if (n != "max_calls") == scenarios]
    if ignored:
        flag = "--" + ignored[0].replace("_", "-")
        raise click.UsageError(
            f"{flag} bounds free walks, which --scenarios none composes; scenario jobs are "
            f"bounded by --max-calls" if scenarios else
            f"{flag} bounds scenario jobs; with --scenarios none tasks are free walks, "
            f"bounded by --min-hops/--max-hops")


def scenario_names(text: str | None, services: Any = None) -> tuple[str, ...]:
    """The scenarios ``--scenarios`` names ('all': every scenario the services allow)."""
    from compoenv.scenarios import ScenarioError, resolve

    try:
        return resolve(text or "none", services)
    except ScenarioError as exc:
        raise click.BadParameter(str(exc), param_hint="'--scenarios'") from None


def difficulty_mix(text: str | None) -> Any:
    """The DifficultyMix ``--difficulty`` gives, or None."""
    if text is None:
        return None
    from compoenv.compose.difficulty import DifficultyMix

    try:
        return DifficultyMix.parse(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--difficulty'") from None


def require(module: str, extra: str, what: str) -> Any:
    """Import ``module`` or stop with the extra to install (``what`` needs it)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise click.ClickException(f"{what} needs {module}: pip install 'compoenv[{extra}]'"
                                   ) from None

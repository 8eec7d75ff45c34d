"""Which PostgreSQL holds which ladder's rows: several primaries.

A ladder is routed to its own primary by ``LADDER_DATABASE_ROUTES=ladder=url,...`` or by a
``database`` key in its ``[ladders.<name>]`` table naming an environment variable that holds
the URL; every other ladder, and every dead letter (which may name no valid ladder), is on
the default primary (``DATABASE_URL``, or the embedded one). Each primary holds the whole
schema, so a ladder's rows, its event ids and its moderation actions are self-contained on
its primary: a batch commits each primary's part on its own (``worker.service.batch``).

Engines are made when first asked for, one per distinct URL (two ladders routed to one URL
share it), and disposed by ``dispose``. No message here repeats a URL: it may hold a password.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from sqlalchemy.engine import Engine

from worker.ladders import Config, ConfigError
from worker.settings import ROUTES, SettingsError, check_database_url, normalise_database_url
from worker.store.engines import make_engine


def resolve(given: Mapping[str, str], config: Config, env: Mapping[str, str]) -> dict[str, str]:
    """Every routed ladder's URL: ``given`` (LADDER_DATABASE_ROUTES, parsed) and the ladders
    whose table names a ``database`` variable, read from ``env``. Refused with one line: a
    ladder the configuration does not define, a variable that is unset or holds no
    postgresql:// URL, a ladder routed both ways to two databases."""
    routes = dict(given)
    for ladder in routes:
        if ladder not in config.ladders:
            raise SettingsError(
                f"{ROUTES} routes ladder {ladder!r}, which {config.path} does not define"
            )
    for name, ladder_config in config.ladders.items():
        variable = ladder_config.database
        if variable is None:
            continue
        url = env.get(variable, "")
        if not url:
            raise ConfigError(
                f"{config.path}: field ladders.{name}.database names {variable}, which is not set"
            )
        check_database_url(url, f"{variable} (ladders.{name}.database)")
        url = normalise_database_url(url)
        if routes.get(name, url) != url:
            raise SettingsError(
                f"ladder {name!r} is routed twice, to two databases: by {ROUTES} and by "
                f"ladders.{name}.database ({variable}) in {config.path}"
            )
        routes[name] = url
    return routes


class Databases:
    """The primaries of one process: ``for_ladder(name)`` is the engine that holds the
    ladder's rows; ``default`` the one of unrouted ladders and dead letters; ``all()`` each
    primary once, the default first. ``default_url`` is called only when the default is
    first needed (it may start the embedded PostgreSQL)."""

    def __init__(
        self,
        default_url: Callable[[], str],
        routes: Mapping[str, str],
        make: Callable[[str], Engine] = make_engine,
    ) -> None:
        self._default_url = default_url
        self.routes = dict(routes)
        self._make = make
        self._engines: dict[str, Engine] = {}

    @classmethod
    def of(cls, engine: Engine) -> Databases:
        """One primary, the caller's engine (the caller disposes of it)."""
        url = str(engine.url)
        return cls(lambda: url, {}, lambda _: engine)

    def _engine(self, url: str) -> Engine:
        engine = self._engines.get(url)
        if engine is None:
            engine = self._engines[url] = self._make(url)
        return engine

    @property
    def default(self) -> Engine:
        return self._engine(self._default_url())

    def url_for(self, ladder: str | None) -> str:
        routed = self.routes.get(ladder) if ladder is not None else None
        return routed if routed is not None else self._default_url()

    def for_ladder(self, ladder: str | None) -> Engine:
        """The engine of ``ladder``'s rows (the default for a ladder not routed, or None)."""
        routed = self.routes.get(ladder) if ladder is not None else None
        return self._engine(routed) if routed is not None else self.default

    def all(self) -> list[Engine]:
        """Every primary once, the default first (an operation over all ladders)."""
        urls = dict.fromkeys([self._default_url(), *self.routes.values()])
        return [self._engine(url) for url in urls]

    def grouped(self, ladders: Iterable[str]) -> list[tuple[Engine, list[str]]]:
        """``ladders`` by the primary that holds them, in the order first named; one group
        (every ladder) when nothing is routed."""
        groups: dict[str, list[str]] = {}
        for ladder in ladders:
            groups.setdefault(self.url_for(ladder), []).append(ladder)
        return [(self._engine(url), names) for url, names in groups.items()]

    def dispose(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()


def as_databases(given: Engine | Databases) -> Databases:
    """``given`` as primaries: an engine is the one primary of every ladder."""
    return given if isinstance(given, Databases) else Databases.of(given)

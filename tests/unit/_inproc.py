"""In-process serve-reference servers (fake engine) on a free loopback port, for tests over real HTTP."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

from golden_al.servers.reference_server import FaultPlan, ReferenceServer, ServeConfig
from golden_al.servers.served_engine import FakeServedEngine


class InProcessServer:
    """``ReferenceServer`` over :class:`FakeServedEngine` (``k`` drafts), started at once; ``close()`` stops it."""

    def __init__(self, flavor: str, *, k: int = 3, step_delay_s: float = 0.0, faults: FaultPlan | None = None,
                 draft_lens: tuple[int, ...] | None = None, **cfg: object) -> None:
        self.log = io.StringIO()
        self.srv = ReferenceServer(FakeServedEngine(k, step_delay_s=step_delay_s, draft_lens=draft_lens),
                                   ServeConfig(flavor=flavor, port=0, faults=faults or FaultPlan(), **cfg),  # type: ignore[arg-type]
                                   self.log)
        self.srv.start()
        self.url = self.srv.url

    def close(self) -> None:
        self.srv.shutdown()

    def __enter__(self) -> InProcessServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def server_factory() -> Iterator[Callable[..., InProcessServer]]:
    """Body of a ``servers`` fixture: yields ``make(flavor, **kw)``; every server made is stopped after."""
    made: list[InProcessServer] = []

    def make(flavor: str, **kw: object) -> InProcessServer:
        s = InProcessServer(flavor, **kw)  # type: ignore[arg-type]
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()

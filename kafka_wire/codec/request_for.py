"""The type-level link from a request class to its response class.

Every generated request class has ``response_class()``, annotated with its own response class, so
a function taking ``RequestFor[R]`` can be typed to give back an ``R``::

    async def request(self, body: RequestFor[R]) -> R: ...

    response = await client.request(MetadataRequest())  # mypy: MetadataResponse
"""

from __future__ import annotations

from typing import Protocol, TypeVar

R_co = TypeVar("R_co", covariant=True)


class RequestFor(Protocol[R_co]):
    """A request whose answer decodes as ``R_co`` (every generated ``...Request`` class)."""

    def response_class(self) -> type[R_co]:
        """The class of this request's response."""
        ...

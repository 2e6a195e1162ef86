"""Developer tools run from the checkout (not shipped in the package): the docs generators
(``python -m tools.docs``), the compiled-flavour build backend and C guard, the two-flavour test
runner."""

"""The store's refusals: what its write services raise, and the API and the admin turn into answers."""

from __future__ import annotations


class ServiceValidationError(Exception):
    """Input that passed the serializer but not the store's rules; `errors` lists {index, field, message}."""

    def __init__(self, errors: list[dict]):
        super().__init__("; ".join(e["message"] for e in errors))
        self.errors = errors


class ConflictNotOpen(Exception):
    pass


class ConsentMissing(ServiceValidationError):
    """Facts of a category their subject has not consented to, in a project that refuses such writes."""


class ConsentNotFound(Exception):
    pass


class ProcedureNotActive(Exception):
    pass

"""Python client for hakimem, the memory service for LLM applications (sync `Client`, async `AsyncClient`)."""
from hakimem_client.client import MAX_BATCH, AsyncClient, Client, __version__
from hakimem_client.errors import (
    ConflictStateError,
    HakimemError,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    UnauthenticatedError,
    UnavailableError,
)
from hakimem_client.models import (
    ConflictMember,
    ConflictSet,
    ContextPacket,
    Decision,
    EraseResult,
    Event,
    Fact,
    IdentityBlock,
    NewEvent,
    NewFact,
    PacketEpisode,
    PacketFact,
    PacketIdentity,
    PacketProcedure,
    Page,
    Procedure,
    Replay,
    Trace,
)

__all__ = [
    "MAX_BATCH", "AsyncClient", "Client", "__version__",
    "ConflictStateError", "HakimemError", "InvalidRequestError", "NotFoundError", "PermissionDeniedError",
    "RateLimitedError", "ServerError", "UnauthenticatedError", "UnavailableError",
    "ConflictMember", "ConflictSet", "ContextPacket", "Decision", "EraseResult", "Event", "Fact", "IdentityBlock",
    "NewEvent", "NewFact", "PacketEpisode", "PacketFact", "PacketIdentity", "PacketProcedure", "Page", "Procedure",
    "Replay", "Trace",
]

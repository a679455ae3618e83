"""The ``ray`` executor's options (``executor: {name: ray, ...}`` in agent.yaml or the global config)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: Environment variable naming the cluster to join (Ray's own).
RAY_ADDRESS = "RAY_ADDRESS"


class RayOptions(BaseModel):
    """Where the Ray cluster is and how the work is spread over it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str | None = Field(
        default=None,
        description="The cluster to join: auto (one started with `ray start` on this machine), HOST:PORT or "
        "ray://HOST:PORT; default $RAY_ADDRESS, else a local Ray started for the run and stopped after it.",
    )
    num_cpus: int | None = Field(
        default=None, ge=1, le=4096, description="CPUs of the local Ray started for the run; default all of them."
    )
    object_store_mb: int | None = Field(
        default=None,
        ge=80,
        le=1_048_576,
        description="Shared memory (MB) of the local Ray's object store; default 256 (the files in flight, "
        "bounded by max_in_flight; more spills to disk). A cluster sets its own (`ray start --object-store-memory`).",
    )
    embed_actors: int = Field(
        default=1, ge=1, le=1024, description="Embedding actors (each loads the model once); default 1."
    )
    cpus_per_actor: float = Field(
        default=1.0,
        gt=0,
        le=256,
        description="CPUs each embedding actor reserves and embeds with; the rest read and chunk files.",
    )
    threads_per_actor: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Threads each actor embeds with on the CPU; default: on one machine its CPUs shared between "
        "the actors, on a cluster cpus_per_actor ($DECKHAND_THREADS, when set, wins).",
    )
    num_gpus_per_actor: float | None = Field(
        default=None,
        ge=0,
        le=64,
        description="GPUs each embedding actor reserves; default 1 where the cluster has a GPU per actor, else 0.",
    )
    max_in_flight: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Files read, chunked or embedded at once (bounds the memory the run holds); "
        "default 4 per CPU of the cluster.",
    )
    max_retries: int = Field(
        default=3, ge=0, le=100, description="Times a task or an actor whose worker process died is run again."
    )
    file_timeout_s: float = Field(
        default=3600.0, gt=0, description="Seconds one file may take from reading to stored before the run stops."
    )

""":class:`ToolConfigBase`, what every ``tools:`` entry has, on the ground floor for the registrar."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from deckhand.limits import MAX_RESULT_BUDGET, MIN_RESULT_BUDGET

if TYPE_CHECKING:
    from deckhand.config.tool_fields import SourceToolConfig

#: What a tool name may hold: the name agents call it by.
NAME_PATTERN = r"^[A-Za-z0-9_]+$"


class StrictModel(BaseModel):
    """A frozen model that refuses unknown keys (a misspelt setting is an error, never ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolConfigBase(StrictModel):
    """What every ``tools:`` entry has; a tool type's config model subclasses it with ``type: Literal["<name>"]``."""

    type: str = Field(description="Tool type: a name registered with register.tool.")
    name: str = Field(pattern=NAME_PATTERN, description="Tool name the agent calls (letters, digits, _).")
    description: str = ""
    result_budget: int | None = Field(
        default=None,
        ge=MIN_RESULT_BUDGET,
        le=MAX_RESULT_BUDGET,
        description="Most tokens (characters / 4) of one answer of this tool over MCP; what does not fit comes "
        "with a cursor to the next page. Default: the server's --result-budget, else 20000.",
    )

    def source_config(self) -> SourceToolConfig | None:
        """This entry when its tool ingests a source (a ``SourceToolConfig``), else None."""
        return None

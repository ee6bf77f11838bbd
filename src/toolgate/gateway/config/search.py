"""The gateway config's ``search`` block: whether ``search_tools`` is offered and how it
ranks. Its own module for its own rules (strict values; the hybrid mode's keys only with
that mode). Imports pydantic and the search strategy's default only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from toolgate.gateway.config.servers import STRICT
from toolgate.strategies.search import DEFAULT_FULL_RESULTS


class SearchConfig(BaseModel):
    """The ``search`` key: ``search_tools`` for every strategy, and how it ranks.

    ``true`` is ``{mode: "lexical"}``. ``embedder`` names the hybrid mode's model
    (``wordllama``, ``wordllama:DIM[:FOLDER]``, ``multilingual``, ``bert:FOLDER``, ``minilm`` or
    ``package.module:factory``);
    ``cache`` is a file for tool vectors, so a restart re-embeds nothing unchanged.
    """

    # strict like the rest of the block's numbers: "0.5", true or "yes" are no values
    # here (the library's SearchSettings refuses them too)
    model_config = {**STRICT, "strict": True}

    enabled: bool = True
    mode: Literal["lexical", "hybrid"] = "lexical"
    embedder: str | None = None
    cache: str | None = None
    weight: float | None = Field(None, ge=0.0, le=1.0)
    #: how many of the best matches ``search_tools`` gives in full (the rest in one line)
    full_results: int = Field(DEFAULT_FULL_RESULTS, ge=0, le=50)

    @field_validator("embedder", "cache", "weight")
    @classmethod
    def _hybrid_only(cls, v: Any, info: ValidationInfo) -> Any:
        # lexical search reads none of them: set without the mode, they would do nothing
        if v is not None and info.data.get("mode", "lexical") != "hybrid":
            raise ValueError(
                "set, but mode is 'lexical', which does not use it; "
                'add "mode": "hybrid" (or remove it)'
            )
        return v
